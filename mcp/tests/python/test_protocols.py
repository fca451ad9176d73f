"""Agent payments through the gateway: the ACP merchant and the x402
resource server of examples/mcp/, their catalogs and guard files as
shipped, the official MCP Python SDK as the agent. Each test runs on
SQLite and, with IDEM_TEST_POSTGRES_URL, on PostgreSQL.

Each protocol's first test also calls its upstream directly, without the
gateway, and shows the double payment the gateway prevents: the same
client, the same retries, two orders or two transfers."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator, Callable

import pytest
from eth_account import Account
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from x402.mechanisms.evm.exact.client import ExactEvmScheme
from x402.schemas import PaymentRequirements

from test_gateway import IDEM, Env, refused_at_start, text_of

pytestmark = pytest.mark.anyio

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "mcp"
# A throwaway test key: the payer's wallet, signing offline.
PAYER = Account.from_key("0x" + "5a" * 32)


def example_guard(env: Env, name: str, script: str, upstream_env: dict[str, str], **replace: str) -> Path:
    """examples/mcp/NAME/guard.toml as shipped, but for its [upstream]'s
    command and env (this venv's Python, this test's files) and `replace`'s
    line prefixes (e.g. lease_ms="lease_ms = 1500"). Uses the example's catalog."""
    env.catalog = EXAMPLES / name / "catalog.toml"
    lines = []
    for line in (EXAMPLES / name / "guard.toml").read_text().splitlines():
        if line.startswith("command = "):
            line = f"command = [{json.dumps(sys.executable)}, {json.dumps(str(EXAMPLES / name / script))}]"
        elif line.startswith("env = "):
            line = "env = { " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in upstream_env.items()) + " }"
        for prefix, new in replace.items():
            if line.startswith(prefix):
                line = new
        lines.append(line)
    path = env.tmp / f"{name}-{len(list(env.tmp.glob(name + '-*')))}.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


@asynccontextmanager
async def direct(env: Env, name: str, script: str, **upstream_env: str) -> AsyncIterator[ClientSession]:
    """The upstream with no gateway in front: what the agent had before."""
    params = StdioServerParameters(command=sys.executable, args=[str(EXAMPLES / name / script)],
                                   env={"PATH": os.environ.get("PATH", ""), **upstream_env})
    with open(env.tmp / "direct.log", "a") as log:
        async with stdio_client(params, errlog=log) as (r, w):
            async with ClientSession(r, w) as s:
                await s.initialize()
                yield s


class RawGateway:
    """A gateway driven by raw JSON-RPC over its stdio, so a test can
    SIGKILL it mid-call."""

    def __init__(self, env: Env, guard: Path) -> None:
        self.proc = subprocess.Popen([IDEM, *env.gateway_args(guard)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=open(env.tmp / "killed.log", "a"), env=env.env())
        self.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}})
        assert self.proc.stdout is not None
        assert json.loads(self.proc.stdout.readline())["id"] == 1
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, msg: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(msg) + "\n").encode())
        self.proc.stdin.flush()

    def call(self, tool: str, arguments: dict[str, Any], meta: dict[str, Any] | None = None) -> None:
        params: dict[str, Any] = {"name": tool, "arguments": arguments}
        if meta:
            params["_meta"] = meta
        self.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params})

    def kill(self) -> None:
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()


def wait_for(what: Callable[[], bool], seconds: float = 30) -> None:
    give_up = time.monotonic() + seconds
    while not what():
        assert time.monotonic() < give_up, "timed out"
        time.sleep(0.05)


# ---- ACP ---------------------------------------------------------------------------------------------------------

def read_locked(path: Path) -> dict[str, Any] | None:
    """A stand-in's file, read under its lock (never half-written)."""
    if not path.exists():
        return None
    with open(path) as f:
        fcntl.flock(f, fcntl.LOCK_SH)
        text = f.read()
    return json.loads(text) if text.strip() else None


def acp_state(env: Env) -> dict[str, Any]:
    return read_locked(env.tmp / "acp.json") or {"orders": [], "sessions": {}}


def acp_guard(env: Env, **replace: str) -> Path:
    return example_guard(env, "acp", "merchant.py", {"ACP_STATE": str(env.tmp / "acp.json"),
                                                      "ACP_STALL_IF": str(env.tmp / "stall"),
                                                      **replace.pop("upstream_env", {})}, **replace)  # type: ignore[arg-type]


def complete_args(session: str, model_key: str, quantity: int = 2) -> dict[str, Any]:
    """What the model sends: its own key, the cart as it last saw it."""
    return {"meta": {"idempotency_key": model_key},
            "payload": {"checkout_session_id": session, "currency": "brl",
                        "buyer": {"email": "Ana@Example.com", "first_name": "Ana"},
                        "items": [{"id": "coffee-1kg", "quantity": quantity}],
                        "totals": [{"type": "total", "display_text": "Total", "amount": 9000 * quantity}],
                        "payment_data": {"token": "spt_test_123", "provider": "stripe"}}}


async def open_session(agent: ClientSession) -> str:
    created = await agent.call_tool("create_checkout_session", {
        "meta": {}, "payload": {"items": [{"id": "coffee-1kg", "quantity": 2}], "currency": "brl"}})
    assert not created.is_error, text_of(created)
    assert created.structured_content is not None
    return str(created.structured_content["id"])


async def test_acp_five_model_keys_one_order_and_a_changed_cart_diverges(env: Env) -> None:
    # Without the gateway: five keys the model minted, five orders.
    async with direct(env, "acp", "merchant.py", ACP_STATE=str(env.tmp / "direct.json")) as merchant:
        session = await open_session(merchant)
        for i in range(5):
            out = await merchant.call_tool("complete_checkout_session", complete_args(session, f"model-{i}"))
            assert not out.is_error, text_of(out)
    assert len((read_locked(env.tmp / "direct.json") or {})["orders"]) == 5

    async with env.agent(acp_guard(env)) as agent:
        session = await open_session(agent)  # not guarded: passes through
        outs = [await agent.call_tool("complete_checkout_session", complete_args(session, f"model-{i}"))
                for i in range(5)]
        assert all(not o.is_error for o in outs), [text_of(o) for o in outs]
        orders = {o.structured_content["orders"][0]["id"] for o in outs if o.structured_content}
        assert len(orders) == 1, orders
        assert [o.meta["idem"]["replayed"] for o in outs] == [False, True, True, True, True]
        # The model re-reads the cart, changes the quantity and the total:
        # the same session, another order? No: the frozen one stands.
        changed = await agent.call_tool("complete_checkout_session", complete_args(session, "model-9", quantity=3))
        assert not changed.is_error, text_of(changed)
        assert changed.meta["idem"]["diverged"] is True and changed.meta["idem"]["replayed"] is True
        assert changed.structured_content["orders"][0]["id"] in orders
        assert "differs from the frozen intent" in text_of(changed), text_of(changed)
    placed = acp_state(env)["orders"]
    assert len(placed) == 1, placed
    # The merchant saw idem's key, never the model's.
    assert placed[0]["idempotency_key"] == outs[0].meta["idem"]["key"]


async def test_acp_gateway_killed_while_complete_runs_is_settled_by_lookup(env: Env) -> None:
    async with env.agent(acp_guard(env)) as agent:
        session = await open_session(agent)
    slow = acp_guard(env, lease_ms="lease_ms = 1500", upstream_env={"ACP_DELAY_MS": "5000"})
    gw = RawGateway(env, slow)
    gw.call("complete_checkout_session", complete_args(session, "model-1"))
    wait_for(lambda: len(acp_state(env)["orders"]) == 1)  # placed; its answer never comes back
    gw.kill()
    time.sleep(1.6)  # the claim's lease runs out
    async with env.agent(acp_guard(env, lease_ms="lease_ms = 1500")) as agent:
        retried = await agent.call_tool("complete_checkout_session", complete_args(session, "model-2"))
        assert not retried.is_error, text_of(retried)
        idem = retried.meta["idem"]
        assert idem["lookup"] == "executed" and idem["reconciled"] is True, idem
        session_now = retried.structured_content
        assert session_now is not None and session_now["status"] == "completed"
        assert session_now["orders"][0]["id"] == acp_state(env)["orders"][0]["id"]
        again = await agent.call_tool("complete_checkout_session", complete_args(session, "model-3"))
        assert again.meta["idem"]["replayed"] and again.structured_content == session_now
    assert len(acp_state(env)["orders"]) == 1


async def test_acp_gateway_killed_before_the_merchant_got_it_runs_once(env: Env) -> None:
    async with env.agent(acp_guard(env)) as agent:
        session = await open_session(agent)
    (env.tmp / "stall").write_text("")  # the request never reaches the merchant
    gw = RawGateway(env, acp_guard(env, lease_ms="lease_ms = 1500"))
    gw.call("complete_checkout_session", complete_args(session, "model-1"))
    wait_for((env.tmp / "stall.seen").exists)  # recorded, claimed and forwarded
    gw.kill()
    (env.tmp / "stall").unlink()
    time.sleep(3.5)  # the lease ran out; the stalled request ended without an order
    assert acp_state(env)["orders"] == []
    async with env.agent(acp_guard(env, lease_ms="lease_ms = 1500")) as agent:
        retried = await agent.call_tool("complete_checkout_session", complete_args(session, "model-2"))
        assert not retried.is_error, text_of(retried)
        idem = retried.meta["idem"]
        assert idem["lookup"] == "not_executed" and idem["reconciled"] is False and idem["attempt"] == 2, idem
    placed = acp_state(env)["orders"]
    assert len(placed) == 1 and placed[0]["idempotency_key"] == idem["key"], placed


# ---- x402 --------------------------------------------------------------------------------------------------------

def ledger(env: Env) -> list[dict[str, Any]]:
    state = read_locked(env.tmp / "x402.json")
    return state["transfers"] if state else []


def x402_guard(env: Env, **replace: str) -> Path:
    return example_guard(env, "x402", "resource_server.py", {"X402_LEDGER": str(env.tmp / "x402.json"),
                                                              **replace.pop("upstream_env", {})}, **replace)  # type: ignore[arg-type]


def sign(required: dict[str, Any]) -> dict[str, Any]:
    """What an x402 client does on every try: sign a new authorization
    (a new random 32-byte nonce) for the requirements the server stated."""
    requirements = PaymentRequirements.model_validate(required["accepts"][0])
    payload = ExactEvmScheme(PAYER).create_payment_payload(requirements)
    return {"x402/payment": {"x402Version": 2, "resource": required["resource"],
                             "accepted": required["accepts"][0], "payload": payload}}


async def requirements(agent: ClientSession) -> dict[str, Any]:
    unpaid = await agent.call_tool("get_report", {"report": "fx/2026-12"})
    assert unpaid.is_error and unpaid.structured_content is not None, text_of(unpaid)
    return unpaid.structured_content


async def test_x402_a_client_re_signing_every_retry_pays_once(env: Env) -> None:
    # Without the gateway: two tries, two signatures, two transfers.
    async with direct(env, "x402", "resource_server.py", X402_LEDGER=str(env.tmp / "x402.json")) as server:
        required = await requirements(server)
        for _ in range(2):
            out = await server.call_tool("get_report", {"report": "fx/2026-11"}, meta=sign(required))
            assert not out.is_error, text_of(out)
    assert len(ledger(env)) == 2
    (env.tmp / "x402.json").unlink()

    async with env.agent(x402_guard(env)) as agent:
        # The 402 handshake carries no payment: forwarded, nothing recorded.
        unpaid = await agent.call_tool("get_report", {"report": "fx/2026-12"})
        assert unpaid.is_error and unpaid.meta["idem"]["recorded"] is False, unpaid.meta
        required = unpaid.structured_content
        assert required is not None and required["accepts"][0]["amount"] == "10000"
        tries = [sign(required) for _ in range(4)]
        outs = [await agent.call_tool("get_report", {"report": "fx/2026-12"}, meta=m) for m in tries]
        assert all(not o.is_error for o in outs), [text_of(o) for o in outs]
        receipts = [o.meta["x402/payment-response"] for o in outs]
        assert receipts == [receipts[0]] * 4 and receipts[0]["success"] is True, receipts
        assert [o.meta["idem"]["diverged_meta"] for o in outs] == [[]] + [["x402/payment"]] * 3
        assert [o.meta["idem"]["replayed"] for o in outs] == [False, True, True, True]
        # Another report is another payment.
        other = await agent.call_tool("get_report", {"report": "fx/2026-13"}, meta=sign(required))
        assert not other.is_error and other.meta["idem"]["key"] != outs[0].meta["idem"]["key"]
    first_nonce = tries[0]["x402/payment"]["payload"]["authorization"]["nonce"]
    assert [t["nonce"] for t in ledger(env)][:1] == [first_nonce] and len(ledger(env)) == 2, ledger(env)
    assert {t["from"] for t in ledger(env)} == {PAYER.address}


async def test_x402_a_gateway_killed_after_forwarding_resends_the_same_nonce(env: Env) -> None:
    async with env.agent(x402_guard(env)) as agent:
        required = await requirements(agent)
    first = sign(required)
    gw = RawGateway(env, x402_guard(env, on_uncertain='on_uncertain = "resend"\nlease_ms = 1500',
                                    upstream_env={"X402_DELAY_MS": "5000"}))
    gw.call("get_report", {"report": "fx/2026-12"}, meta=first)
    wait_for(lambda: len(ledger(env)) == 1)  # settled; its answer never comes back
    gw.kill()
    time.sleep(1.6)
    async with env.agent(x402_guard(env, on_uncertain='on_uncertain = "resend"\nlease_ms = 1500')) as agent:
        retried = await agent.call_tool("get_report", {"report": "fx/2026-12"}, meta=sign(required))
        assert not retried.is_error, text_of(retried)
        assert retried.meta["idem"]["reconciled"] is True and retried.meta["idem"]["attempt"] == 2, retried.meta
        assert retried.meta["idem"]["diverged_meta"] == ["x402/payment"]
        assert retried.meta["x402/payment-response"]["success"] is True
    transfers = ledger(env)
    assert len(transfers) == 1, transfers
    assert transfers[0]["nonce"] == first["x402/payment"]["payload"]["authorization"]["nonce"]


async def test_an_x402_payment_with_a_changed_amount_is_another_intent_answered_from_the_store(env: Env) -> None:
    async with env.agent(x402_guard(env)) as agent:
        required = await requirements(agent)
        paid = await agent.call_tool("get_report", {"report": "fx/2026-12"}, meta=sign(required))
        assert not paid.is_error, text_of(paid)
        # The same report, a payment for another amount: the key covers the
        # amount, so it is the same reference with other fields: diverged,
        # answered from the store, never sent.
        more = json.loads(json.dumps(required))
        more["accepts"][0]["amount"] = "20000"
        changed = await agent.call_tool("get_report", {"report": "fx/2026-12"}, meta=sign(more))
        assert changed.meta["idem"]["diverged"] is True and changed.meta["idem"]["replayed"] is True, changed.meta
        assert changed.meta["x402/payment-response"] == paid.meta["x402/payment-response"]
    assert len(ledger(env)) == 1


def test_bad_protocol_guard_files_are_refused_at_start(env: Env) -> None:
    acp = acp_guard(env).read_text()
    lines = acp.split("\n")
    field_line = f":{next(i for i, l in enumerate(lines) if l.startswith('amount = ')) + 1}:"
    lookup_line = f":{lines.index('[guard.lookup]') + 1}:"
    x402 = x402_guard(env).read_text()
    xl = x402.split("\n")
    payer_line = f":{next(i for i, l in enumerate(xl) if l.startswith('payer = ')) + 1}:"
    key_line = f":{next(i for i, l in enumerate(xl) if l.startswith('freeze_meta')) + 1}:"
    env.catalog = EXAMPLES / "acp" / "catalog.toml"
    refused_at_start(env, [
        (acp.replace('amount = "/payload/totals/0/amount"', 'amount = "/payload/totalz/0/amount"'), field_line,
         "/payload/totalz/0/amount"),
        (acp.replace('tool = "get_checkout_session"', 'tool = "get_checkout"'), lookup_line, 'no tool "get_checkout"'),
        (acp.replace('tool = "get_checkout_session"', 'tool = "complete_checkout_session"'), lookup_line,
         "a lookup must read, never act"),
    ])
    env.catalog = EXAMPLES / "x402" / "catalog.toml"
    refused_at_start(env, [
        (x402.replace('freeze_meta = ["x402/payment"]', ''),
         f":{next(i for i, l in enumerate(xl) if l.startswith('amount = ')) + 1}:", "freeze_meta does not name"),
        (x402.replace('payer = "meta:/x402~1payment/payload/authorization/from"', 'payer = "meta:x402/payment"'),
         payer_line, "after `meta:` comes a JSON Pointer"),
        (x402.replace('freeze_meta = ["x402/payment"]',
                      'freeze_meta = ["x402/payment"]\nkey_argument = "meta:/x402~1payment/payload/nonce"'),
         f":{int(key_line.strip(':')) + 1}:", "only a [guard.fields] value"),
    ])


@pytest.mark.parametrize("name", ["acp", "x402"])
async def test_each_example_starts_as_its_readme_says(env: Env, name: str) -> None:
    """The README's command, as printed, from the repository root (this
    venv's python3 first on PATH, as a reader's with `mcp` installed)."""
    readme = (EXAMPLES / name / "README.md").read_text()
    command = readme.split("```sh\n", 1)[1].split("```", 1)[0].replace("\\\n", " ").split()
    assert command[:3] == ["idem", "mcp", "gateway"], command
    tenant = command[command.index("--tenant") + 1]
    env.idem("tenant", "create", tenant)
    path = f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"
    params = StdioServerParameters(command=IDEM, args=[*command[1:], *env.db_args()],
                                   env=env.env(PATH=path), cwd=str(EXAMPLES.parents[1]))
    with open(env.tmp / "readme.log", "a") as log:
        async with stdio_client(params, errlog=log) as (r, w):
            async with ClientSession(r, w) as agent:
                await agent.initialize()
                tools = {t.name: t for t in (await agent.list_tools()).tools}
                guarded = "complete_checkout_session" if name == "acp" else "get_report"
                assert "Guarded by idem" in (tools[guarded].description or ""), tools[guarded]
