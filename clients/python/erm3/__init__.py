"""erm3: a Python client of the erm3 equity risk decomposition API.

>>> import erm3
>>> client = erm3.Client("http://127.0.0.1:8080", "erm_agent_live_…")
>>> m = client.get_metrics("AAPL")
>>> m.data["metrics"]["l3_res_er"], m.cost_usd, m.lineage.data_as_of

Standard library only; pandas (and pyarrow) optional, for :meth:`Client.frame`.
"""

from __future__ import annotations

from ._core import Answer, Lineage, Operation
from ._operations import ERROR_CODES, OPERATIONS
from .client import Client
from .errors import (
    AuthenticationError,
    Conflict,
    Erm3Error,
    Forbidden,
    InvalidRequest,
    NotFound,
    PaymentRequired,
    RateLimited,
    ServerError,
    Unavailable,
    UpstreamError,
)

__version__ = "0.1.0"

__all__ = [
    "ERROR_CODES",
    "OPERATIONS",
    "Answer",
    "AuthenticationError",
    "Client",
    "Conflict",
    "Erm3Error",
    "Forbidden",
    "InvalidRequest",
    "Lineage",
    "NotFound",
    "Operation",
    "PaymentRequired",
    "RateLimited",
    "ServerError",
    "Unavailable",
    "UpstreamError",
]
