"""Tests of the erm3 client against a real server: ERM3_URL and ERM3_API_KEY (test/clients/python.test.ts starts one)."""

from __future__ import annotations

import http.server
import json
import math
import os
import threading
import time
import unittest
import urllib.request
from pathlib import Path
from typing import Any

import erm3
from erm3 import frames

URL = os.environ.get("ERM3_URL", "")
KEY = os.environ.get("ERM3_API_KEY", "")

try:
    import pandas as pd
except ImportError:  # pandas is optional
    pd = None  # type: ignore[assignment]


def served_surface() -> dict[str, dict[str, Any]]:
    """The test's own reading of the served OpenAPI document: each operation's names."""
    with urllib.request.urlopen(URL + "/openapi.json") as r:
        doc = json.load(r)
    schemas = doc["components"]["schemas"]

    def deref(s: dict[str, Any]) -> dict[str, Any]:
        return schemas[s["$ref"].split("/")[-1]] if "$ref" in s else s

    def props(s: dict[str, Any]) -> list[str]:
        r = deref(s)
        names = set(r.get("properties", {}))
        for alt in r.get("anyOf", []):
            names.update(props(alt))
        return sorted(names)

    out: dict[str, dict[str, Any]] = {}
    for path, methods in doc["paths"].items():
        for method, o in methods.items():
            ok = next(v for k, v in o["responses"].items() if k.startswith("2"))
            js = ok.get("content", {}).get("application/json")
            body = o.get("requestBody")
            bs = deref(next(iter(body["content"].values()))["schema"]) if body else None
            out[o["operationId"]] = {
                "method": method.upper(),
                "path": path,
                "path_params": [p["name"] for p in o["parameters"] if p["in"] == "path"],
                "query": [p["name"] for p in o["parameters"] if p["in"] == "query"],
                "body": (list(bs["properties"]) if "properties" in bs else None) if bs is not None else "none",
                "response_fields": props(js["schema"]) if js else [],
            }
    return out


class Proxy:
    """A loopback proxy in front of the server, scripted per request: 'pass', 'cut' (forward, then drop
    the connection before the answer) or a status it answers itself."""

    def __init__(self, script: list[Any]) -> None:
        self.script = list(script)
        self.seen: list[str] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _any(self) -> None:
                outer.seen.append(f"{self.command} {self.path}")
                action = outer.script.pop(0) if outer.script else "pass"
                if action == "hang":
                    time.sleep(2)
                    return
                if isinstance(action, int):
                    self.send_response(action)
                    self.send_header("Retry-After", "0")
                    self.send_header("Content-Type", "application/problem+json")
                    self.end_headers()
                    self.wfile.write(b'{"code": "RATE_LIMITED", "status": 429}')
                    return
                n = int(self.headers.get("Content-Length") or 0)
                data = self.rfile.read(n) if n else None
                req = urllib.request.Request(URL + self.path, data=data, method=self.command)
                for k, v in self.headers.items():
                    if k.lower() not in ("host", "content-length"):
                        req.add_header(k, v)
                try:
                    res = urllib.request.urlopen(req)
                except urllib.error.HTTPError as e:
                    res = e
                body = res.read()
                if action == "cut":
                    self.connection.close()
                    return
                self.send_response(res.status)
                for k, v in res.headers.items():
                    if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _any

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@unittest.skipUnless(URL and KEY, "ERM3_URL and ERM3_API_KEY name a running server")
class ClientTest(unittest.TestCase):
    def setUp(self) -> None:
        self.client = erm3.Client(URL, KEY, max_retries=2)

    def test_contract_every_operation_parameter_and_field(self) -> None:
        mine = {
            op.id: {
                "method": op.method,
                "path": op.path,
                "path_params": list(op.path_params),
                "query": list(op.query),
                "body": (list(op.body.fields) if op.body.fields is not None else None) if op.body else "none",
                "response_fields": list(op.response_fields),
            }
            for op in erm3.OPERATIONS.values()
        }
        self.assertEqual(mine, served_surface())

    def test_every_method_exists_and_says_its_price(self) -> None:
        for op in erm3.OPERATIONS.values():
            method = getattr(erm3.Client, self.client.operation(op.id).id and _snake(op.id))
            doc = method.__doc__ or ""
            self.assertIn(f"{op.method} {op.path}", doc)
            if op.cost_usd is not None:
                self.assertIn(f"Price: {op.cost_usd:g} USD", doc)
            else:
                self.assertIn("Free", doc)
        self.assertTrue((Path(erm3.__file__).parent / "py.typed").exists())

    def test_answer_cost_request_id_and_lineage(self) -> None:
        a = self.client.get_metrics(" googl ")
        self.assertEqual(a.data["ticker"], "GOOGL")
        self.assertEqual(a.cost_usd, 0.001)
        self.assertEqual(a.headers["x-api-cost-usd"], "0.001")
        self.assertEqual(a.request_id, a.agent["request_id"])
        self.assertTrue(a.request_id.startswith("req_"))
        self.assertEqual(a.lineage.data_as_of, a.data["_metadata"]["data_as_of"])
        self.assertEqual(a.lineage.universe_size, a.data["_metadata"]["universe_size"])
        again = self.client.call("getMetrics", ticker="GOOGL")
        self.assertEqual((again.cost_usd, again.cache_status), (0.0, "HIT"))

    def test_errors_map_from_problem_codes(self) -> None:
        with self.assertRaises(erm3.NotFound) as e:
            self.client.get_metrics("ZZZZ")
        self.assertEqual((e.exception.status, e.exception.code), (404, "TICKER_NOT_FOUND"))
        self.assertTrue(e.exception.request_id.startswith("req_"))
        with self.assertRaises(erm3.InvalidRequest) as bad:
            self.client.get_ticker_returns(ticker="AAPL", years=99)
        self.assertEqual(bad.exception.code, "INVALID_REQUEST")
        with self.assertRaises(erm3.AuthenticationError) as auth:
            erm3.Client(URL, "erm_agent_live_nope").get_balance()
        self.assertEqual(auth.exception.status, 401)
        self.assertEqual(erm3.errors.error_class("INSUFFICIENT_BALANCE", 402), erm3.PaymentRequired)
        self.assertEqual(erm3.errors.error_class("CONCURRENCY_LIMITED", 429), erm3.RateLimited)

    def test_pages_walk_every_row_once(self) -> None:
        rows = list(self.client.items("get_tickers", "tickers", limit=6))
        total = self.client.get_tickers(limit=1).data["total"]
        self.assertEqual(len(rows), total)
        self.assertEqual(len(set(rows)), total)

    def test_pages_with_the_cursor_in_the_body(self) -> None:
        pages = list(self.client.paginate("rankings_screen", metric="er_l3", window="21d", limit=10))
        tickers = [r["ticker"] for p in pages for r in p.data["rows"]]
        self.assertEqual(len(tickers), pages[0].data["total"])
        self.assertEqual(len(set(tickers)), len(tickers))
        self.assertGreater(len(pages), 1)
        # Every page is a call at its own price.
        self.assertEqual([p.cost_usd for p in pages], [0.02] * len(pages))

    def test_download_and_stream_are_the_same_file(self) -> None:
        whole = self.client.download("getTickerReturns", "csv", ticker="AAPL", years=1)
        meta, chunks = self.client.stream("getTickerReturns", "csv", ticker="AAPL", years=1)
        self.assertEqual(b"".join(chunks), whole.data)
        self.assertEqual(meta.lineage.dataset, whole.lineage.dataset)
        self.assertTrue(whole.data.startswith(b"date,"))
        parquet = self.client.download("get_ticker_returns", "parquet", ticker="AAPL", years=1)
        self.assertEqual((parquet.data[:4], parquet.data[-4:]), (b"PAR1", b"PAR1"))

    def test_429_and_503_are_retried(self) -> None:
        p = Proxy([429, 503, "pass"])
        try:
            a = erm3.Client(p.url, KEY).post_correlation(ticker="AAPL")
            self.assertEqual(a.status, 200)
            self.assertEqual(len(p.seen), 3)
        finally:
            p.close()

    def test_timeout_ends_a_call_and_a_token_function_is_asked(self) -> None:
        p = Proxy(["hang"])
        try:
            started = time.monotonic()
            with self.assertRaises(OSError):
                erm3.Client(p.url, KEY, timeout=0.3).get_health()
            self.assertLess(time.monotonic() - started, 1.5)
            self.assertEqual(len(p.seen), 1)
        finally:
            p.close()
        asked: list[int] = []
        c = erm3.Client(URL, token=lambda: asked.append(1) or KEY)
        self.assertGreater(c.get_balance().data["balance_usd"], 0)
        self.assertEqual(asked, [1])

    def test_first_requests_of_the_readme(self) -> None:
        import re

        text = (Path(__file__).parents[3] / "README.md").read_text()
        code = re.search(r"```python\n(.*?)```", text, re.S).group(1)  # type: ignore[union-attr]
        code = code.replace("http://127.0.0.1:8080", URL).replace("erm_agent_live_…", KEY)
        if pd is None:
            code = "\n".join(line for line in code.splitlines() if "c.frame(" not in line)
        scope: dict[str, Any] = {}
        exec(compile(code, "README.md", "exec"), scope)  # noqa: S102 - the README's own example
        self.assertEqual(scope["m"].data["ticker"], "AAPL")

    def test_a_post_that_may_have_been_charged_is_not_sent_again(self) -> None:
        p = Proxy(["cut", "pass"])
        try:
            with self.assertRaises(Exception) as e:
                erm3.Client(p.url, KEY).decompose(ticker="AMZN")
            self.assertNotIsInstance(e.exception, erm3.Erm3Error)
            self.assertEqual(p.seen, ["POST /decompose"])
        finally:
            p.close()
        q = Proxy(["cut", "pass"])
        try:
            self.assertEqual(erm3.Client(q.url, KEY).get_metrics("AMZN").status, 200)
            self.assertEqual(len(q.seen), 2)
        finally:
            q.close()


def _snake(op_id: str) -> str:
    import re

    s = op_id.replace("OAuth", "Oauth")
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", s)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s).lower()


@unittest.skipUnless(URL and KEY and pd is not None, "pandas is not installed")
class FrameTest(unittest.TestCase):
    def setUp(self) -> None:
        self.client = erm3.Client(URL, KEY)

    def test_history_as_a_frame_by_date(self) -> None:
        df = self.client.frame("getReturnsDecomposition", ticker="AAPL", years=1)
        self.assertTrue(pd.api.types.is_datetime64_any_dtype(df.index))
        self.assertEqual(df.index.name, "date")
        js = self.client.get_returns_decomposition(ticker="AAPL", years=1).data
        self.assertEqual([d.strftime("%Y-%m-%d") for d in df.index], js["dates"])
        # The cumulative L3 residual return, computed here from the JSON columns, is the frame's.
        direct = math.prod(1 + (r or 0.0) for r in js["l3_rr"]) - 1
        self.assertAlmostEqual(float((1 + df["l3_rr"].fillna(0)).prod() - 1), direct, places=12)
        self.assertEqual(df.attrs["erm3"]["lineage"].data_as_of, js["_metadata"]["data_as_of"])
        self.assertEqual(df.attrs["erm3"]["format"], "parquet" if frames.has_pyarrow() else "csv")
        # The same rows from the JSON answer, when read by columns.
        by_json = frames.json_frame(js)
        self.assertEqual(list(by_json["l3_rr"]), list(df["l3_rr"]))

    def test_cross_section_as_a_frame_by_ticker(self) -> None:
        df = self.client.frame("getUniverseMembers", universe="uni_mc_3000")
        self.assertEqual(df.index.name, "ticker")
        self.assertTrue(df.index.is_unique)
        self.assertGreater(len(df), 5)

    def test_csv_without_pyarrow(self) -> None:
        answer = self.client.download("getTickerReturns", "csv", ticker="MSFT", years=1)
        df = frames.read_table(answer.data, "csv")
        js = self.client.get_ticker_returns(ticker="MSFT", years=1).data["data"]
        self.assertEqual([d.strftime("%Y-%m-%d") for d in df.index], [r["date"] for r in js])
        self.assertEqual(list(df["returns_gross"]), [r["returns_gross"] for r in js])


if __name__ == "__main__":
    unittest.main()


@unittest.skipUnless(URL and KEY and pd is not None, "pandas is not installed")
class ReadmeTest(unittest.TestCase):
    def test_the_notebook_runs(self) -> None:
        import importlib.util
        import re

        text = (Path(__file__).parent.parent / "README.md").read_text()
        code = re.search(r"## A notebook\n\n```python\n(.*?)```", text, re.S).group(1)  # type: ignore[union-attr]
        if importlib.util.find_spec("matplotlib") is None:
            code = "\n".join(line for line in code.splitlines() if "needs matplotlib" not in line)
        else:
            import matplotlib

            matplotlib.use("Agg")
        scope: dict[str, Any] = {}
        exec(compile(code, "README.md", "exec"), scope)  # noqa: S102 - the README's own example
        self.assertEqual(list(scope["cumulative"].columns), ["AAPL", "MSFT", "NVDA"])
        self.assertEqual(scope["snap"].cost_usd, 0.25)
        self.assertEqual(scope["screen"].index.name, "ticker")
