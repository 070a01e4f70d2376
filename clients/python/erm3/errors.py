"""Exceptions of the erm3 client, one class per family of problem+json codes.

Every error answer of the API is an RFC 9457 problem document with a ``code`` (``/docs/errors``
lists them); :func:`error_from` turns one into the most specific class below. Catch
:class:`Erm3Error` for all of them.
"""

from __future__ import annotations

from typing import Any


class Erm3Error(Exception):
    """An error answer: ``status``, ``code``, the whole ``problem`` and the ``request_id``."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        problem: dict[str, Any] | None = None,
        request_id: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.problem: dict[str, Any] = problem or {}
        self.request_id = request_id
        #: Seconds the server asked to wait (Retry-After), when it said.
        self.retry_after = retry_after


class InvalidRequest(Erm3Error):
    """400: a parameter is missing or wrong (``problem["errors"]`` names the fields)."""


class AuthenticationError(Erm3Error):
    """401: no credential, or an invalid, revoked or expired key."""


class PaymentRequired(Erm3Error):
    """402: the balance is too low or the monthly spend cap is reached (``top_up_url`` says where to pay)."""


class Forbidden(Erm3Error):
    """403: the credential may not do this."""


class NotFound(Erm3Error):
    """404: no such ticker, date or resource (``suggestions`` may list close tickers)."""


class Conflict(Erm3Error):
    """409: the request conflicts with the current state."""


class RateLimited(Erm3Error):
    """429: too many requests, or too many at once; ``retry_after`` says when to try again."""


class Unavailable(Erm3Error):
    """503: the model is not ready or the service is unavailable for now."""


class UpstreamError(Erm3Error):
    """502 or 504: a provider erm3 depends on failed or timed out."""


class ServerError(Erm3Error):
    """500, or another status without a class of its own."""


_BY_STATUS: dict[int, type[Erm3Error]] = {
    400: InvalidRequest,
    401: AuthenticationError,
    402: PaymentRequired,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    429: RateLimited,
    502: UpstreamError,
    503: Unavailable,
    504: UpstreamError,
}


def error_class(code: str, status: int) -> type[Erm3Error]:
    """The class of a wire error ``code`` (by the status the API gives it), else of ``status``."""
    from ._operations import ERROR_CODES

    cls = _BY_STATUS.get(ERROR_CODES.get(code, status))
    if cls is None:
        cls = InvalidRequest if 400 <= status < 500 else ServerError
    return cls


def error_from(status: int, problem: dict[str, Any], request_id: str | None, retry_after: float | None) -> Erm3Error:
    """The exception of an error answer, from its parsed problem (or OAuth error) document."""
    code = str(problem.get("code") or problem.get("error") or f"HTTP_{status}")
    detail = problem.get("detail") or problem.get("error_description") or problem.get("title") or ""
    cls = error_class(code, status)
    return cls(status, code, f"{code}: {detail}", problem, request_id, retry_after)
