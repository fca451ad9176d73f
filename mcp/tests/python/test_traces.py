"""Traces through the gateway: the official MCP SDK as the agent sends a
W3C `traceparent` in `params._meta`; `idem mcp gateway --otlp-endpoint`
exports to a receiver here that decodes with the official OTLP messages
(`opentelemetry-proto`). On SQLite and PostgreSQL.

What must hold: the gateway's `tools/call` span is a child of the agent's
span; the upstream gets the gateway's client span as its `traceparent`
(never the agent's first one, frozen); a retry with a new `traceparent` is
the same call (replayed, nothing diverged, one charge); idem's outcome is
on the span; nothing exported carries the secret, the key or the amount."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterator

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from test_gateway import SECRET, Env, charge_args, text_of

pytestmark = pytest.mark.anyio

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"


class Receiver:
    """An OTLP/HTTP receiver on port 0 keeping every span it is sent."""

    def __init__(self) -> None:
        self.spans: list[Span] = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers["content-length"]))
                assert self.path == "/v1/traces", self.path
                assert self.headers["content-type"] == "application/x-protobuf"
                req = ExportTraceServiceRequest.FromString(body)
                with receiver.lock:
                    for rs in req.resource_spans:
                        for ss in rs.scope_spans:
                            receiver.spans.extend(ss.spans)
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def wait_for(self, what: str, pick: Any) -> Span:
        give_up = time.monotonic() + 20
        while time.monotonic() < give_up:
            with self.lock:
                found = [s for s in self.spans if pick(s)]
            if found:
                return found[0]
            time.sleep(0.05)
        with self.lock:
            names = [s.name for s in self.spans]
        raise AssertionError(f"no {what} arrived; spans: {names}")

    def all(self) -> list[Span]:
        with self.lock:
            return list(self.spans)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.server.shutdown()


def attrs(span: Span) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kv in span.attributes:
        kind = kv.value.WhichOneof("value")
        out[kv.key] = getattr(kv.value, kind) if kind else None
    return out


async def test_the_agent_s_trace_is_continued_and_passed_on_never_frozen(env: Env, receiver: Receiver) -> None:
    trace = bytes.fromhex(TRACE)
    first_parent, retry_parent = bytes.fromhex("00f067aa0ba902b7"), bytes.fromhex("b7ad6b7169203331")
    async with env.agent(env.guard_file(), IDEM_OTLP_ENDPOINT=receiver.url, OTEL_BSP_SCHEDULE_DELAY="50") as agent:
        first = await agent.call_tool("create_pix_charge", charge_args("FAT-TR-1", amount="180.37"),
                                      meta={"traceparent": f"00-{TRACE}-{first_parent.hex()}-01"})
        # The agent retries: a new span of its own, the same call.
        retry = await agent.call_tool("create_pix_charge", charge_args("FAT-TR-1", amount="180.37"),
                                      meta={"traceparent": f"00-{TRACE}-{retry_parent.hex()}-01"})
    assert not first.is_error and not retry.is_error, (text_of(first), text_of(retry))
    assert first.meta and retry.meta
    assert retry.meta["idem"]["replayed"] and not retry.meta["idem"]["diverged"]
    assert retry.meta["idem"]["diverged_meta"] == []
    charges = env.executions()
    assert len(charges) == 1, charges

    served = receiver.wait_for("the first call's span", lambda s: s.parent_span_id == first_parent)
    assert served.trace_id == trace and served.name == "tools/call create_pix_charge"
    assert served.kind == Span.SPAN_KIND_SERVER
    a = attrs(served)
    assert a["mcp.method.name"] == "tools/call" and a["gen_ai.tool.name"] == "create_pix_charge"
    assert a["idem.outcome"] == "executed" and a["idem.attempt"] == 1 and not a["idem.replayed"]
    assert isinstance(a["idem.fencing_token"], int)

    upstream = receiver.wait_for("the upstream call's span",
                                 lambda s: s.parent_span_id == served.span_id and s.kind == Span.SPAN_KIND_CLIENT
                                 and s.name.startswith("tools/call"))
    # The upstream was called as a child of the gateway's client span.
    assert charges[0]["traceparent"] == f"00-{TRACE}-{upstream.span_id.hex()}-01", charges[0]
    receiver.wait_for("a store operation under the call",
                      lambda s: s.parent_span_id == served.span_id and attrs(s).get("db.system.name") in ("sqlite", "postgresql"))

    replayed = receiver.wait_for("the retry's span", lambda s: s.parent_span_id == retry_parent)
    assert replayed.trace_id == trace
    b = attrs(replayed)
    assert b["idem.outcome"] == "replayed" and b["idem.replayed"] and not b["idem.diverged"]
    time.sleep(0.3)
    spans = receiver.all()
    assert not [s for s in spans if s.parent_span_id == replayed.span_id and s.kind == Span.SPAN_KIND_CLIENT
                and s.name.startswith("tools/call")], "a replay calls no upstream"
    key = first.meta["idem"]["key"]
    for s in spans:
        shown = f"{s.name} {attrs(s)}"
        for secret in (SECRET, key, "180.37", "FAT-TR-1"):
            assert secret not in shown, (secret, shown)
