"""The transport of the erm3 client: requests over urllib, retries, answers with their cost and lineage."""

from __future__ import annotations

import json
import random
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from http.client import HTTPResponse
from typing import Any

from .errors import Erm3Error, error_from

__all__ = ["Answer", "BodySpec", "Lineage", "Operation"]


@dataclass(frozen=True)
class BodySpec:
    """A request body: its media type, whether it may be left out, its top-level fields (None: not an object)."""

    media_type: str
    required: bool
    fields: tuple[str, ...] | None


@dataclass(frozen=True)
class Operation:
    """One operation of the API, as the OpenAPI document declares it."""

    id: str
    method: str
    path: str
    status: int
    auth: tuple[str, ...]
    path_params: tuple[str, ...]
    query: tuple[str, ...]
    body: BodySpec | None
    response_types: tuple[str, ...]
    response_fields: tuple[str, ...]
    idempotent: bool
    cost_usd: float | None

    @property
    def tabular(self) -> bool:
        """True when the answer comes as Parquet or CSV on request (``format``)."""
        return "format" in self.query or (self.body is not None and "format" in (self.body.fields or ()))


@dataclass(frozen=True)
class Lineage:
    """Where the numbers come from: the lineage headers of a data answer (None where absent)."""

    model_version: str | None = None
    data_as_of: str | None = None
    factor_set_id: str | None = None
    universe_size: int | None = None
    #: ``synthetic; seed=42``, ``imported`` or ``vendor; sources=…``.
    dataset: str | None = None
    ticker_note: str | None = None


@dataclass
class Answer:
    """An answer: its ``data`` (parsed JSON, text or bytes) and what it cost, with lineage."""

    data: Any
    status: int
    headers: dict[str, str]
    request_id: str | None
    #: What the call cost (``_agent.cost_usd`` or the X-API-Cost-USD header); None for unmetered calls.
    cost_usd: float | None
    #: The balance after the call, when the server says it (``_agent.balance_usd`` or an X-Balance-* header).
    balance_usd: float | None
    #: HIT, MISS or BYPASS (metered calls).
    cache_status: str | None
    lineage: Lineage
    #: The ``_agent`` block of a metered JSON answer.
    agent: dict[str, Any] | None = field(default=None)

    def __getitem__(self, key: str) -> Any:
        return self.data[key]


def _num(v: Any) -> float | None:
    if v is None or v == "":
        return None
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def _lineage(h: Mapping[str, str]) -> Lineage:
    size = _num(h.get("x-universe-size"))
    return Lineage(
        model_version=h.get("x-risk-model-version"),
        data_as_of=h.get("x-data-as-of"),
        factor_set_id=h.get("x-factor-set-id"),
        universe_size=None if size is None else int(size),
        dataset=h.get("x-dataset"),
        ticker_note=h.get("x-ticker-note"),
    )


def answer_of(status: int, headers: dict[str, str], data: Any) -> Answer:
    """An :class:`Answer` of a success, reading cost and balance from ``_agent`` or the headers."""
    agent = data.get("_agent") if isinstance(data, dict) and isinstance(data.get("_agent"), dict) else None
    balance = _num(agent.get("balance_usd")) if agent else None
    if balance is None:
        balance = next((_num(v) for k, v in headers.items() if k.startswith("x-balance")), None)
    cost = agent.get("cost_usd") if agent else headers.get("x-api-cost-usd")
    return Answer(
        data=data,
        status=status,
        headers=headers,
        request_id=headers.get("x-request-id"),
        cost_usd=_num(cost),
        balance_usd=balance,
        cache_status=(agent or {}).get("cache_status") or headers.get("x-cache-status"),
        lineage=_lineage(headers),
        agent=agent,
    )


def retry_after_seconds(value: str | None) -> float | None:
    """The wait a Retry-After header asks for: delta-seconds or an HTTP date."""
    if not value or not value.strip():
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def _query_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)):
        return ",".join(_query_value(x) for x in v)
    return str(v)


def _no_redirect() -> urllib.request.OpenerDirector:
    class Keep(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    return urllib.request.build_opener(Keep)


class _Transport:
    """Sends requests for the generated methods; see :class:`erm3.Client` for the options."""

    OPERATIONS: Mapping[str, Operation]

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        token: str | Callable[[], str] | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
        max_retry_delay: float = 30.0,
        user_agent: str = "erm3-python",
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.token = token
        self.timeout = timeout
        self.max_retries = max_retries
        self.max_retry_delay = max_retry_delay
        self.user_agent = user_agent
        self._opener = _no_redirect()

    # -- request building -------------------------------------------------------------------

    def _operation(self, op_id: str) -> Operation:
        from ._operations import OPERATIONS

        try:
            return OPERATIONS[op_id]
        except KeyError:
            raise ValueError(f"no operation {op_id!r}") from None

    def _request(
        self,
        op: Operation,
        path: Mapping[str, Any],
        query: Mapping[str, Any],
        body: Any,
        headers: Mapping[str, str] | None,
    ) -> urllib.request.Request:
        url_path = op.path
        for name in op.path_params:
            if path.get(name) is None:
                raise TypeError(f"{op.id}: the path parameter {name} is required")
            url_path = url_path.replace("{" + name + "}", urllib.parse.quote(str(path[name]), safe=""))
        q = {k: _query_value(v) for k, v in query.items() if v is not None}
        url = self.base_url + url_path + ("?" + urllib.parse.urlencode(q) if q else "")
        h = {"User-Agent": self.user_agent, "Accept": "*/*"}
        credential = self.api_key or (self.token() if callable(self.token) else self.token)
        if credential:
            h["Authorization"] = f"Bearer {credential}"
        data: bytes | None = None
        if op.body is not None and isinstance(body, dict):
            body = {k: v for k, v in body.items() if v is not None}
            if not body and not op.body.required:
                body = None
        if op.body is not None and body is not None:
            if op.body.media_type == "application/x-www-form-urlencoded":
                data = urllib.parse.urlencode({k: _query_value(v) for k, v in body.items()}).encode()
            else:
                data = json.dumps(body).encode()
            h["Content-Type"] = op.body.media_type
        h.update(headers or {})
        return urllib.request.Request(url, data=data, headers=h, method=op.method)

    # -- sending, with retries --------------------------------------------------------------

    def _open(self, op: Operation, req: urllib.request.Request, timeout: float | None) -> HTTPResponse:
        """Opens the request, retrying a 429 or 503 answer (refused before any work: nothing charged)
        after its Retry-After or a backoff, and a connection failure only for an idempotent method
        (a POST whose connection failed may have been answered, and charged)."""
        attempt = 0
        while True:
            try:
                return self._opener.open(req, timeout=timeout or self.timeout)  # type: ignore[no-any-return]
            except urllib.error.HTTPError as e:
                if e.code in (429, 503) and attempt < self.max_retries:
                    wait = retry_after_seconds(e.headers.get("Retry-After"))
                    wait = _backoff(attempt) if wait is None else wait
                    if wait <= self.max_retry_delay:
                        e.read()
                        e.close()
                        time.sleep(wait)
                        attempt += 1
                        continue
                raise self._error(e) from None
            except TimeoutError:
                raise
            except (urllib.error.URLError, ConnectionError) as e:
                if isinstance(e, urllib.error.URLError) and isinstance(e.reason, TimeoutError):
                    raise
                if not op.idempotent or attempt >= self.max_retries:
                    raise
                time.sleep(_backoff(attempt))
                attempt += 1

    @staticmethod
    def _error(e: urllib.error.HTTPError) -> Erm3Error:
        text = e.read().decode("utf-8", "replace")
        try:
            problem = json.loads(text)
            if not isinstance(problem, dict):
                problem = {"detail": text[:500]}
        except ValueError:
            problem = {"detail": text[:500]}
        return error_from(
            e.code, problem, e.headers.get("x-request-id"), retry_after_seconds(e.headers.get("Retry-After"))
        )

    def _invoke(
        self,
        op_id: str,
        path: Mapping[str, Any],
        query: Mapping[str, Any],
        body: Any,
        *,
        timeout: float | None = None,
        headers: Mapping[str, str] | None = None,
        raw: bool = False,
    ) -> Answer:
        op = self._operation(op_id)
        with self._open(op, self._request(op, path, query, body, headers), timeout) as res:
            body = res.read()
            hs = {k.lower(): v for k, v in res.headers.items()}
            status = res.status
        ctype = hs.get("content-type", "")
        data: Any
        if raw:
            data = body
        elif not body:
            data = None
        elif "json" in ctype:
            data = json.loads(body)
        elif ctype.startswith("text/"):
            data = body.decode("utf-8", "replace")
        else:
            data = body
        return answer_of(status, hs, data)

    def _stream(
        self,
        op_id: str,
        path: Mapping[str, Any],
        query: Mapping[str, Any],
        body: Any,
        *,
        timeout: float | None = None,
        chunk_size: int = 1 << 16,
    ) -> tuple[Answer, Iterator[bytes]]:
        op = self._operation(op_id)
        res = self._open(op, self._request(op, path, query, body, None), timeout)
        hs = {k.lower(): v for k, v in res.headers.items()}

        def chunks() -> Iterator[bytes]:
            with res:
                while True:
                    b = res.read(chunk_size)
                    if not b:
                        return
                    yield b

        return answer_of(res.status, hs, None), chunks()


def _backoff(attempt: int) -> float:
    """About 0.5 s, 1 s, 2 s … capped at 8 s, with jitter."""
    return float(min(8.0, 0.5 * 2.0**attempt) * (0.5 + random.random() / 2))
