"""The erm3 client: every operation as a method, plus downloads, DataFrames and page iteration."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Literal

from . import frames
from ._core import Answer, Operation
from ._operations import OPERATIONS, Operations

if TYPE_CHECKING:
    import pandas as pd

_BY_METHOD: dict[str, str] = {}


def _method_names() -> dict[str, str]:
    if not _BY_METHOD:
        import re

        for op_id in OPERATIONS:
            name = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", op_id.replace("OAuth", "Oauth")))
            _BY_METHOD[name.lower()] = op_id
    return _BY_METHOD


class Client(Operations):
    """A client of one erm3 server.

    ``Client(base_url, api_key)`` or ``Client(base_url, token=oauth_access_token)`` (a string, or a
    function giving the current token, called before each request). ``timeout``
    (seconds) bounds each request; 429 and 503 answers are retried up to ``max_retries`` times
    after their Retry-After (when it is at most ``max_retry_delay`` seconds) or a backoff, and a
    failed connection is retried only for idempotent methods, so a POST that may have been charged
    is never sent twice. Every method returns an :class:`Answer`: ``data``, ``cost_usd``,
    ``balance_usd``, ``request_id``, ``cache_status`` and ``lineage``. Errors raise a subclass of
    :class:`erm3.errors.Erm3Error` chosen by the problem's ``code``.
    """

    def operation(self, name: str) -> Operation:
        """An operation by its id (``getTickerReturns``) or method name (``get_ticker_returns``)."""
        op_id = name if name in OPERATIONS else _method_names().get(name)
        if op_id is None:
            raise ValueError(f"no operation {name!r}")
        return OPERATIONS[op_id]

    def _parts(self, op: Operation, kwargs: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any], Any]:
        path: dict[str, Any] = {}
        query: dict[str, Any] = {}
        body: dict[str, Any] | None = {} if op.body is not None else None
        fields = op.body.fields or () if op.body is not None else ()
        for k, v in kwargs.items():
            wire = k[:-1] if k.endswith("_") else k
            if wire in op.path_params:
                path[wire] = v
            elif wire in fields and body is not None:
                body[wire] = v
            elif wire in op.query:
                query[wire] = v
            else:
                raise TypeError(f"{op.id} takes no parameter {k!r}")
        return path, query, body

    def call(self, name: str, *, timeout: float | None = None, **params: Any) -> Answer:
        """Calls an operation by id or method name with its parameters as keywords."""
        op = self.operation(name)
        path, query, body = self._parts(op, params)
        return self._invoke(op.id, path, query, body, timeout=timeout)

    def _tabular(self, op: Operation, fmt: str, params: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], Any]:
        if not op.tabular:
            raise ValueError(f"{op.id} has no Parquet or CSV form")
        path, query, body = self._parts(op, params)
        if "format" in op.query:
            query["format"] = fmt
        else:
            body["format"] = fmt
        return path, query, body

    def download(
        self, name: str, format: Literal["parquet", "csv"] = "parquet", *, timeout: float | None = None, **params: Any
    ) -> Answer:
        """The answer of a data operation as a Parquet or CSV file: ``data`` holds its bytes."""
        op = self.operation(name)
        path, query, body = self._tabular(op, format, params)
        return self._invoke(op.id, path, query, body, timeout=timeout, raw=True)

    def stream(
        self, name: str, format: Literal["parquet", "csv"] = "parquet", *, timeout: float | None = None, **params: Any
    ) -> tuple[Answer, Iterator[bytes]]:
        """Like :meth:`download`, the file as chunks of bytes (the answer's cost and lineage first)."""
        op = self.operation(name)
        path, query, body = self._tabular(op, format, params)
        return self._stream(op.id, path, query, body, timeout=timeout)

    def frame(self, name: str, *, timeout: float | None = None, **params: Any) -> pd.DataFrame:
        """The answer as a pandas DataFrame (``df.attrs["erm3"]`` holds its cost and lineage).

        Tabular operations come as Parquet when pyarrow is installed, as CSV otherwise; others
        from the rows of their JSON answer. Dates are datetime64; tickers (or dates) the index.
        """
        op = self.operation(name)
        fmt = ("parquet" if frames.has_pyarrow() else "csv") if op.tabular else "json"
        if fmt == "json":
            answer = self.call(op.id, timeout=timeout, **params)
            df = frames.json_frame(answer.data)
        else:
            answer = self.download(op.id, fmt, timeout=timeout, **params)  # type: ignore[arg-type]
            df = frames.read_table(answer.data, fmt)
        df.attrs["erm3"] = {
            "operation": op.id,
            "format": fmt,
            "cost_usd": answer.cost_usd,
            "balance_usd": answer.balance_usd,
            "request_id": answer.request_id,
            "lineage": answer.lineage,
        }
        return df

    def paginate(self, name: str, *, timeout: float | None = None, **params: Any) -> Iterator[Answer]:
        """Every page of a cursor-paged operation (``limit``/``cursor`` in, ``next_cursor`` out), in order."""
        op = self.operation(name)
        if "cursor" not in op.query and "cursor" not in ((op.body.fields or ()) if op.body else ()):
            raise ValueError(f"{op.id} is not paged")
        cursor: str | None = None
        while True:
            page = self.call(op.id, timeout=timeout, **params, **({"cursor": cursor} if cursor else {}))
            yield page
            cursor = page.data.get("next_cursor") if isinstance(page.data, dict) else None
            if not cursor:
                return

    def items(self, name: str, field: str, *, timeout: float | None = None, **params: Any) -> Iterator[Any]:
        """Every row of a paged list (``field`` of each page, e.g. ``tickers``), across all pages."""
        for page in self.paginate(name, timeout=timeout, **params):
            yield from page.data.get(field) or []
