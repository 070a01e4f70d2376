"""Answers as pandas DataFrames (pandas is optional: only these functions need it).

Tabular operations (history, batches, cross-sections) are read from Parquet when ``pyarrow`` is
installed and from CSV otherwise; date columns become ``datetime64``; the index is the tickers
when each row is one ticker, the dates when each row is one day, both otherwise.
"""

from __future__ import annotations

import importlib.util
import io
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

#: Columns holding dates (YYYY-MM-DD) in erm3's tables.
DATE_COLUMNS = ("date", "teo", "as_of", "period_end", "filed", "start", "end")


def has_pyarrow() -> bool:
    """True when pandas can read Parquet here (``pyarrow`` is installed)."""
    return importlib.util.find_spec("pyarrow") is not None


def _pandas() -> Any:
    try:
        import pandas
    except ImportError:  # pragma: no cover - depends on the installation
        raise ImportError("DataFrames need pandas: pip install pandas (or apt install python3-pandas)") from None
    return pandas


def tidy(df: pd.DataFrame) -> pd.DataFrame:
    """Date columns as datetime64, and tickers (or dates) as the index where natural."""
    pd = _pandas()
    for c in df.columns:
        if c in DATE_COLUMNS or str(c).endswith("_date"):
            df[c] = pd.to_datetime(df[c], errors="coerce")
    if "ticker" in df.columns and df["ticker"].is_unique:
        return df.set_index("ticker")
    if "date" in df.columns and df["date"].is_unique:
        return df.set_index("date")
    if "ticker" in df.columns and "date" in df.columns:
        return df.set_index(["date", "ticker"]).sort_index()
    return df


def read_table(data: bytes, fmt: str) -> pd.DataFrame:
    """A Parquet or CSV answer as a tidy DataFrame."""
    pd = _pandas()
    if fmt == "parquet":
        df = pd.read_parquet(io.BytesIO(data))
    else:
        df = pd.read_csv(io.BytesIO(data), float_precision="round_trip")
    return tidy(df)


def rows_of(data: Any) -> list[dict[str, Any]]:
    """The rows of a JSON answer: its ``data`` or ``rows`` list, else its longest list of objects;
    a series answered by columns (``dates`` and lists as long) as one row a day."""
    if isinstance(data, list):
        return data
    if not isinstance(data, dict):
        return []
    dates = data.get("dates")
    if isinstance(dates, list):
        cols = {k: v for k, v in data.items() if isinstance(v, list) and len(v) == len(dates) and k != "dates"}
        return [{"date": d, **{k: v[i] for k, v in cols.items()}} for i, d in enumerate(dates)]
    for name in ("data", "rows", "results", "members"):
        v = data.get(name)
        if isinstance(v, list) and all(isinstance(x, dict) for x in v):
            return v
    lists = [v for v in data.values() if isinstance(v, list) and v and all(isinstance(x, dict) for x in v)]
    if lists:
        return max(lists, key=len)
    # A list of tickers (``{"tickers": ["AAPL", …]}``): one row each.
    names = data.get("tickers")
    if isinstance(names, list) and all(isinstance(x, str) for x in names):
        return [{"ticker": t} for t in names]
    return []


def json_frame(data: Any) -> pd.DataFrame:
    """The rows of a JSON answer as a tidy DataFrame."""
    return tidy(_pandas().DataFrame(rows_of(data)))
