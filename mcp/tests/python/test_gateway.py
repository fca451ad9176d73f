"""The MCP gateway driven by the official Python MCP SDK, in front of an
upstream written with the same SDK that honours idempotency keys and
writes every real execution to a ledger (the oracle). Each test runs on
SQLite and, with IDEM_TEST_POSTGRES_URL, on PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

HERE = Path(__file__).resolve().parent
IDEM = os.environ.get("IDEM_BIN", str(HERE.parents[2] / "target" / "debug" / "idem"))
SECRET = "mcp-gateway-tests-only-secret-0123456789"

pytestmark = pytest.mark.anyio


class Env:
    """One test's store (SQLite file or PostgreSQL schema), tenant, guard
    file and ledger."""

    def __init__(self, tmp: Path, database_url: str | None) -> None:
        self.processes: list[subprocess.Popen[bytes]] = []
        self.tmp = tmp
        self.database_url = database_url
        self.ledger = tmp / "ledger.json"
        # A catalog file for guards whose actions are not built in.
        self.catalog: Path | None = None
        self.upstream_user: str | None = "root" if os.geteuid() == 0 else None
        self.tenant = "mcp" + uuid.uuid4().hex[:10]
        self.idem("tenant", "create", self.tenant)

    def db_args(self) -> list[str]:
        args = ["--data-dir", str(self.tmp / "data")]
        if self.database_url:
            args += ["--database-url", self.database_url]
        return args

    def env(self, **extra: str) -> dict[str, str]:
        # As root, idem runs a command upstream as `nobody` unless told
        # otherwise; these upstreams run from this venv (under root's home)
        # and write into this test's folder, so they run as root, named.
        user = {"IDEM_UPSTREAM_USER": self.upstream_user} if self.upstream_user else {}
        return {"PAY_LEDGER": str(self.ledger), "IDEMPOTENCY_HMAC_KEY": SECRET, "PATH": os.environ.get("PATH", ""),
                **user, **extra}

    def idem(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([IDEM, *args, *self.db_args()], capture_output=True, text=True,
                              env={**os.environ, **self.env()}, timeout=60)

    def http_upstream(self, **env: str) -> str:
        """The payment server over Streamable HTTP, in a process of its own."""
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        proc = subprocess.Popen([sys.executable, str(HERE / "pay_server.py")], env={**os.environ, **self.env(PAY_HTTP_PORT=str(port), **env)},
                                stdout=subprocess.DEVNULL, stderr=open(self.tmp / "upstream.log", "a"))
        self.processes.append(proc)
        give_up = time.monotonic() + 30
        while time.monotonic() < give_up:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    return f"http://127.0.0.1:{port}/mcp"
            time.sleep(0.05)
        raise RuntimeError((self.tmp / "upstream.log").read_text())

    def close(self) -> None:
        for p in self.processes:
            p.kill()
            p.wait()

    def guard_file(self, on_uncertain: str = "resend", lease_ms: int = 30000, extra: str = "", url: str | None = None,
                   delay_ms: int = 0, top: str = "", pad: int = 0) -> Path:
        path = self.tmp / f"guard-{uuid.uuid4().hex[:6]}.toml"
        # The upstream inherits nothing but PATH, HOME and LANG: what it
        # needs is named here, on the [upstream] table's first line.
        upstream_env = (f"env = {{ PAY_LEDGER = {json.dumps(str(self.ledger))}, PAY_DELAY_MS = \"{delay_ms}\", PAY_PAD = \"{pad}\", "
                        f"PAY_DOWN_IF = {json.dumps(str(self.tmp / 'upstream-down'))}, PAY_STALL_IF = {json.dumps(str(self.tmp / 'stall'))} }}")
        upstream = f"url = {json.dumps(url)}" if url else f"command = [{json.dumps(sys.executable)}, {json.dumps(str(HERE / 'pay_server.py'))}]"
        path.write_text(f"""{top}
[upstream]
{upstream}
{upstream_env}
[[guard]]
tool = "create_pix_charge"
action = "pix.cobranca"
key_argument = "idempotency_key"
lease_ms = {lease_ms}
on_uncertain = "{on_uncertain}"
[guard.fields]
cliente_id = "customer_id"
valor = "amount"
chave_pix_destino = "pix_key"
referencia_intencao = "invoice_ref"
{extra}""")
        return path

    def gateway_args(self, guard: Path) -> list[str]:
        catalog = ["--catalog", str(self.catalog)] if self.catalog else []
        return ["mcp", "gateway", "--guard", str(guard), *catalog, "--tenant", self.tenant, *self.db_args()]

    def executions(self) -> list[dict[str, Any]]:
        if not self.ledger.exists():
            return []
        out: list[dict[str, Any]] = json.loads(self.ledger.read_text() or '{"executions": []}')["executions"]
        return out

    @asynccontextmanager
    async def agent(self, guard: Path, **env: str) -> AsyncIterator[ClientSession]:
        params = StdioServerParameters(command=IDEM, args=self.gateway_args(guard), env=self.env(**env))
        with open(self.tmp / "gateway.log", "a") as log:
            async with stdio_client(params, errlog=log) as (r, w):
                async with ClientSession(r, w) as s:
                    await s.initialize()
                    yield s


def charge_args(ref: str, amount: str = "180.00") -> dict[str, str]:
    return {"customer_id": "c-1", "amount": amount, "pix_key": "fulano@example.com", "invoice_ref": ref}


def text_of(result: Any) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "text", None))


@pytest.mark.parametrize("upstream", ["stdio", "http"])
async def test_first_call_retry_divergence_new_reference_and_pass_through(env: Env, upstream: str) -> None:
    guard = env.guard_file(url=env.http_upstream() if upstream == "http" else None)
    async with env.agent(guard) as agent:
        listed = {t.name: t for t in (await agent.list_tools()).tools}
        assert "run once" in (listed["create_pix_charge"].description or "")
        assert "run once" not in (listed["echo"].description or "")
        assert listed["create_pix_charge"].input_schema["properties"]["amount"]["type"] == "string"

        first = await agent.call_tool("create_pix_charge", charge_args("FAT-1"))
        assert not first.is_error
        meta = first.meta["idem"]
        assert (meta["replayed"], meta["diverged"], meta["attempt"], meta["reconciled"]) == (False, False, 1, False)
        receipt = json.loads(first.content[0].text)
        assert receipt["amount"] == "180.00", "the arguments as sent, never the key's cents"

        again = await agent.call_tool("create_pix_charge", charge_args("FAT-1"))
        assert again.meta["idem"]["replayed"] is True
        assert again.content[0].text == first.content[0].text
        assert "already executed for FAT-1" in text_of(again)
        assert again.structured_content == first.structured_content

        other = await agent.call_tool("create_pix_charge", charge_args("FAT-1", amount="1800.00"))
        assert other.meta["idem"]["diverged"] is True and other.meta["idem"]["replayed"] is True
        assert "1800.00, differs from the frozen intent's 180.00" in text_of(other)
        assert json.loads(other.content[0].text)["amount"] == "180.00"

        new = await agent.call_tool("create_pix_charge", charge_args("FAT-2"))
        assert new.meta["idem"]["replayed"] is False
        assert new.meta["idem"]["key"] != meta["key"]

        echo = await agent.call_tool("echo", {"text": "hi"})
        assert text_of(echo) == "hi" and (echo.meta or {}).get("idem") is None
        resources = await agent.list_resources()
        assert [str(r.uri) for r in resources.resources] == ["pay://fees"]
        fees = await agent.read_resource("pay://fees")
        assert fees.contents[0].text == "pix: 0.00"
        prompts = await agent.list_prompts()
        assert [p.name for p in prompts.prompts] == ["refund_help"]
        got = await agent.get_prompt("refund_help", {"invoice_ref": "FAT-1"})
        assert "FAT-1" in got.messages[0].content.text
    executions = env.executions()
    assert [e["invoice_ref"] for e in executions] == ["FAT-1", "FAT-2"]
    assert all(e["idempotency_key"] == m for e, m in zip(executions, [meta["key"], new.meta["idem"]["key"]]))
    assert executions[0]["amount"] == "180.00"


async def test_a_call_missing_an_argument_or_with_a_refused_value_records_nothing(env: Env) -> None:
    async with env.agent(env.guard_file()) as agent:
        missing = await agent.call_tool("create_pix_charge", {"customer_id": "c-1", "amount": "1.00", "invoice_ref": "X"})
        assert missing.is_error and "missing argument `pix_key`" in text_of(missing)
        # Every guarded answer carries _meta.idem; idem's own refusals say so.
        assert missing.meta["idem"]["source"] == "idem" and missing.meta["idem"]["key"] is None
        nul = await agent.call_tool("create_pix_charge", {**charge_args("FAT-N"), "pix_key": "a\u0000b@example.com"})
        assert nul.is_error and "argument `pix_key`" in text_of(nul) and "NUL" in text_of(nul), text_of(nul)
        bad = await agent.call_tool("create_pix_charge", charge_args("FAT-3", amount="cento e oitenta"))
        assert bad.is_error and "argument `amount`" in text_of(bad)
        deep: dict[str, Any] = {}
        cur = deep
        for _ in range(80):
            cur["x"] = {}
            cur = cur["x"]
        too_deep = await agent.call_tool("create_pix_charge", {**charge_args("FAT-4"), "note": deep})
        assert too_deep.is_error and "deep" in text_of(too_deep)
        huge = await agent.call_tool("create_pix_charge", {**charge_args("FAT-5"), "note": "x" * 70_000})
        assert huge.is_error and "at most" in text_of(huge)
        # The gateway still serves.
        ok = await agent.call_tool("create_pix_charge", charge_args("FAT-6"))
        assert not ok.is_error
    assert [e["invoice_ref"] for e in env.executions()] == ["FAT-6"]


@pytest.mark.parametrize("upstream", ["stdio", "http"])
async def test_eight_agents_in_eight_gateways_call_the_same_charge_once(env: Env, upstream: str) -> None:
    url = env.http_upstream(PAY_DELAY_MS="300") if upstream == "http" else None
    guard = env.guard_file(url=url, delay_ms=300)

    async def one() -> Any:
        async with env.agent(guard) as agent:
            return await agent.call_tool("create_pix_charge", charge_args("FAT-8"))

    results = await asyncio.gather(*(one() for _ in range(8)))
    assert all(not r.is_error for r in results), [text_of(r) for r in results if r.is_error]
    assert sum(1 for r in results if not r.meta["idem"]["replayed"]) == 1
    assert len({r.content[0].text for r in results}) == 1
    assert len(env.executions()) == 1


@pytest.mark.parametrize("upstream", ["stdio", "http"])
@pytest.mark.parametrize("on_uncertain", ["resend", "refuse"])
async def test_a_gateway_killed_while_the_upstream_charges(env: Env, on_uncertain: str, upstream: str) -> None:
    # Over HTTP the upstream outlives the gateway and answers late; over
    # stdio it dies with it after charging.
    url = env.http_upstream(PAY_DELAY_MS="2500") if upstream == "http" else None
    slow = env.guard_file(on_uncertain=on_uncertain, lease_ms=1500, url=url, delay_ms=5000)
    guard = env.guard_file(on_uncertain=on_uncertain, lease_ms=1500, url=url)
    gw = subprocess.Popen([IDEM, *env.gateway_args(slow)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=open(env.tmp / "killed.log", "w"), env=env.env())
    assert gw.stdin is not None and gw.stdout is not None

    def send(msg: dict[str, Any]) -> None:
        assert gw.stdin is not None
        gw.stdin.write((json.dumps(msg) + "\n").encode())
        gw.stdin.flush()

    send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}})
    assert json.loads(gw.stdout.readline())["id"] == 1
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "create_pix_charge", "arguments": charge_args("FAT-K")}})
    give_up = time.monotonic() + 30
    while not env.executions() and time.monotonic() < give_up:
        time.sleep(0.05)
    assert len(env.executions()) == 1, "the upstream charged"
    os.kill(gw.pid, signal.SIGKILL)  # its answer is never stored
    gw.wait()
    time.sleep(1.6)  # the claim's lease runs out
    async with env.agent(guard) as agent:
        retried = await agent.call_tool("create_pix_charge", charge_args("FAT-K"))
    executions = env.executions()
    assert len(executions) == 1, "never a second charge"
    if on_uncertain == "resend":
        assert not retried.is_error
        assert retried.meta["idem"]["reconciled"] is True and retried.meta["idem"]["attempt"] == 2
        assert json.loads(retried.content[0].text)["charge_id"] == executions[0]["charge_id"], "the first charge's answer"
    else:
        assert retried.is_error
        said = text_of(retried)
        assert "unknown" in said and "new reference" in said and "/live" in said


async def test_the_upstream_inherits_none_of_idem_s_secrets(env: Env) -> None:
    secrets = {"IDEM_ADMIN_TOKEN": "a" * 40, "HTTP_PROXY": "http://127.0.0.1:9",
               "HTTPS_PROXY": "http://127.0.0.1:9", "AWS_SECRET_ACCESS_KEY": "s3cret"}
    async with env.agent(env.guard_file(), **secrets) as agent:
        names = set(text_of(await agent.call_tool("environment", {})).split())
    # The gateway itself had them (and IDEMPOTENCY_HMAC_KEY); the upstream
    # gets PATH, HOME and LANG where set, and what [upstream] env names
    # (LC_CTYPE is Python's own: it sets it under the C locale, PEP 538).
    assert names <= {"PATH", "HOME", "LANG", "LC_CTYPE", "PAY_LEDGER", "PAY_DELAY_MS", "PAY_PAD", "PAY_DOWN_IF", "PAY_STALL_IF"}, names
    assert {"PAY_LEDGER", "PATH"} <= names, names


def test_bad_guard_files_tenants_and_upstreams_exit_2_naming_the_line(env: Env) -> None:
    def run(guard: Path, tenant: str | None = None) -> subprocess.CompletedProcess[str]:
        args = ["mcp", "gateway", "--guard", str(guard), "--tenant", tenant or env.tenant, *env.db_args()]
        return subprocess.run([IDEM, *args], capture_output=True, text=True, env={**os.environ, **env.env()},
                              stdin=subprocess.DEVNULL, timeout=60)

    good = env.guard_file().read_text()
    cases = [
        (good.replace('action = "pix.cobranca"', 'action = "pix.nada"'), ":7:", "unknown action"),
        (good.replace('valor = "amount"', 'valor = "amount"\ntroco = "change"'), ":14:", 'no field "troco"'),
        (good.replace('valor = "amount"\n', ""), ":11:", 'no argument maps to field "valor"'),
        (good.replace('tool = "create_pix_charge"', 'tool = "create_charge"'), ":6:", 'no tool "create_charge"'),
        (good.replace(str(HERE / "pay_server.py"), "/nonexistent/pay.py"), "", "failed to start"),
        # Typos the upstream would never receive: refused before serving.
        (good.replace('key_argument = "idempotency_key"', 'key_argument = "idempotency_keyy"'), ":8:",
         'declares no argument "idempotency_keyy"'),
        (good.replace('valor = "amount"', 'valor = "amout"'), ":13:", 'declares no argument "amout"'),
        # An upstream that never answers initialize: named, not a silent hang.
        (good.replace(f"command = [{json.dumps(sys.executable)}, {json.dumps(str(HERE / 'pay_server.py'))}]",
                      'command = ["sleep", "30"]'), "", "sleep did not answer initialize within 10 s"),
    ]
    for text, line, says in cases:
        path = env.tmp / "bad.toml"
        path.write_text(text)
        done = run(path)
        assert done.returncode == 2, (says, done.stderr)
        assert says in done.stderr and line in done.stderr, (says, done.stderr)
    done = run(env.guard_file(), tenant="nobody")
    assert done.returncode == 2 and '"nobody"' in done.stderr
    assert env.executions() == []


@pytest.mark.parametrize("errors", ["retryable", "final"])
async def test_an_upstream_error_is_retried_under_the_same_key_or_replayed(env: Env, errors: str) -> None:
    refuse = f"""
[[guard]]
tool = "refuse_charge"
action = "pix.cobranca"
key_argument = "idempotency_key"
errors = "{errors}"
[guard.fields]
cliente_id = "customer_id"
valor = "amount"
chave_pix_destino = "pix_key"
referencia_intencao = "invoice_ref"
"""
    async with env.agent(env.guard_file(extra=refuse)) as agent:
        first = await agent.call_tool("refuse_charge", charge_args("FAT-E"))
        again = await agent.call_tool("refuse_charge", charge_args("FAT-E"))
    # The upstream's own error, unchanged (the SDK words it).
    assert first.is_error and "refuse_charge" in text_of(first)
    assert again.is_error and text_of(again).startswith(text_of(first))
    # Whose "no" it is, without parsing English.
    assert first.meta["idem"]["source"] == "upstream" and again.meta["idem"]["source"] == "upstream"
    attempts = env.executions()
    assert {a["idempotency_key"] for a in attempts} == {first.meta["idem"]["key"]}, "one key, always"
    if errors == "retryable":
        assert len(attempts) == 2 and again.meta["idem"]["attempt"] == 2 and not again.meta["idem"]["replayed"]
    else:
        assert len(attempts) == 1 and again.meta["idem"]["replayed"]


def test_an_oversized_or_broken_message_on_stdio_leaves_the_gateway_serving(env: Env) -> None:
    gw = subprocess.Popen([IDEM, *env.gateway_args(env.guard_file())], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=open(env.tmp / "hostile.log", "w"), env=env.env())
    assert gw.stdin is not None and gw.stdout is not None

    def send(raw: bytes) -> None:
        assert gw.stdin is not None
        gw.stdin.write(raw + b"\n")
        gw.stdin.flush()

    send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}).encode())
    assert json.loads(gw.stdout.readline())["id"] == 1
    send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode())
    send(b'{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "' + b"x" * 3_000_000 + b'"}}}')
    send(b"[" * 100_000)
    # A guarded call naming a member twice: which one counts depends on the parser.
    send(b'{"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "create_pix_charge", "arguments": '
         b'{"customer_id": "c-1", "amount": "1.00", "amount": "9999.00", "pix_key": "a@example.com", "invoice_ref": "DUP-1"}}}')
    send(json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}).encode())
    answers = {}
    give_up = time.monotonic() + 30
    while not {2, 3, 4, None} <= set(answers) and time.monotonic() < give_up:
        line = gw.stdout.readline()
        if not line:
            break
        msg = json.loads(line)
        answers[msg.get("id")] = msg
    assert 3 in answers and "tools" in answers[3]["result"], answers
    # Every message got an answer: the oversized one with its own id (an
    # SDK can match it), the broken one a parse error, the duplicate a
    # refusal naming the member.
    assert answers[2]["error"]["code"] == -32600 and "bytes" in answers[2]["error"]["message"], answers[2]
    assert answers[None]["error"]["code"] == -32700, answers[None]
    dup = answers[4]["result"]
    assert dup["isError"] and "`amount` twice" in dup["content"][0]["text"], dup
    assert dup["_meta"]["idem"]["source"] == "idem"
    from conftest import check_idem_meta

    check_idem_meta(dup["_meta"]["idem"])
    assert dup["_meta"]["idem"]["diverged_meta"] == [], "every guarded answer lists it"
    assert env.executions() == []
    assert gw.poll() is None, "still serving"
    gw.kill()
    gw.wait()


async def test_a_disabled_tenant_is_refused_at_start_and_mid_session(env: Env) -> None:
    from mcp.shared.exceptions import MCPError

    async with env.agent(env.guard_file()) as agent:
        ok = await agent.call_tool("create_pix_charge", charge_args("DIS-1"))
        assert not ok.is_error
        assert env.idem("tenant", "disable", env.tenant).returncode == 0
        with pytest.raises(MCPError, match="disabled"):
            await agent.call_tool("create_pix_charge", charge_args("DIS-2"))
    done = subprocess.run([IDEM, *env.gateway_args(env.guard_file())], capture_output=True, text=True,
                          env={**os.environ, **env.env()}, stdin=subprocess.DEVNULL, timeout=60)
    assert done.returncode == 2 and "disabled" in done.stderr, done.stderr
    assert [e["invoice_ref"] for e in env.executions()] == ["DIS-1"]


def refused_at_start(env: Env, cases: list[tuple[str, str, str]]) -> None:
    """Each (guard file text, ":line:", what stderr says): the gateway exits
    2 at start, naming the line and the mistake."""
    for text, line, says in cases:
        path = env.tmp / "bad.toml"
        path.write_text(text)
        done = subprocess.run([IDEM, *env.gateway_args(path)], capture_output=True, text=True,
                              env={**os.environ, **env.env()}, stdin=subprocess.DEVNULL, timeout=60)
        assert done.returncode == 2, (says, done.stderr)
        assert says in done.stderr and line in done.stderr, (says, line, done.stderr)


CHECKOUT_GUARD = """
[[guard]]
tool = "complete_checkout"
action = "pix.cobranca"
key_argument = "/meta/idempotency_key"
[guard.fields]
cliente_id = "/payload/buyer"
valor = "/payload/totals/0/amount"
chave_pix_destino = "/payload/pix_key"
referencia_intencao = "/payload/checkout_session_id"
"""


def checkout_args(session: str, model_key: str, amount: str = "42.50") -> dict[str, Any]:
    return {"meta": {"idempotency_key": model_key},
            "payload": {"checkout_session_id": session, "buyer": "b-1", "pix_key": "ana@example.com",
                        "totals": [{"amount": amount, "currency": "BRL"}]}}


async def test_nested_arguments_by_json_pointer_and_a_key_the_model_cannot_choose(env: Env) -> None:
    guard = env.guard_file(extra=CHECKOUT_GUARD)
    async with env.agent(guard) as agent:
        # Five retries, five keys minted by the "model": one order.
        outs = [await agent.call_tool("complete_checkout", checkout_args("cs_1", f"model-{i}")) for i in range(5)]
        assert all(not o.is_error for o in outs), [text_of(o) for o in outs]
        key = outs[0].meta["idem"]["key"]
        assert [o.meta["idem"]["replayed"] for o in outs] == [False, True, True, True, True]
        orders = {json.loads(o.content[0].text)["order_id"] for o in outs}  # type: ignore[union-attr]
        assert len(orders) == 1, orders
        # A changed amount, deep in the payload: diverged, no second order.
        changed = await agent.call_tool("complete_checkout", checkout_args("cs_1", "model-x", amount="43.00"))
        assert changed.meta["idem"]["diverged"] and changed.meta["idem"]["replayed"], changed.meta
        # An argument shape the key cannot be written into: refused, nothing recorded.
        odd = checkout_args("cs_2", "k")
        odd["meta"] = "not an object"
        refused = await agent.call_tool("complete_checkout", odd)
        assert refused.is_error and "key_argument /meta/idempotency_key" in text_of(refused), text_of(refused)
    runs = env.executions()
    assert len(runs) == 1, runs
    # The upstream got idem's key where the model had written its own.
    assert runs[0]["idempotency_key"] == key and runs[0]["amount"] == "42.50"


def test_a_pointer_nothing_in_the_schema_can_hold_is_refused_at_start(env: Env) -> None:
    good = env.guard_file(extra=CHECKOUT_GUARD).read_text()
    lines = good.split("\n")

    def line_of(text: str) -> str:
        return f":{lines.index(text) + 1}:"

    cases = [
        (good.replace('"/meta/idempotency_key"', '"/meta/idempotency_kye"'), line_of('key_argument = "/meta/idempotency_key"'),
         "can hold /meta/idempotency_kye"),
        (good.replace('"/payload/totals/0/amount"', '"/payload/totals/0/amout"'), line_of('valor = "/payload/totals/0/amount"'),
         "can hold /payload/totals/0/amout"),
        (good.replace('"/payload/buyer"', '"/payload/buyer/name"'), line_of('cliente_id = "/payload/buyer"'),
         "can hold /payload/buyer/name"),
        # A key read from _meta whose entry a resend would not carry frozen.
        (good.replace('"/payload/buyer"', '"meta:/x402~1payment/payload/from"'), line_of('cliente_id = "/payload/buyer"'),
         "freeze_meta does not name"),
        (good.replace('"/meta/idempotency_key"', '"/payload/totals"'), line_of('key_argument = "/meta/idempotency_key"'),
         "overwrites it with the key"),
    ]
    refused_at_start(env, cases)
    assert env.executions() == []


X402_GUARD = """
[[guard]]
tool = "pay_resource"
action = "pix.cobranca"
freeze_meta = ["x402/payment"]
lease_ms = {lease_ms}
on_uncertain = "resend"
[guard.fields]
cliente_id = "pay_to"
valor = "amount"
chave_pix_destino = "payer_pix"
referencia_intencao = "resource"
"""


def x402_args(resource: str) -> dict[str, str]:
    return {"resource": resource, "amount": "0.10", "pay_to": "merchant-1", "payer_pix": "ana@example.com"}


def signed(nonce: str) -> dict[str, Any]:
    # A client that signs a new authorization (a new nonce) on every try.
    return {"x402/payment": {"nonce": nonce, "payload": {"from": "0xabc", "value": "100000"}}}


async def test_meta_passes_through_and_a_frozen_payment_is_sent_on_every_retry(env: Env) -> None:
    guard = env.guard_file(extra=X402_GUARD.format(lease_ms=30000))
    async with env.agent(guard) as agent:
        outs = [await agent.call_tool("pay_resource", x402_args("/r/1"), meta=signed(f"nonce-{i}")) for i in range(3)]
        assert all(not o.is_error for o in outs), [text_of(o) for o in outs]
        receipts = [o.meta["x402/payment-response"] for o in outs]
        assert receipts[0]["nonce"] == "nonce-0" and receipts == [receipts[0]] * 3, receipts
        assert [o.meta["idem"]["diverged_meta"] for o in outs] == [[], ["x402/payment"], ["x402/payment"]]
        assert [o.meta["idem"]["diverged"] for o in outs] == [False, False, False]
        # Unguarded tools get the request's _meta too (beside the gateway's
        # own session keys, such as its progress token).
        keys = await agent.call_tool("meta_keys", {}, meta={"x402/payment": {"nonce": "n"}, "trace": "t"})
        assert {"trace", "x402/payment"} <= set(text_of(keys).split()), text_of(keys)
    assert [e["settled"] for e in env.executions()] == ["nonce-0"]


async def test_a_resend_after_an_unknown_outcome_carries_the_frozen_payment(env: Env) -> None:
    # The upstream settles, then answers after the lease: the outcome is unknown.
    guard = env.guard_file(extra=X402_GUARD.format(lease_ms=1000), delay_ms=3000)
    async with env.agent(guard) as agent:
        late = await agent.call_tool("pay_resource", x402_args("/r/2"), meta=signed("first"))
        assert late.is_error and "unknown" in text_of(late), text_of(late)
        await asyncio.sleep(3)  # the first settlement's answer is long gone
        again = await agent.call_tool("pay_resource", x402_args("/r/2"), meta=signed("second"))
        assert not again.is_error, text_of(again)
        assert again.meta["x402/payment-response"]["nonce"] == "first"
        assert again.meta["idem"]["diverged_meta"] == ["x402/payment"] and again.meta["idem"]["reconciled"]
    assert [e["settled"] for e in env.executions()] == ["first"], env.executions()


LOOKUP_GUARD = """
[[guard]]
tool = "complete_checkout"
action = "pix.cobranca"
key_argument = "/meta/idempotency_key"
lease_ms = 1000
on_uncertain = "lookup"
[guard.fields]
cliente_id = "/payload/buyer"
valor = "/payload/totals/0/amount"
chave_pix_destino = "/payload/pix_key"
referencia_intencao = "/payload/checkout_session_id"
[guard.lookup]
tool = "get_checkout"
arguments = { id = "/payload/checkout_session_id" }
executed = { pointer = "/status", in = ["completed"] }
not_executed = { pointer = "/status", in = ["ready_for_payment", "canceled"] }
result = "/order"
"""


async def test_an_unknown_outcome_is_settled_by_asking_the_provider_executed(env: Env) -> None:
    # The merchant completes the order, then answers after the lease: the
    # gateway asks get_checkout at once and settles it, in the same call.
    guard = env.guard_file(extra=LOOKUP_GUARD, delay_ms=3000)
    async with env.agent(guard) as agent:
        first = await agent.call_tool("complete_checkout", checkout_args("cs_L1", "m-1"))
        assert not first.is_error, text_of(first)
        idem = first.meta["idem"]
        assert idem["lookup"] == "executed" and idem["reconciled"] and not idem["replayed"], idem
        order = first.structured_content
        assert order is not None and order["checkout_session_id"] == "cs_L1", first
        again = await agent.call_tool("complete_checkout", checkout_args("cs_L1", "m-2"))
        assert again.meta["idem"]["replayed"] and again.meta["idem"]["reconciled"], again.meta
        assert again.structured_content == order
    assert len(env.executions()) == 1, env.executions()


async def test_an_unknown_outcome_the_provider_never_executed_runs_once_under_the_same_key(env: Env) -> None:
    guard = env.guard_file(extra=LOOKUP_GUARD)
    (env.tmp / "stall").write_text("")  # the merchant never gets the request
    async with env.agent(guard) as agent:
        lost = await agent.call_tool("complete_checkout", checkout_args("cs_L2", "m-1"))
        # Asked once: not executed, so sent again, lost again: still unknown.
        assert lost.is_error and lost.meta["idem"]["lookup"] == "not_executed", (text_of(lost), lost.meta)
        (env.tmp / "stall").unlink()
        await asyncio.sleep(3.5)  # the stalled requests end
        done = await agent.call_tool("complete_checkout", checkout_args("cs_L2", "m-2"))
        assert not done.is_error, text_of(done)
        idem = done.meta["idem"]
        assert idem["lookup"] == "not_executed" and not idem["reconciled"] and not idem["replayed"], idem
    runs = env.executions()
    assert len(runs) == 1 and runs[0]["idempotency_key"] == idem["key"], runs


def test_bad_lookup_tables_are_refused_at_start(env: Env) -> None:
    good = env.guard_file(extra=LOOKUP_GUARD).read_text()
    lines = good.split("\n")
    at = f":{lines.index('[guard.lookup]') + 1}:"
    cases = [
        (good.replace('tool = "get_checkout"', 'tool = "get_checkot"'), at, 'no tool "get_checkot"'),
        (good.replace('tool = "get_checkout"', 'tool = "create_pix_charge"'), at, "is guarded in this file"),
        (good.replace('arguments = { id = "/payload/checkout_session_id" }', 'arguments = { id = "/payload/session" }'),
         at, "can hold /payload/session"),
        (good.replace('in = ["ready_for_payment", "canceled"]', 'in = ["completed"]'), at, "in both"),
        (good.replace('on_uncertain = "lookup"', 'on_uncertain = "refuse"'), at, "only with on_uncertain"),
    ]
    refused_at_start(env, cases)


@pytest.mark.parametrize("part", ["/order", "/id"])
async def test_a_looked_up_result_must_satisfy_the_tools_output_schema(env: Env, part: str) -> None:
    guard = env.guard_file(extra=LOOKUP_GUARD.replace('tool = "complete_checkout"', 'tool = "complete_typed_checkout"')
                           .replace('result = "/order"', f'result = "{part}"'), delay_ms=3000)
    async with env.agent(guard) as agent:
        tools = {t.name: t for t in (await agent.list_tools()).tools}
        assert tools["complete_typed_checkout"].output_schema is not None
        first = await agent.call_tool("complete_typed_checkout", checkout_args("cs_T", "m-1"))
        if part == "/order":
            # The order satisfies the Order schema: settled, and an SDK
            # that checks outputSchema accepts the answer.
            assert not first.is_error and first.meta["idem"]["lookup"] == "executed", text_of(first)
            assert first.structured_content["checkout_session_id"] == "cs_T"
        else:
            # A session id is no Order: it stays uncertain, and says why.
            assert first.is_error and first.meta["idem"]["lookup"] == "unknown", first.meta
            assert "outputSchema" in text_of(first), text_of(first)
    assert len(env.executions()) == 1
