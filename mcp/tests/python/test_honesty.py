"""A guard is never silently off: the paths a gateway takes when its guard
file is wrong, or its upstream misbehaves, through the official MCP Python
SDK and the x402 stand-in (real EIP-3009 signatures, offline). Each test
runs on SQLite and, with IDEM_TEST_POSTGRES_URL, on PostgreSQL."""

from __future__ import annotations

import json
import os
import pwd
import socket
import uuid
import subprocess
import sys
import time
from pathlib import Path

import pytest

from test_gateway import IDEM, Env, charge_args, text_of
from test_protocols import EXAMPLES, RawGateway, ledger, requirements, sign, wait_for, x402_guard

pytestmark = pytest.mark.anyio


def misread_guard(env: Env) -> Path:
    """The x402 example with its payment entry misnamed (`x402/paymnt`):
    it starts, yet no call carries what it reads, so every paid call looks
    like the unpaid handshake."""
    path = x402_guard(env)
    text = path.read_text().replace("x402~1payment", "x402~1paymnt").replace('"x402/payment"', '"x402/paymnt"')
    path.write_text(text)
    return path


def line_of(path: Path, prefix: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if line.startswith(prefix))


async def test_a_guard_that_cannot_see_the_payment_lets_one_through_then_refuses(env: Env) -> None:
    guard = misread_guard(env)
    amount_line = line_of(guard, "amount = ")
    async with env.agent(guard) as agent:
        # The unpaid handshake is answered with an error: no alarm.
        required = await requirements(agent)
        handshake = await agent.call_tool("get_report", {"report": "fx/2026-12"})
        assert handshake.is_error and handshake.meta["idem"]["recorded"] is False
        # A paid call the guard cannot see: forwarded unrecorded, and its
        # success is the alarm.
        first = await agent.call_tool("get_report", {"report": "fx/2026-12"}, meta=sign(required))
        assert not first.is_error and first.meta["idem"]["recorded"] is False, text_of(first)
        # The client re-signs and tries again: refused, nothing sent.
        again = await agent.call_tool("get_report", {"report": "fx/2026-12"}, meta=sign(required))
        assert again.is_error, text_of(again)
        said = text_of(again)
        assert f"{guard}:{amount_line}" in said and "x402/paymnt" in said and "Nothing was sent" in said, said
        assert again.meta["idem"]["source"] == "idem" and again.meta["idem"]["recorded"] is False
        # An unpaid call is refused too: the guard no longer forwards what
        # it cannot record.
        unpaid = await agent.call_tool("get_report", {"report": "fx/2026-13"})
        assert unpaid.is_error and "x402/payment" not in json.dumps(unpaid.structured_content or {}), unpaid
    assert len(ledger(env)) == 1, ledger(env)
    log = (env.tmp / "gateway.log").read_text()
    assert "ERROR" in log and "SUCCESS" in log and f"line={amount_line}" in log, log[-2000:]


async def test_the_example_guard_pays_once_where_the_misread_one_alarms(env: Env) -> None:
    """The control: the guard as shipped records every paid call."""
    async with env.agent(x402_guard(env)) as agent:
        required = await requirements(agent)
        outs = [await agent.call_tool("get_report", {"report": "fx/2026-12"}, meta=sign(required)) for _ in range(2)]
        assert [o.meta["idem"].get("recorded", True) for o in outs] == [True, True]
        assert [o.meta["idem"]["replayed"] for o in outs] == [False, True]
    assert len(ledger(env)) == 1


def test_check_says_what_each_sample_call_is_keyed_on(env: Env) -> None:
    guard = x402_guard(env)
    env.catalog = EXAMPLES / "x402" / "catalog.toml"
    sample = env.tmp / "sample.json"
    paid = {"x402/payment": {"accepted": {"amount": "10000", "asset": "0xAB", "payTo": "0xCD"},
                             "payload": {"authorization": {"from": "0xEF"}}}}
    sample.write_text(json.dumps([
        {"tool": "get_report", "arguments": {"report": "fx/2026-12"}, "_meta": paid},
        {"tool": "get_report", "arguments": {"report": "fx/2026-12"}, "_meta": {"x402/paymnt": {}}},
        {"tool": "get_report", "arguments": {}, "_meta": paid},
    ]))
    done = subprocess.run([IDEM, "mcp", "gateway", "--guard", str(guard), "--catalog", str(env.catalog), "--check",
                           "--sample", str(sample)], capture_output=True, text=True, timeout=60,
                          env={**os.environ, **env.env()}, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "binds to the upstream (1 guarded: get_report)" in out, out
    assert 'payer = "0xEF"' in out and '"0xef"' in out, out  # read, then normalized (trim_lower)
    assert "forwarded UNRECORDED" in out and "x402/paymnt" in out, out
    assert "REFUSED, nothing recorded: missing argument report" in out, out
    # A guard file that does not bind exits 2 naming the line, as a start.
    bad = guard.read_text().replace('tool = "get_report"', 'tool = "get_reprt"')
    guard.write_text(bad)
    refused = subprocess.run([IDEM, "mcp", "gateway", "--guard", str(guard), "--catalog", str(env.catalog), "--check"],
                             capture_output=True, text=True, timeout=60, env={**os.environ, **env.env()},
                             stdin=subprocess.DEVNULL)
    assert refused.returncode == 2 and 'no tool "get_reprt"' in refused.stderr, refused.stderr


async def test_a_resend_a_facilitator_refuses_stays_uncertain(env: Env) -> None:
    """A facilitator that answers a replayed nonce with an error: the
    resend's error is never the reconciled result; the payment that did
    settle is not made again, and the agent is told not to re-pay."""
    async with env.agent(x402_guard(env)) as agent:
        required = await requirements(agent)
    first = sign(required)
    refusing = {"X402_DELAY_MS": "5000", "X402_REFUSE_REPLAY": "1"}
    gw = RawGateway(env, x402_guard(env, on_uncertain='on_uncertain = "resend"\nlease_ms = 1500', upstream_env=refusing))
    gw.call("get_report", {"report": "fx/2026-12"}, meta=first)
    wait_for(lambda: len(ledger(env)) == 1)  # settled; its answer never comes back
    gw.kill()
    time.sleep(1.6)
    async with env.agent(x402_guard(env, on_uncertain='on_uncertain = "resend"\nlease_ms = 1500',
                                   upstream_env={"X402_REFUSE_REPLAY": "1"})) as agent:
        for _ in range(2):
            retried = await agent.call_tool("get_report", {"report": "fx/2026-12"}, meta=sign(required))
            assert retried.is_error, text_of(retried)
            idem = retried.meta["idem"]
            assert idem["reconciled"] is False and idem["source"] == "upstream", idem
            said = text_of(retried)
            assert "nonce_already_used" in said and "work queue" in said and "new payment" in said, said
    transfers = ledger(env)
    assert len(transfers) == 1 and transfers[0]["nonce"] == first["x402/payment"]["payload"]["authorization"]["nonce"]


async def test_a_url_upstream_refusing_connections_is_not_sent(env: Env) -> None:
    url = env.http_upstream()
    upstream = env.processes[-1]
    async with env.agent(env.guard_file(url=url)) as agent:
        upstream.kill()
        upstream.wait()
        refused = await agent.call_tool("create_pix_charge", charge_args("FAT-URL"))
        assert refused.is_error, text_of(refused)
        idem = refused.meta["idem"]
        assert idem["sent"] is False, (idem, text_of(refused))
        assert "was not sent" in text_of(refused)
        assert env.executions() == []
    # The claim was given back: a retry, once the upstream is back, runs at
    # once under the same key (no lease to wait out, nothing uncertain).
    port = url.split(":")[2].split("/")[0]
    env.processes.append(subprocess.Popen(
        [sys.executable, str(Path(__file__).parent / "pay_server.py")],
        env={**os.environ, **env.env(PAY_HTTP_PORT=port)}, stdout=subprocess.DEVNULL,
        stderr=open(env.tmp / "upstream.log", "a")))
    wait_for(lambda: socket.socket().connect_ex(("127.0.0.1", int(port))) == 0)
    async with env.agent(env.guard_file(url=url)) as agent:
        ran = await agent.call_tool("create_pix_charge", charge_args("FAT-URL"))
        assert not ran.is_error, text_of(ran)
        assert ran.meta["idem"]["key"] == idem["key"] and ran.meta["idem"]["replayed"] is False
    assert len(env.executions()) == 1


def snoop_guard(env: Env, user: str | None) -> Path:
    """A guard file whose upstream is snoop_server.py, run by Debian's
    Python from a folder any account can read."""
    import shutil
    import tempfile

    where = Path(tempfile.mkdtemp(prefix="idem-snoop-"))
    where.chmod(0o755)
    script = where / "snoop_server.py"
    shutil.copy(Path(__file__).parent / "snoop_server.py", script)
    script.chmod(0o644)
    python = shutil.which("python3", path="/usr/bin:/bin") or sys.executable
    path = env.guard_file()
    text = path.read_text().replace(
        f"command = [{json.dumps(sys.executable)}, {json.dumps(str(Path(__file__).parent / 'pay_server.py'))}]",
        f"command = [{json.dumps(python)}, {json.dumps(str(script))}]" + (f"\nuser = {json.dumps(user)}" if user else ""))
    path.write_text(text)
    return path


def data_paths(env: Env) -> list[str]:
    data = env.tmp / "data"
    return [str(data), str(data / "idem.db"), str(data / "hmac.key")]


async def test_the_upstream_holds_no_descriptor_of_idem_s(env: Env) -> None:
    async with env.agent(snoop_guard(env, None)) as agent:
        out = json.loads(text_of(await agent.call_tool("snoop", {"paths": []})))
    links = list(out["fds"].values())
    assert not [l for l in links if "idem.db" in l or "hmac.key" in l or l.startswith("socket:")], links
    # stdin and stdout are the gateway's pipes, stderr its log: nothing else
    # but the descriptor the listing itself opened.
    assert len(links) <= 4, links


@pytest.mark.skipif(os.geteuid() != 0, reason="running an upstream as another user needs root")
async def test_an_upstream_run_as_another_user_cannot_read_idem_s_data(env: Env) -> None:
    async with env.agent(snoop_guard(env, "nobody")) as agent:
        said = await agent.call_tool("snoop", {"paths": [*data_paths(env), "/proc/PARENT/environ"]})
        out = json.loads(text_of(said))
    assert out["uid"] != 0, out
    assert all(v.startswith("denied") or v == "missing" for v in out["reach"].values()), out["reach"]
    assert any(k.endswith("/environ") and v.startswith("denied") for k, v in out["reach"].items()), out["reach"]


@pytest.mark.skipif(os.geteuid() != 0, reason="the default account applies to a root idem")
async def test_a_root_idem_runs_an_upstream_as_nobody_unless_told(env: Env) -> None:
    env.upstream_user = None  # nothing named: the default applies
    async with env.agent(snoop_guard(env, None)) as agent:
        out = json.loads(text_of(await agent.call_tool("snoop", {"paths": [*data_paths(env), "/proc/PARENT/environ"]})))
    assert out["uid"] == pwd.getpwnam("nobody").pw_uid, out
    assert all(v.startswith("denied") or v == "missing" for v in out["reach"].values()), out["reach"]
    # An upstream nobody cannot run: refused at start, saying why and how.
    done = subprocess.run([IDEM, *env.gateway_args(env.guard_file())], capture_output=True, text=True, timeout=60,
                          env={**os.environ, **env.env()}, stdin=subprocess.DEVNULL)
    assert done.returncode == 2 and "it ran as `nobody`" in done.stderr and "IDEM_UPSTREAM_USER" in done.stderr, \
        done.stderr[-2000:]


def test_an_unknown_upstream_user_is_refused_at_start(env: Env) -> None:
    path = snoop_guard(env, "no-such-user-idem")
    done = subprocess.run([IDEM, *env.gateway_args(path)], capture_output=True, text=True, timeout=60,
                          env={**os.environ, **env.env()}, stdin=subprocess.DEVNULL)
    assert done.returncode == 2 and '[upstream] user "no-such-user-idem"' in done.stderr, done.stderr


async def test_a_disabled_tenant_s_gateway_passes_nothing_and_its_own_server_serves_nothing(env: Env) -> None:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.shared.exceptions import MCPError

    own = StdioServerParameters(command=IDEM, args=["mcp", "serve", "--tenant", env.tenant, *env.db_args()],
                                env=env.env())
    async with env.agent(env.guard_file()) as agent:
        with open(env.tmp / "own.log", "a") as log:
            async with stdio_client(own, errlog=log) as (r, w):
                async with ClientSession(r, w) as mine:
                    await mine.initialize()
                    assert not (await agent.call_tool("environment", {})).is_error
                    assert not (await mine.call_tool("live_summary", {})).is_error
                    assert env.idem("tenant", "disable", env.tenant).returncode == 0
                    with pytest.raises(MCPError, match="disabled"):
                        await agent.call_tool("environment", {})
                    with pytest.raises(MCPError, match="disabled"):
                        await mine.call_tool("live_summary", {})
    done = subprocess.run([IDEM, "mcp", "serve", "--tenant", env.tenant, *env.db_args()], capture_output=True,
                          text=True, env={**os.environ, **env.env()}, stdin=subprocess.DEVNULL, timeout=60)
    assert done.returncode == 2 and "disabled" in done.stderr, done.stderr


async def test_every_message_over_http_is_answered_in_json_rpc_with_its_own_id(served: object) -> None:
    import httpx2

    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json",
               "authorization": f"Bearer {served.token}"}  # type: ignore[attr-defined]
    url = served.url + "/mcp/gateways/pay"  # type: ignore[attr-defined]
    nested = {"jsonrpc": "2.0", "method": "tools/call",
              "params": {"name": "create_pix_charge", "arguments": {"id": "nested", "pad": "x" * 1_100_000}}, "id": 77}
    cases: list[tuple[bytes, object, int]] = [
        (b'[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]', None, -32600),
        (b'{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}', {"a": 1}, -32600),
        (b'{"jsonrpc":"2.0","id":2.5,"method":"tools/list"}', 2.5, -32600),
        (b'{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"create_pix_charge","arguments":[1]}}', 8, -32602),
        # Over the bound, the request's id after its params: not the nested
        # argument's, and not guessed (the text is cut before it).
        (json.dumps(nested).encode(), None, -32600),
    ]
    async with httpx2.AsyncClient(limits=httpx2.Limits(max_keepalive_connections=0)) as h:
        for body, id_, code in cases:
            r = await h.post(url, content=body, headers=headers)
            assert r.headers["content-type"].startswith("application/json"), (body[:60], r.status_code, r.text[:200])
            answer = r.json()
            assert answer["id"] == id_ and answer["error"]["code"] == code, (body[:60], answer)
        assert (await h.get(served.url + "/healthz")).status_code == 200  # type: ignore[attr-defined]


async def test_the_monitor_shows_the_frozen_payment_the_alarm_and_counts_that_agree(env: Env, served: object) -> None:
    """Calls through stdio gateways of the served tenant, then what `idem
    serve` on the same store shows: an x402 action left uncertain by a
    killed gateway, with the frozen authorization and the hint in x402's
    words; the misread guard's alarm; counts that agree with the ledger."""
    import httpx2

    env.tenant = served.tenant  # type: ignore[attr-defined]
    async with env.agent(x402_guard(env)) as agent:
        required = await requirements(agent)
    first = sign(required)
    refuse = 'on_uncertain = "refuse"\nlease_ms = 1500'
    gw = RawGateway(env, x402_guard(env, on_uncertain=refuse, upstream_env={"X402_DELAY_MS": "5000"}))
    gw.call("get_report", {"report": "fx/2026-12"}, meta=first)
    wait_for(lambda: len(ledger(env)) == 1)
    gw.kill()
    time.sleep(1.6)
    async with env.agent(x402_guard(env, on_uncertain=refuse)) as agent:
        refused = await agent.call_tool("get_report", {"report": "fx/2026-12"}, meta=sign(required))
        assert refused.is_error, text_of(refused)
        key = refused.meta["idem"]["key"]
    async with env.agent(misread_guard(env)) as agent:
        for _ in range(2):
            await agent.call_tool("get_report", {"report": "fx/2026-14"}, meta=sign(required))
    nonce = first["x402/payment"]["payload"]["authorization"]["nonce"]
    async with httpx2.AsyncClient(headers={"authorization": f"Bearer {served.token}"}) as h:  # type: ignore[attr-defined]
        page = (await h.get(f"{served.url}/live/actions/{key}?lang=en-US")).text  # type: ignore[attr-defined]
        assert 'id="intent-meta"' in page and nonce in page, page[-3000:]
        hint = page.split('id="reconcile-hint"', 1)[1].split("</p>", 1)[0]
        assert "x402" in hint and nonce in hint and "Idempotency-Key" not in hint, hint
        stats = (await h.get(served.url + "/v1/stats")).json()  # type: ignore[attr-defined]
        [tool] = [t for t in stats["mcp_tools"] if t["tool"] == "get_report"]
        assert tool["unrecorded_successes"] == 1 and tool["unrecorded_refused"] == 1, tool
        assert tool["unrecorded"] == 2 and tool["uncertain"] == 1 and tool["calls"] == 4, tool
        live = (await h.get(served.url + "/live?lang=en-US")).text  # type: ignore[attr-defined]
        assert "Alarm:" in live and "get_report" in live, live[-3000:]


# ---- a way out of a wrong first attempt ------------------------------------------------------------------------

def wrong_total(session: str, model_key: str) -> dict[str, object]:
    from test_protocols import complete_args

    args = complete_args(session, model_key)
    args["payload"]["totals"][0]["amount"] = 17000  # type: ignore[index]
    return args


@pytest.mark.parametrize("opt_in", [False, True])
async def test_acp_a_total_the_merchant_refused_is_superseded_by_the_corrected_call(env: Env, opt_in: bool) -> None:
    from test_protocols import acp_guard, acp_state, complete_args, open_session

    extra = {"on_uncertain": 'on_uncertain = "lookup"\nsupersede_failed = true'} if opt_in else {}
    async with env.agent(acp_guard(env, **extra)) as agent:
        session = await open_session(agent)
        wrong = await agent.call_tool("complete_checkout_session", wrong_total(session, "m-1"))
        assert wrong.is_error and wrong.meta["idem"]["source"] == "upstream", text_of(wrong)
        fixed = await agent.call_tool("complete_checkout_session", complete_args(session, "m-2"))
        again = await agent.call_tool("complete_checkout_session", complete_args(session, "m-3"))
    orders = acp_state(env)["orders"]
    if not opt_in:
        # Frozen for good: every corrected retry resends the wrong total.
        assert fixed.is_error and fixed.meta["idem"]["diverged"] is True, fixed.meta
        assert orders == []
        return
    assert not fixed.is_error, text_of(fixed)
    idem = fixed.meta["idem"]
    assert idem["superseded"] == wrong.meta["idem"]["key"] and idem["key"] != idem["superseded"], idem
    assert again.meta["idem"]["replayed"] is True and again.meta["idem"]["key"] == idem["key"]
    assert len(orders) == 1 and orders[0]["amount"] == 18000 and orders[0]["idempotency_key"] == idem["key"], orders


def expiring(required: dict[str, object], seconds: int) -> dict[str, object]:
    out = json.loads(json.dumps(required))
    out["accepts"][0]["maxTimeoutSeconds"] = seconds  # type: ignore[index]
    return out


async def test_x402_an_expired_authorization_is_released_through_v1_and_paid_once(env: Env) -> None:
    import httpx2
    from conftest import Served

    # `idem serve` knows the built-in actions and x402.pay.
    both = env.tmp / "catalog.toml"
    root = Path(__file__).resolve().parents[3]
    both.write_text((root / "core" / "default-catalog.toml").read_text() + "\n"
                    + (EXAMPLES / "x402" / "catalog.toml").read_text())
    served = Served(env, ["--catalog", str(both)])
    env.tenant = served.tenant
    async with env.agent(x402_guard(env)) as agent:
        required = await requirements(agent)
        stale = sign(expiring(required, 1))
        time.sleep(2.2)  # a facilitator outage: the authorization expires
        expired = await agent.call_tool("get_report", {"report": "fx/2026-12"}, meta=stale)
        assert expired.is_error and expired.meta["idem"]["source"] == "upstream", text_of(expired)
        # Without a way out the resource is unpurchasable: the frozen
        # expired authorization is what every retry sends.
        retried = await agent.call_tool("get_report", {"report": "fx/2026-12"}, meta=sign(required))
        assert retried.is_error and retried.meta["idem"]["diverged_meta"] == ["x402/payment"], retried.meta
        assert ledger(env) == []
        async with httpx2.AsyncClient(headers={"authorization": f"Bearer {served.token}"}) as h:  # type: ignore[attr-defined]
            url = f"{served.url}/v1/intents/x402.pay/fx%2F2026-12/supersede"  # type: ignore[attr-defined]
            r = await h.post(url, json={"reason": "the authorization expired during a facilitator outage"})
            assert r.status_code == 200, r.text
            body = r.json()
            assert body["released"] is True and body["superseded_key"] == expired.meta["idem"]["key"], body
            # Twice: the new action has not failed.
            twice = await h.post(url, json={"reason": "again"})
            assert twice.status_code == 409 and "not started" in twice.json()["detail"], twice.text
        paid = await agent.call_tool("get_report", {"report": "fx/2026-12"}, meta=sign(required))
        assert not paid.is_error, text_of(paid)
        assert paid.meta["idem"]["key"] == body["key"]
        resigned = await agent.call_tool("get_report", {"report": "fx/2026-12"}, meta=sign(required))
        assert resigned.meta["idem"]["replayed"] is True
    assert len(ledger(env)) == 1, ledger(env)
    async with httpx2.AsyncClient(headers={"authorization": f"Bearer {served.token}"}) as h:
        page = (await h.get(f"{served.url}/live/actions/{expired.meta['idem']['key']}?lang=en-US")).text
        assert 'id="action-superseded"' in page and "facilitator outage" in page and body["key"] in page, page[-2000:]
    served.stop()


async def test_x402_an_expired_authorization_is_superseded_by_a_call_signed_anew_where_the_guard_opts_in(env: Env) -> None:
    guard = x402_guard(env, on_uncertain='on_uncertain = "resend"\nsupersede_failed = true')
    async with env.agent(guard) as agent:
        required = await requirements(agent)
        stale = sign(expiring(required, 1))
        time.sleep(2.2)
        expired = await agent.call_tool("get_report", {"report": "fx/2026-12"}, meta=stale)
        assert expired.is_error, text_of(expired)
        paid = await agent.call_tool("get_report", {"report": "fx/2026-12"}, meta=sign(required))
        assert not paid.is_error, text_of(paid)
        assert paid.meta["idem"]["superseded"] == expired.meta["idem"]["key"], paid.meta
    assert len(ledger(env)) == 1, ledger(env)


async def test_supersede_intent_through_idem_s_own_mcp_server(env: Env, served: object) -> None:
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    payload = {"cliente_id": "c-1", "valor": "170.00", "chave_pix_destino": "fulano@example.com",
               "referencia_intencao": "MCP-SUP"}
    async with httpx2.AsyncClient(headers={"authorization": f"Bearer {served.token}"}) as h:  # type: ignore[attr-defined]
        base = served.url  # type: ignore[attr-defined]
        rec = (await h.post(base + "/v1/intents", json={"action": "pix.cobranca", "payload": payload,
                                                        "claim": {"lease_ms": 30000}})).json()
        async with streamable_http_client(base + "/mcp", http_client=h) as (r, w):
            async with ClientSession(r, w) as s:
                await s.initialize()
                args = {"action": "pix.cobranca", "reference": "MCP-SUP", "reason": "the bank refused the amount"}
                running = await s.call_tool("supersede_intent", args)
                assert running.is_error and "started" in text_of(running), text_of(running)
                failed = await h.post(f"{base}/v1/actions/{rec['key']}/fail",
                                      json={"token": rec["claim"]["token"], "error": "refused", "retryable": False})
                assert failed.status_code == 200, failed.text
                bad = await s.call_tool("supersede_intent", {**args, "candidate": [1]})
                assert bad.is_error and "argument `candidate`" in text_of(bad), text_of(bad)
                done = await s.call_tool("supersede_intent", {**args, "candidate": {**payload, "valor": "180.00"}})
                assert not done.is_error, text_of(done)
                view = done.structured_content
                assert view is not None and view["revision"] == 2 and view["key"] != rec["key"], view
                assert view["payload"]["valor"] == "18000"
                again = await s.call_tool("supersede_intent", args)
                assert again.is_error and "not started" in text_of(again), text_of(again)


# ---- the guard-file mistakes a reader of the book makes ----------------------------------------------------------

# (example, what the mistake is, old text, new text, the line it is on (a
# needle of the mutated file), what the refusal says). Every one is refused
# when the gateway starts, with exit 2, the file, the line and the fix.
MISTAKES: list[tuple[str, str, str, str, str, str]] = [
    ("x402", "a / inside the entry's name not written ~1", "meta:/x402~1payment/payload/authorization/from",
     "meta:/x402/payment/payload/authorization/from", "payer = ", '"meta:/x402~1payment/payload/authorization/from"'),
    ("x402", "every pointer unescaped, and freeze_meta = [\"x402\"] as the old advice said", "x402~1payment",
     "x402/payment", "amount = ", "~1"),
    ("x402", "freeze_meta left out", 'freeze_meta = ["x402/payment"]\n', "", "amount = ", "freeze_meta does not name"),
    ("x402", "meta: without its pointer's /", '"meta:/x402~1payment/accepted/asset"', '"meta:x402~1payment/accepted/asset"',
     "asset = ", "after `meta:` comes a JSON Pointer"),
    ("x402", "~ not followed by 0 or 1", "x402~1payment/accepted/payTo", "x402~2payment/accepted/payTo", "pay_to = ",
     "is not a JSON Pointer"),
    ("x402", "a field name the action lacks", "payer = ", "payr = ", "payr = ", 'has no field "payr"'),
    ("x402", "a field left out", 'payer = "meta:/x402~1payment/payload/authorization/from"\n', "", "[guard.fields]",
     'no argument maps to field "payer"'),
    ("x402", "a tool argument the tool does not declare", 'resource = "report"', 'resource = "reprt"', "resource = ",
     'declares no argument "reprt"'),
    ("x402", "a tool the upstream lacks", 'tool = "get_report"', 'tool = "get_reprt"', "tool = ", 'no tool "get_reprt"'),
    ("x402", "an action the catalog lacks", 'action = "x402.pay"', 'action = "x402.payy"', "action = ",
     'unknown action "x402.payy"'),
    ("x402", "an on_uncertain that is none", 'on_uncertain = "resend"', 'on_uncertain = "retry"', "on_uncertain = ",
     "not a guard file"),
    ("x402", "a lease of zero", 'on_uncertain = "resend"', 'on_uncertain = "resend"\nlease_ms = 0', "lease_ms = ",
     "lease_ms must be"),
    ("x402", "a lease written as text", 'on_uncertain = "resend"', 'on_uncertain = "resend"\nlease_ms = "15000"',
     "lease_ms = ", "not a guard file"),
    ("x402", "the key argument read from _meta", 'on_uncertain = "resend"',
     'on_uncertain = "resend"\nkey_argument = "meta:/x402~1payment/payload/authorization/nonce"', "key_argument = ",
     "only a [guard.fields] value"),
    ("x402", "freezing the agent's progress token", 'freeze_meta = ["x402/payment"]',
     'freeze_meta = ["x402/payment", "progressToken"]', "freeze_meta = ", "not an entry a call forwards"),
    ("x402", "freezing an entry twice", 'freeze_meta = ["x402/payment"]', 'freeze_meta = ["x402/payment", "x402/payment"]',
     "freeze_meta = ", "twice"),
    ("x402", "[guard.fields] misspelt", "[guard.fields]", "[guard.feilds]", "[guard.feilds]", "not a guard file"),
    ("x402", "[[guard]] misspelt", "[[guard]]", "[[guards]]", "[[guards]]", "not a guard file"),
    ("x402", "[upstream] command misspelt", "command = [", "commmand = [", "commmand = ", "not a guard file"),
    ("acp", "the key argument's name misspelt", 'key_argument = "/meta/idempotency_key"',
     'key_argument = "/meta/idempotencykey"', "key_argument = ", "/meta/idempotencykey"),
    ("acp", "an array's index left out", 'amount = "/payload/totals/0/amount"', 'amount = "/payload/totals/amount"',
     "amount = ", "/payload/totals/amount"),
    ("acp", "a pointer without its leading /", 'checkout_session_id = "/payload/checkout_session_id"',
     'checkout_session_id = "payload/checkout_session_id"', "checkout_session_id = ",
     'declares no argument "payload/checkout_session_id"'),
    ("acp", "the key argument over a field's argument", 'key_argument = "/meta/idempotency_key"',
     'key_argument = "/payload/checkout_session_id"', "key_argument = ", "overwrites it with the key"),
    ("acp", "a lookup tool the merchant lacks", 'tool = "get_checkout_session"', 'tool = "get_checkout"', "[guard.lookup]",
     'no tool "get_checkout"'),
    ("acp", "the guarded tool as its own lookup", 'tool = "get_checkout_session"',
     'tool = "complete_checkout_session"', "[guard.lookup]", "a lookup must read, never act"),
    ("acp", "a lookup argument the lookup tool does not take", "arguments = { id = ", "arguments = { session_id = ",
     "[guard.lookup]", 'declares no argument "session_id"'),
    ("acp", "an executed pointer the result never has", 'executed = { pointer = "/status"',
     'executed = { pointer = "/state"', "[guard.lookup]", "/state (executed.pointer)"),
    ("acp", "a result pointer the result never has (the book's old /order)", "matches = {",
     'result = "/order"\nmatches = {', "[guard.lookup]", "/order (result)"),
    ("acp", "a matches pointer the result never has", 'amount = "/totals/0/amount" }', 'amount = "/total" }',
     "[guard.lookup]", "/total (matches.amount)"),
    ("acp", "one value meaning executed and not executed", '"canceled"]', '"canceled", "completed"]', "[guard.lookup]",
     "in both"),
    ("acp", "a lookup table with on_uncertain = refuse", 'on_uncertain = "lookup"', 'on_uncertain = "refuse"',
     "[guard.lookup]", "only with on_uncertain"),
    ("acp", "on_uncertain = lookup with no table", "[guard.lookup]", "[guard.lookup_]", "[guard.lookup_]",
     "not a guard file"),
    ("acp", "a lookup by reference for two tenants on one upstream", "[upstream]", 'tenants = ["alpha", "beta"]\n[upstream]',
     "[guard.lookup]", "$key"),
]


@pytest.mark.parametrize("example", ["x402", "acp"])
def test_each_likely_guard_file_mistake_is_refused_at_start_naming_its_line(env: Env, example: str) -> None:
    from test_gateway import refused_at_start
    from test_protocols import acp_guard

    shipped = (x402_guard(env) if example == "x402" else acp_guard(env)).read_text()
    env.catalog = EXAMPLES / example / "catalog.toml"
    cases = []
    for ex, what, old, new, needle, says in MISTAKES:
        if ex != example:
            continue
        assert old in shipped, (what, old)
        text = shipped.replace(old, new, -1 if what.startswith("every") else 1)
        if what.startswith("every"):
            text = text.replace('freeze_meta = ["x402/payment"]', 'freeze_meta = ["x402"]')
        line = next(i for i, l in enumerate(text.splitlines(), 1) if l.startswith(needle) or l == needle)
        cases.append((text, f":{line}:", says))
    refused_at_start(env, cases)


def test_a_misspelt_meta_pointer_is_shown_by_check_before_money_moves(env: Env) -> None:
    """A pointer into _meta has no schema to be checked against at start:
    a call missing it is refused with nothing recorded, and `--check`
    with a sample call shows it beforehand."""
    guard = x402_guard(env)
    guard.write_text(guard.read_text().replace("accepted/amount", "accepted/amout"))
    env.catalog = EXAMPLES / "x402" / "catalog.toml"
    sample = env.tmp / "sample.json"
    sample.write_text(json.dumps({"tool": "get_report", "arguments": {"report": "fx/2026-12"}, "_meta": {
        "x402/payment": {"accepted": {"amount": "10000", "asset": "0xAB", "payTo": "0xCD"},
                         "payload": {"authorization": {"from": "0xEF"}}}}}))
    done = subprocess.run([IDEM, "mcp", "gateway", "--guard", str(guard), "--catalog", str(env.catalog), "--check",
                           "--sample", str(sample)], capture_output=True, text=True, timeout=60,
                          env={**os.environ, **env.env()}, stdin=subprocess.DEVNULL)
    line = line_of(guard, "amount = ")
    assert done.returncode == 0 and "REFUSED, nothing recorded: missing _meta entry" in done.stdout, done.stdout
    assert f"line {line}" in done.stdout, done.stdout


def test_a_mount_for_two_tenants_starts_only_with_lookups_by_key(env: Env) -> None:
    """One upstream, one set of credentials, two tenants: a record found by
    reference could be the other tenant's charge."""
    from test_gateway import LOOKUP_GUARD

    a, b = ("pair" + uuid.uuid4().hex[:6] for _ in range(2))
    for t in (a, b):
        env.idem("tenant", "create", t)
    by_reference = env.guard_file(extra=LOOKUP_GUARD, top=f'tenants = ["{a}", "{b}"]')
    lookup_line = by_reference.read_text().splitlines().index("[guard.lookup]") + 1
    done = subprocess.run([IDEM, "serve", "--addr", "127.0.0.1:0", "--mcp-gateway", f"pay={by_reference}",
                           *env.db_args()], capture_output=True, text=True, timeout=60,
                          env={**os.environ, **env.env()}, stdin=subprocess.DEVNULL)
    assert done.returncode == 2, done.stderr[-2000:]
    assert f"{by_reference}:{lookup_line}:" in done.stderr and "$key" in done.stderr, done.stderr[-2000:]
    by_key = env.guard_file(extra=LOOKUP_GUARD.replace('arguments = { id = "/payload/checkout_session_id" }',
                                                       'arguments = { id = "/payload/checkout_session_id", key = "$key" }'),
                            top=f'tenants = ["{a}", "{b}"]')
    check = subprocess.run([IDEM, "mcp", "gateway", "--guard", str(by_key), "--check"], capture_output=True,
                           text=True, timeout=60, env={**os.environ, **env.env()}, stdin=subprocess.DEVNULL)
    # pay_server's get_checkout takes no `key`: refused, naming the argument.
    assert check.returncode == 2 and 'declares no argument "key"' in check.stderr, check.stderr


async def test_two_tenants_on_one_mount_looking_up_by_key_never_cross(env: Env) -> None:
    """Alpha's order exists for checkout cs_T; beta's call for the same
    checkout never reaches the merchant (lost). Looked up by beta's key,
    nothing is found: beta is never settled with alpha's order, and never
    sees it."""
    import re

    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    from test_gateway import LOOKUP_GUARD, checkout_args

    tenants = {}
    for name in ("alpha" + uuid.uuid4().hex[:6], "beta" + uuid.uuid4().hex[:6]):
        tenants[name] = env.idem("tenant", "create", name).stdout.strip()
    alpha, beta = tenants
    by_key = LOOKUP_GUARD.replace('tool = "get_checkout"', 'tool = "get_order_by_key"').replace(
        'arguments = { id = "/payload/checkout_session_id" }', 'arguments = { key = "$key" }').replace(
        'in = ["ready_for_payment", "canceled"]', 'in = ["none"]')
    guard = env.guard_file(extra=by_key, top=f'tenants = ["{alpha}", "{beta}"]')
    log = env.tmp / "serve-two.log"
    proc = subprocess.Popen([IDEM, "serve", "--addr", "127.0.0.1:0", "--mcp-gateway", f"pay={guard}", *env.db_args()],
                            stdout=open(log, "w"), stderr=subprocess.STDOUT, env={**os.environ, **env.env()})
    env.processes.append(proc)  # type: ignore[arg-type]
    wait_for(lambda: re.search(r"listening on (http://[0-9.:]+)", log.read_text()) is not None or proc.poll() is not None)
    found = re.search(r"listening on (http://[0-9.:]+)", log.read_text())
    assert found, log.read_text()[-2000:]
    url = found.group(1) + "/mcp/gateways/pay"

    async def call(tenant: str, model_key: str) -> object:
        async with httpx2.AsyncClient(headers={"authorization": f"Bearer {tenants[tenant]}"}) as h:
            async with streamable_http_client(url, http_client=h) as (r, w):
                async with ClientSession(r, w) as s:
                    await s.initialize()
                    return await s.call_tool("complete_checkout", checkout_args("cs_T", model_key))

    first = await call(alpha, "m-a")
    assert not first.is_error, text_of(first)  # type: ignore[attr-defined]
    alpha_order = json.loads(text_of(first))["order_id"]
    (env.tmp / "stall").write_text("")  # beta's request never reaches the merchant
    lost = await call(beta, "m-b")
    idem = lost.meta["idem"]  # type: ignore[attr-defined]
    assert lost.is_error and idem["lookup"] in ("not_executed", "unknown"), (idem, text_of(lost))  # type: ignore[attr-defined]
    assert alpha_order not in json.dumps(lost.model_dump(mode="json")), "beta was shown alpha's order"  # type: ignore[attr-defined]
    assert idem["key"] != first.meta["idem"]["key"]  # type: ignore[attr-defined]
    assert [e["order_id"] for e in env.executions()] == [alpha_order]
