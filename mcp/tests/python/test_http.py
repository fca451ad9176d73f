"""The MCP endpoints of `idem serve` over Streamable HTTP, driven by the
official Python MCP SDK: idem's own server at /mcp and a gateway at
/mcp/gateways/pay, with a tenant's bearer token; a wrong token is 401 and
a foreign Origin 403."""

from __future__ import annotations

import json
import os
from typing import Any

import anyio
import subprocess
import uuid

import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from conftest import Served
from test_gateway import IDEM, Env, charge_args, text_of
from test_own_server import REFERENCE

pytestmark = pytest.mark.anyio


async def test_the_gateway_and_idem_s_own_server_over_http(env: Env, served: Served) -> None:
    async with httpx2.AsyncClient(headers={"authorization": f"Bearer {served.token}"}) as h:
        async with streamable_http_client(served.url + "/mcp/gateways/pay", http_client=h) as (r, w):
            async with ClientSession(r, w) as s:
                await s.initialize()
                names = {t.name for t in (await s.list_tools()).tools}
                assert {"create_pix_charge", "echo"} <= names
                first = await s.call_tool("create_pix_charge", charge_args("HTTP-1"))
                again = await s.call_tool("create_pix_charge", charge_args("HTTP-1", amount="1800.00"))
                assert not first.meta["idem"]["replayed"] and again.meta["idem"]["replayed"]
                assert again.meta["idem"]["diverged"]
                assert json.loads(again.content[0].text)["amount"] == "180.00"
                # The same value spelled otherwise is a plain replay, never
                # "diverged": the normalized fields are the key's.
                spelled = await s.call_tool("create_pix_charge", charge_args("HTTP-1", amount="180"))
                assert spelled.meta["idem"]["replayed"] and not spelled.meta["idem"]["diverged"]
                assert "written differently" in text_of(spelled) and "differs" not in text_of(spelled)
        async with streamable_http_client(served.url + "/mcp", http_client=h) as (r, w):
            async with ClientSession(r, w) as s:
                await s.initialize()
                est = await s.call_tool("estimate_duplicate_cost", REFERENCE)
                assert "R$ 148,50" in text_of(est)
                got = await s.call_tool("get_intent", {"action": "pix.cobranca", "reference": "HTTP-1"})
                assert got.structured_content["deliveries"] == 3
                assert got.structured_content["divergences"] == 1
    assert len(env.executions()) == 1
    # Counted for the monitor, /v1/stats and /metrics, with one definition.
    async with httpx2.AsyncClient(headers={"authorization": f"Bearer {served.token}"}) as h:
        stats = (await h.get(served.url + "/v1/stats")).json()
        [tool] = stats["mcp_tools"]
        assert (tool["tool"], tool["calls"], tool["executions"], tool["replays"], tool["divergences"]) == (
            "create_pix_charge", 3, 1, 2, 1)
        metrics = (await h.get(served.url + "/metrics")).text
        assert 'idem_mcp_calls_total{tool="create_pix_charge",outcome="executed"} 1' in metrics
        assert 'idem_mcp_calls_total{tool="create_pix_charge",outcome="diverged"} 1' in metrics
        # Timed in two parts: the gateway's own time for each of the three
        # calls, the upstream's for the one that asked it.
        assert 'idem_mcp_gateway_own_seconds_count{gateway="pay",tool="create_pix_charge"} 3' in metrics
        assert 'idem_mcp_upstream_seconds_count{gateway="pay",tool="create_pix_charge"} 1' in metrics
        live = (await h.get(served.url + "/live/data.json")).json()
        assert any(t["tool"] == "create_pix_charge" and t["replays"] == 2 for t in live["mcp_tools"])
        page = (await h.get(served.url + "/live")).text
        assert "live-mcp" in page and "create_pix_charge" in page


async def test_arguments_planted_through_v1_are_refused_and_the_gateway_charges_what_its_key_covers(
    env: Env, served: Served
) -> None:
    # An intent recorded first on /v1 with the reference the agent will use,
    # carrying the member the gateway freezes arguments under: refused, so
    # the agent's call freezes its own arguments and charges them once.
    planted = {**{"cliente_id": "c-1", "valor": "180.00", "chave_pix_destino": "fulano@example.com",
                  "referencia_intencao": "PLANT-1"},
               "_idem_mcp_arguments": {**charge_args("PLANT-1", amount="99999.00"), "pix_key": "thief@example.com"}}
    async with httpx2.AsyncClient(headers={"authorization": f"Bearer {served.token}"}) as h:
        refused = await h.post(served.url + "/v1/intents", json={"action": "pix.cobranca", "payload": planted})
        assert refused.status_code == 422, refused.text
        assert refused.json()["type"] == "urn:idem:problem:reserved-member"
        async with streamable_http_client(served.url + "/mcp/gateways/pay", http_client=h) as (r, w):
            async with ClientSession(r, w) as s:
                await s.initialize()
                first = await s.call_tool("create_pix_charge", charge_args("PLANT-1"))
                assert not first.is_error, text_of(first)
    [execution] = env.executions()
    assert (execution["amount"], execution["pix_key"]) == ("180.00", "fulano@example.com")


async def test_a_wrong_token_is_401_and_a_foreign_origin_403(served: Served) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}
    headers = {"accept": "application/json, text/event-stream"}
    # A refused request's body is left unread, so the server closes that
    # connection after answering (as hyper does): every request here gets a
    # connection of its own, or the next one could race the close.
    async with httpx2.AsyncClient(limits=httpx2.Limits(max_keepalive_connections=0)) as h:
        for path in ("/mcp", "/mcp/gateways/pay"):
            wrong = await h.post(served.url + path, json=body, headers={**headers, "authorization": "Bearer nope"})
            assert wrong.status_code == 401
            assert wrong.headers["content-type"] == "application/problem+json"
            none = await h.post(served.url + path, json=body, headers=headers)
            assert none.status_code == 401
            foreign = await h.post(served.url + path, json=body, headers={
                **headers, "authorization": f"Bearer {served.token}", "origin": "https://evil.example"})
            assert foreign.status_code == 403
            assert foreign.json()["type"] == "urn:idem:problem:cross-site"
            ok = await h.post(served.url + path, json=body, headers={**headers, "authorization": f"Bearer {served.token}"})
            assert ok.status_code == 200, ok.text
        huge = await h.post(served.url + "/mcp", content=b"{" + b" " * 70_000 + b"}", headers={
            **headers, "authorization": f"Bearer {served.token}", "content-type": "application/json"})
        assert 400 <= huge.status_code < 500
        alive = await h.get(served.url + "/healthz")
        assert alive.status_code == 200


async def test_a_mount_serves_its_tenants_only_and_passes_nothing_unguarded_by_default(env: Env) -> None:
    s = Served(env, [], top="")
    try:
        other = env.idem("tenant", "create", "other" + uuid.uuid4().hex[:8]).stdout.strip()
        body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}
        headers = {"accept": "application/json, text/event-stream", "authorization": f"Bearer {other}"}
        async with httpx2.AsyncClient() as h:
            refused = await h.post(s.url + "/mcp/gateways/pay", json=body, headers=headers)
            assert refused.status_code == 403, refused.text
            assert refused.json()["type"] == "urn:idem:problem:other-tenant"
        async with httpx2.AsyncClient(headers={"authorization": f"Bearer {s.token}"}) as h:
            async with streamable_http_client(s.url + "/mcp/gateways/pay", http_client=h) as (r, w):
                async with ClientSession(r, w) as c:
                    await c.initialize()
                    names = {t.name for t in (await c.list_tools()).tools}
                    assert names == {"create_pix_charge"}, names
                    with pytest.raises(Exception, match="pass_through"):
                        await c.call_tool("echo", {"text": "hi"})
                    ok = await c.call_tool("create_pix_charge", charge_args("MOUNT-1"))
                    assert not ok.is_error, text_of(ok)
    finally:
        s.stop()
    assert [e["invoice_ref"] for e in env.executions()] == ["MOUNT-1"]


def test_a_mount_without_tenants_or_with_an_unknown_one_is_refused_at_start(env: Env) -> None:
    for top, says in [("", "names the tenants it serves"), ('tenants = ["nobody"]', 'no tenant "nobody"')]:
        guard = env.guard_file(top=top)
        done = subprocess.run([os.environ.get("IDEM_BIN", IDEM), "serve", "--addr", "127.0.0.1:0", *env.db_args(),
                               "--mcp-gateway", f"pay={guard}"], capture_output=True, text=True,
                              env={**os.environ, **env.env()}, timeout=60)
        assert done.returncode != 0 and says in done.stderr, done.stderr


def test_guarded_calls_whose_clients_give_up_never_wedge_the_store(env: Env, served: Served) -> None:
    # The cancellation soak's MCP half: guarded calls over HTTP (and /v1
    # record+claim beside them), each given up after 1 ms to 1 s, and curl
    # clients SIGKILLed mid-call. Afterwards plain writes answer within 2 s,
    # /readyz is 200, and no invoice was charged twice.
    import math
    import random
    import signal
    import threading
    import time

    auth = {"authorization": f"Bearer {served.token}", "accept": "application/json, text/event-stream"}
    stop = time.monotonic() + 6

    def cut(rng: random.Random) -> float:
        return 0.001 * math.pow(1000, rng.random())

    def worker(n: int) -> None:
        rng = random.Random(n)
        with httpx2.Client(headers=auth) as h:
            i = 0
            while time.monotonic() < stop:
                i += 1
                ref = f"SOAK-{rng.randrange(40)}"  # shared: calls wait on each other's claims
                try:
                    if rng.random() < 0.7:
                        call = {"jsonrpc": "2.0", "id": i, "method": "tools/call",
                                "params": {"name": "create_pix_charge", "arguments": charge_args(ref)}}
                        h.post(served.url + "/mcp/gateways/pay", json=call, timeout=cut(rng))
                    else:
                        body = {"action": "pix.cobranca", "claim": {"lease_ms": 30000},
                                "payload": {"cliente_id": "c-1", "valor": "1.00", "chave_pix_destino": "a@example.com",
                                            "referencia_intencao": f"V1-{n}-{i}"}}
                        h.post(served.url + "/v1/intents", json=body, timeout=cut(rng))
                except httpx2.HTTPError:
                    pass

    def killer() -> None:
        rng = random.Random(99)
        i = 0
        while time.monotonic() < stop:
            i += 1
            call = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                               "params": {"name": "create_pix_charge", "arguments": charge_args(f"KILL-{i}")}})
            p = subprocess.Popen(["curl", "-s", "-o", "/dev/null", "-X", "POST", "-H", "content-type: application/json",
                                  "-H", f"authorization: {auth['authorization']}", "-H", f"accept: {auth['accept']}",
                                  "--data", call, served.url + "/mcp/gateways/pay"])
            time.sleep(rng.random() * 0.05)
            p.send_signal(signal.SIGKILL)
            p.wait()

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(16)] + [threading.Thread(target=killer)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    time.sleep(1)
    with httpx2.Client(headers=auth) as h:
        for i in range(5):
            started = time.monotonic()
            body = {"action": "pix.cobranca", "payload": {"cliente_id": "c-1", "valor": "1.00",
                                                          "chave_pix_destino": "a@example.com",
                                                          "referencia_intencao": f"AFTER-{i}"}}
            res = h.post(served.url + "/v1/intents", json=body, timeout=10)
            assert res.status_code == 201, res.text
            assert time.monotonic() - started < 2, f"plain write {i} took {time.monotonic() - started:.2f} s"
        ready = h.get(served.url + "/readyz", timeout=10)
        assert ready.status_code == 200, ready.text
    charged: dict[str, int] = {}
    for e in env.executions():
        charged[e["invoice_ref"]] = charged.get(e["invoice_ref"], 0) + 1
    assert charged and all(n == 1 for n in charged.values()), {k: n for k, n in charged.items() if n > 1}


async def test_a_dead_upstream_is_not_sent_and_comes_back(env: Env, served: Served) -> None:
    import signal
    import time

    auth = {"authorization": f"Bearer {served.token}"}

    async def call(ref: str) -> Any:
        async with httpx2.AsyncClient(headers=auth) as h:
            async with streamable_http_client(served.url + "/mcp/gateways/pay", http_client=h) as (r, w):
                async with ClientSession(r, w) as s:
                    await s.initialize()
                    return await s.call_tool("create_pix_charge", charge_args(ref))

    async def probe(path: str) -> tuple[int, str]:
        async with httpx2.AsyncClient() as h:
            res = await h.get(served.url + path, timeout=10)
            return res.status_code, res.text

    async def ready() -> tuple[int, str]:
        return await probe("/readyz/mcp")

    first = await call("DOWN-1")
    assert not first.is_error, text_of(first)
    pid = env.executions()[0]["pid"]
    (env.tmp / "upstream-down").write_text("")  # it will not start again yet
    os.kill(pid, signal.SIGKILL)
    give_up = time.monotonic() + 10
    while (await ready())[0] == 200 and time.monotonic() < give_up:
        await anyio.sleep(0.1)
    status, why = await ready()
    assert status == 503 and "gateway `pay`" in why, (status, why)
    # One tenant's upstream never pulls the instance for everyone: /readyz
    # speaks for the store alone.
    assert await probe("/readyz") == (200, "ready")
    # Nothing can be sent: said so, nothing uncertain, the claim given back.
    refused = await call("DOWN-2")
    assert refused.is_error and "not sent" in text_of(refused), text_of(refused)
    idem = refused.meta["idem"]
    assert idem["sent"] is False and idem["source"] == "idem"
    (env.tmp / "upstream-down").unlink()
    give_up = time.monotonic() + 40
    while (await ready())[0] != 200 and time.monotonic() < give_up:
        await anyio.sleep(0.2)
    assert (await ready())[0] == 200, "the upstream was not started again"
    # The same call now executes at once (no lease to wait out), once.
    again = await call("DOWN-2")
    assert not again.is_error and again.meta["idem"]["attempt"] == 2, text_of(again)
    assert [e["invoice_ref"] for e in env.executions()] == ["DOWN-1", "DOWN-2"]


async def test_every_message_over_http_gets_an_answer_it_can_match(env: Env, served: Served) -> None:
    headers = {"authorization": f"Bearer {served.token}", "accept": "application/json, text/event-stream",
               "content-type": "application/json"}
    url = served.url + "/mcp/gateways/pay"
    async with httpx2.AsyncClient(headers=headers) as h:
        big = b'{"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "' + b"x" * 200_000 + b'"}}}'
        res = await h.post(url, content=big)
        assert res.status_code == 200 and res.json()["id"] == 5, res.text
        assert res.json()["error"]["code"] == -32600
        broken = await h.post(url, content=b"{not json")
        assert broken.status_code == 400 and broken.json()["error"]["code"] == -32700, broken.text
        dup = await h.post(url, content=b'{"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "create_pix_charge", '
                                        b'"arguments": {"customer_id": "c-1", "amount": "1.00", "amount": "9999.00", '
                                        b'"pix_key": "a@example.com", "invoice_ref": "DUP-2"}}}')
        assert dup.status_code == 200 and dup.json()["id"] == 6, dup.text
        assert dup.json()["result"]["isError"] and "`amount` twice" in dup.json()["result"]["content"][0]["text"]
    assert env.executions() == []


async def test_a_call_whose_client_goes_away_stops_waiting(env: Env) -> None:
    # A holds the claim for ~3 s (the upstream answers late); B calls the
    # same intent, waits on A's claim, and its client gives up after 0.5 s:
    # B stops waiting at once (counted in flight), it does not poll on.
    import time

    s = Served(env, [], delay_ms=3000)
    try:
        headers = {"authorization": f"Bearer {s.token}", "accept": "application/json, text/event-stream"}
        call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "create_pix_charge", "arguments": charge_args("WAIT-1")}}
        url = s.url + "/mcp/gateways/pay"
        async with httpx2.AsyncClient(headers=headers) as h:
            async def first() -> Any:
                return await h.post(url, json=call, timeout=30)

            async def second() -> None:
                await anyio.sleep(0.3)
                try:
                    await h.post(url, json={**call, "id": 2}, timeout=0.5)
                except httpx2.HTTPError:
                    pass

            async with anyio.create_task_group() as tg:
                tg.start_soon(second)
                started = time.monotonic()
                done: dict[str, Any] = {}

                async def run_first() -> None:
                    done["a"] = await first()

                tg.start_soon(run_first)
                await anyio.sleep(1.6)
                stats = (await h.get(s.url + "/v1/stats")).json()
                [tool] = stats["mcp_tools"] or [{"in_flight": 0}]
                assert tool["in_flight"] == 1, (time.monotonic() - started, stats["mcp_tools"])
            assert done["a"].status_code == 200 and not done["a"].json()["result"]["isError"]
    finally:
        s.stop()
    assert len(env.executions()) == 1
