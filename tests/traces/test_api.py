"""GET /api/traces and /api/traces/{traceId}, fed through POST /v1/traces as a sender would."""

import json
import time
from typing import Any

import pytest

from tests.fixtures.app import RunningApp
from tests.traces.builders import MS, SpanSpec, export_request, new_span_id, new_trace_id

PROTOBUF = {"content-type": "application/x-protobuf"}


async def export(app: RunningApp, *spans: SpanSpec, start_ns: int | None = None) -> None:
    body = export_request(*spans, start_ns=start_ns).SerializeToString()
    response = await app.client.post("/v1/traces", content=body, headers=PROTOBUF)
    assert response.status_code == 200, response.text


async def listed(app: RunningApp, query: str = "") -> list[dict[str, Any]]:
    response = await app.client.get(f"/api/traces?{query}")
    assert response.status_code == 200, response.text
    traces: list[dict[str, Any]] = response.json()["traces"]
    return traces


def request_trace(*, service: str = "shop", status: int = 0, duration_ms: float = 10.0):
    trace_id = new_trace_id()
    root = SpanSpec(
        "GET /cart",
        trace_id,
        scope="opentelemetry.instrumentation.asgi",
        service=service,
        duration_ms=duration_ms,
    )
    cache = SpanSpec(
        "cache.get",
        trace_id,
        parent=root.span_id,
        service=service,
        start_ms=2,
        duration_ms=duration_ms / 4,
        status=status,
    )
    return [root, cache]


class TestList:
    async def test_an_exported_trace_is_listed(self, api: RunningApp):
        spans = request_trace()
        await export(api, *spans)
        traces = await listed(api)
        assert traces == [
            {
                "traceId": spans[0].trace_id.hex(),
                "rootName": "GET /cart",
                "serviceName": "shop",
                "startTimeMs": traces[0]["startTimeMs"],
                "durationMs": 10.0,
                "spanCount": 2,
                "hasError": False,
                "status": "unset",
            }
        ]
        assert abs(traces[0]["startTimeMs"] - time.time() * 1000) < 60_000

    async def test_filters(self, api: RunningApp):
        slow_error = request_trace(service="shop", status=2, duration_ms=900)
        quick = request_trace(service="shop", status=1, duration_ms=3)
        other = request_trace(service="search", duration_ms=40)
        await export(api, *slow_error, *quick, *other)
        ids = {
            name: t[0].trace_id.hex()
            for name, t in (("slow_error", slow_error), ("quick", quick), ("other", other))
        }

        async def found(query: str) -> set[str]:
            return {t["traceId"] for t in await listed(api, query)}

        assert await found("service=shop") == {ids["slow_error"], ids["quick"]}
        assert await found("status=error") == {ids["slow_error"]}
        assert await found("status=ok") == {ids["quick"]}
        assert await found("status=unset") == {ids["other"]}
        assert await found("minDurationMs=40") == {ids["slow_error"], ids["other"]}
        assert len(await listed(api, "limit=1")) == 1

        # Each summary carries the status its filter finds it by, and so does the trace.
        statuses = {t["traceId"]: t["status"] for t in await listed(api)}
        assert statuses == {ids["slow_error"]: "error", ids["quick"]: "ok", ids["other"]: "unset"}
        for name, status in (("quick", "ok"), ("other", "unset")):
            one = (await api.client.get(f"/api/traces/{ids[name]}")).json()
            assert one["status"] == status

    async def test_time_window(self, api: RunningApp):
        now_ns = time.time_ns()
        yesterday = request_trace()
        await export(api, *yesterday, start_ns=now_ns - 86_400_000 * MS)
        now_ms = now_ns // MS
        assert await listed(api) == []  # the last hour by default
        window = f"from={now_ms - 90_000_000}&to={now_ms - 80_000_000}"
        assert [t["traceId"] for t in await listed(api, window)] == [yesterday[0].trace_id.hex()]

    @pytest.mark.parametrize(
        "query",
        [
            "limit=1001",
            "limit=0",
            "status=failed",
            "minDurationMs=-1",
            "minDurationMs=5.6e253",  # past any trace, and past the int64 it is compared in
            "from=-5",
        ],
    )
    async def test_bad_queries_are_422(self, api: RunningApp, query: str):
        response = await api.client.get(f"/api/traces?{query}")
        assert response.status_code == 422, response.text


class TestOne:
    async def test_span_tree(self, api: RunningApp):
        spans = request_trace(status=2)
        spans[1].events = [("cache.miss", 3.0, {"key": "cart:42"})]
        await export(api, *spans)
        response = await api.client.get(f"/api/traces/{spans[0].trace_id.hex()}")
        assert response.status_code == 200
        trace = response.json()
        assert trace["hasError"] is True
        assert [(s["name"], s["depth"], s["statusCode"]) for s in trace["spans"]] == [
            ("GET /cart", 0, "unset"),
            ("cache.get", 1, "error"),
        ]
        child = trace["spans"][1]
        assert child["parentSpanId"] == spans[0].span_id.hex()
        assert child["events"][0]["name"] == "cache.miss"
        assert child["events"][0]["attributes"] == {"key": "cart:42"}
        assert child["startTimeUnixNano"].isdigit()  # int64 as a string, like OTLP JSON

    async def test_unknown_trace_is_404(self, api: RunningApp):
        response = await api.client.get(f"/api/traces/{'ab' * 16}")
        assert response.status_code == 404
        assert response.json()["message"] == f"No stored trace has the id {'ab' * 16}"

    @pytest.mark.parametrize("bad", ["not-a-trace", "ab" * 15, "gg" * 16])
    async def test_malformed_trace_id_is_422(self, api: RunningApp, bad: str):
        response = await api.client.get(f"/api/traces/{bad}")
        assert response.status_code == 422
        assert response.json()["fields"] == ["traceId"]


class TestExportAnswer:
    async def test_json_export_counts_dropped_spans(self, api: RunningApp):
        trace_id = new_trace_id().hex()
        root_id, child_id = new_span_id().hex(), new_span_id().hex()
        now = time.time_ns()
        body = {
            "resourceSpans": [
                {
                    "resource": {
                        "attributes": [
                            {"key": "service.name", "value": {"stringValue": "json-app"}}
                        ]
                    },
                    "scopeSpans": [
                        {
                            "scope": {"name": "some.library"},
                            "spans": [
                                {
                                    "traceId": trace_id,
                                    "spanId": root_id,
                                    "name": "root",
                                    "kind": 2,
                                    "startTimeUnixNano": str(now),
                                    "endTimeUnixNano": str(now + 5 * MS),
                                },
                                {
                                    "traceId": trace_id,
                                    "spanId": child_id,
                                    "parentSpanId": root_id,
                                    "name": "dropped",
                                    "startTimeUnixNano": now,
                                    "endTimeUnixNano": now + MS,
                                },
                            ],
                        }
                    ],
                }
            ]
        }
        response = await api.client.post(
            "/v1/traces", content=json.dumps(body), headers={"content-type": "application/json"}
        )
        assert response.status_code == 200
        partial = response.json()["partialSuccess"]
        assert int(partial["rejectedSpans"]) == 1
        assert partial["errorMessage"] == "not_svc_scope=1"
        trace = (await api.client.get(f"/api/traces/{trace_id}")).json()
        assert [s["name"] for s in trace["spans"]] == ["root"]
        assert trace["serviceName"] == "json-app"
        assert api.services.traces.spans_dropped_by_reason["not_svc_scope"] == 1
