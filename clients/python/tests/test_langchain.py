"""``idem_client.langchain.IdemToolMiddleware`` through LangChain's own
agent loop (``create_agent``), its own retry middleware and LangGraph's
checkpointer, with LangChain's fake chat model scripting the tool calls,
against a real idem server on SQLite and PostgreSQL. The demo provider's
ledger is the oracle: what it recorded is what a customer was charged."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import ToolRetryMiddleware
from langchain_core.messages import HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

import idem_client
from conftest import Tenant
from idem_client.guards import GuardFileError, load
from idem_client.langchain import IdemToolMiddleware, OutcomeUnknown
from lc_support import GUARD, Psp, charge_call, model

HERE = Path(__file__).resolve().parent
SCHEMA = json.loads((HERE.parent.parent / "conformance" / "mcp-meta.schema.json").read_text())


def ref(name: str) -> str:
    return f"{name}-{time.monotonic_ns()}"


def tool_messages(out: dict[str, Any]) -> list[ToolMessage]:
    return [m for m in out["messages"] if isinstance(m, ToolMessage)]


def idem_of(m: ToolMessage) -> dict[str, Any]:
    meta: dict[str, Any] = m.response_metadata["idem"]
    jsonschema.validate(meta, SCHEMA)
    return meta


def guard(**over: Any) -> dict[str, Any]:
    return {**GUARD, **over}


def ask(text: str = "pay my invoice", msg_id: str = "wamid.1") -> dict[str, Any]:
    return {"messages": [HumanMessage(text, id=msg_id)]}


# -- the framework's own retry ------------------------------------------------


def test_without_idem_the_retry_middleware_charges_twice(tenant: Tenant) -> None:
    """The case idem exists for: the PSP charged, then timed out; LangChain's
    retry ran the tool again with a key minted in the attempt."""
    psp = Psp(tenant.url, tenant.token, fail_first=True)
    agent = create_agent(model(charge_call(ref("bare"))), tools=[psp.tool()], middleware=[ToolRetryMiddleware(max_retries=2, initial_delay=0.01)])
    agent.invoke(ask())
    assert psp.calls == 2
    assert len(tenant.charges()) == 2


def test_inside_the_retry_middleware_a_timeout_after_the_charge_resends_under_the_same_key(tenant: Tenant) -> None:
    psp = Psp(tenant.url, tenant.token, fail_first=True)
    charge = psp.tool()
    idem = IdemToolMiddleware(tenant.client(), [GUARD], tools=[charge])
    agent = create_agent(
        model(charge_call(ref("retry"))),
        tools=[charge],
        middleware=[ToolRetryMiddleware(max_retries=2, initial_delay=0.01), idem],
    )
    out = agent.invoke(ask())
    [m] = tool_messages(out)
    assert psp.calls == 2, "the retry passed through the guard and resent"
    assert len(set(psp.keys)) == 1 and len(psp.keys[0]) == 64, "both sends carried idem's key"
    assert len(tenant.charges()) == 1
    meta = idem_of(m)
    assert m.status == "success" and m.tool_call_id == "call_1"
    assert meta["key"] == psp.keys[0] and meta["reconciled"] is True and meta["attempt"] == 2


def test_with_on_uncertain_refuse_the_retry_runs_nothing_and_the_model_is_told_not_to_retry(tenant: Tenant) -> None:
    psp = Psp(tenant.url, tenant.token, fail_first=True)
    charge = psp.tool()
    idem = IdemToolMiddleware(tenant.client(), [guard(on_uncertain="refuse")], tools=[charge])
    r = ref("refuse")
    agent = create_agent(model(charge_call(r)), tools=[charge], middleware=[ToolRetryMiddleware(max_retries=2, initial_delay=0.01), idem])
    out = agent.invoke(ask())
    [m] = tool_messages(out)
    assert psp.calls == 1 and len(tenant.charges()) == 1
    assert m.status == "error"
    assert f"the outcome of an earlier charge_pix for {r} is unknown" in str(m.content)
    assert "Do not retry it with a new reference" in str(m.content)
    meta = idem_of(m)
    assert meta["source"] == "idem" and meta["replayed"] is False
    action = tenant.client().get_action(meta["key"])
    assert action["state"] == "uncertain"


def test_without_retry_middleware_the_timeout_is_an_outcome_unknown_raised_from_the_tool_s(tenant: Tenant) -> None:
    psp = Psp(tenant.url, tenant.token, fail_first=True)
    charge = psp.tool()
    agent = create_agent(model(charge_call(ref("raise"))), tools=[charge], middleware=[IdemToolMiddleware(tenant.client(), [GUARD], tools=[charge])])
    with pytest.raises(OutcomeUnknown) as e:
        agent.invoke(ask())
    assert isinstance(e.value.__cause__, TimeoutError)
    assert "whether it was executed is unknown" in str(e.value) and "retrying this same call is safe" in str(e.value)
    assert tenant.client().get_action(e.value.idem["key"])["state"] == "uncertain"


# -- a second extraction, a replay under the current id ----------------------


def test_a_divergent_second_extraction_gets_the_stored_result_and_the_divergence_sentence(tenant: Tenant) -> None:
    psp = Psp(tenant.url, tenant.token)
    charge = psp.tool()
    r = ref("diverge")
    agent = create_agent(
        model(charge_call(r, "180.00", "call_1"), charge_call(r, "1800.00", "call_2")),
        tools=[charge],
        middleware=[IdemToolMiddleware(tenant.client(), [GUARD], tools=[charge])],
    )
    first, second = tool_messages(agent.invoke(ask()))
    assert psp.calls == 1 and len(tenant.charges()) == 1
    assert tenant.charges()[0]["amount_cents"] == 18000
    assert (first.tool_call_id, second.tool_call_id) == ("call_1", "call_2")
    assert idem_of(first)["replayed"] is False and idem_of(second)["replayed"] is True
    assert idem_of(second)["diverged"] is True
    text = str(second.content)
    assert text.startswith(str(first.content))
    assert "the amount you sent, 1800.00, differs from the frozen intent's 180.00" in text
    assert f"charge_pix was already executed for {r} at " in text
    assert "nothing was executed or charged again" in text


def test_the_same_values_spelled_otherwise_are_a_plain_replay_said_as_such(tenant: Tenant) -> None:
    psp = Psp(tenant.url, tenant.token)
    charge = psp.tool()
    r = ref("spelled")
    agent = create_agent(
        model(charge_call(r, "180.00", "a"), charge_call(r, "180", "b")),
        tools=[charge],
        middleware=[IdemToolMiddleware(tenant.client(), [GUARD], tools=[charge])],
    )
    _, second = tool_messages(agent.invoke(ask()))
    assert psp.calls == 1
    assert idem_of(second)["diverged"] is False and idem_of(second)["replayed"] is True
    assert "the amount you sent, 180, is written differently from (the same value as) the frozen intent's 180.00" in str(second.content)


def test_a_known_failure_is_recorded_retryable_and_the_next_call_runs_again_under_the_same_key(tenant: Tenant) -> None:
    calls: list[str] = []

    from langchain_core.tools import tool

    @tool
    def charge_pix(customer_id: str, amount: str, pix_key: str, invoice_ref: str, idempotency_key: str = "") -> str:
        """Charges a Pix payment."""
        calls.append(idempotency_key)
        if len(calls) == 1:
            raise idem_client.Failed("the PSP refused: insufficient funds", retryable=True)
        return "charged"

    r = ref("failed")
    agent = create_agent(
        model(charge_call(r, call_id="a"), charge_call(r, call_id="b")),
        tools=[charge_pix],
        middleware=[IdemToolMiddleware(tenant.client(), [GUARD], tools=[charge_pix])],
    )
    first, second = tool_messages(agent.invoke(ask()))
    assert first.status == "error" and "insufficient funds" in str(first.content)
    assert idem_of(first)["source"] == "upstream"
    assert second.status == "success" and second.content == "charged"
    assert calls[0] == calls[1] and len(calls) == 2


def test_arguments_the_tool_refuses_are_passed_through_unrecorded(tenant: Tenant) -> None:
    psp = Psp(tenant.url, tenant.token)
    charge = psp.tool()
    r = ref("invalid")
    bad = charge_call(r)
    del bad.tool_calls[0]["args"]["pix_key"]
    agent = create_agent(model(bad, charge_call(r, call_id="call_2")), tools=[charge], middleware=[IdemToolMiddleware(tenant.client(), [GUARD], tools=[charge])])
    first, second = tool_messages(agent.invoke(ask()))
    assert first.status == "error" and "pix_key" in str(first.content)
    assert "idem" not in first.response_metadata
    assert idem_of(second)["replayed"] is False and psp.calls == 1
    # The corrected call was the first recorded: nothing froze the bad one.
    assert tenant.client().get_intent("pix.cobranca", r)["payload"]["chave_pix_destino"]


def test_a_field_the_call_lacks_is_refused_naming_the_argument_and_nothing_is_recorded(tenant: Tenant) -> None:
    from langchain_core.tools import tool

    runs: list[int] = []

    @tool
    def charge_pix(customer_id: str, amount: str, pix_key: str, invoice_ref: str = "", idempotency_key: str = "") -> str:
        """Charges."""
        runs.append(1)
        return "charged"

    call = charge_call("x")
    del call.tool_calls[0]["args"]["invoice_ref"]
    agent = create_agent(model(call), tools=[charge_pix], middleware=[IdemToolMiddleware(tenant.client(), [GUARD], tools=[charge_pix])])
    [m] = tool_messages(agent.invoke(ask()))
    assert m.status == "error" and not runs
    assert "missing argument `invoice_ref`" in str(m.content) and "referencia_intencao" in str(m.content)
    meta = idem_of(m)
    assert meta["key"] is None and meta["attempt"] == 0 and meta["source"] == "idem"


def test_a_value_the_action_s_rules_refuse_is_named_and_nothing_runs(tenant: Tenant) -> None:
    psp = Psp(tenant.url, tenant.token)
    charge = psp.tool()
    agent = create_agent(model(charge_call(ref("bad"), amount="cento e oitenta")), tools=[charge], middleware=[IdemToolMiddleware(tenant.client(), [GUARD], tools=[charge])])
    [m] = tool_messages(agent.invoke(ask()))
    assert m.status == "error" and psp.calls == 0
    assert "argument `amount`" in str(m.content) and "nothing was recorded or executed" in str(m.content)


def test_unguarded_tools_pass_untouched(tenant: Tenant) -> None:
    from langchain_core.tools import tool

    @tool
    def balance(customer_id: str) -> str:
        """The customer's balance."""
        return "R$ 10,00"

    charge = Psp(tenant.url, tenant.token).tool()
    from langchain_core.messages import AIMessage

    call = AIMessage(content="", tool_calls=[{"name": "balance", "args": {"customer_id": "c-1"}, "id": "b1", "type": "tool_call"}])
    agent = create_agent(model(call), tools=[charge, balance], middleware=[IdemToolMiddleware(tenant.client(), [GUARD], tools=[charge, balance])])
    [m] = tool_messages(agent.invoke(ask()))
    assert m.content == "R$ 10,00" and "idem" not in m.response_metadata


# -- many runs of one conversation, a process killed mid-tool -----------------


def test_8_concurrent_runs_of_the_same_conversation_charge_once(tenant: Tenant) -> None:
    psp = Psp(tenant.url, tenant.token, sleep=0.3)
    charge = psp.tool()
    client = tenant.client()
    r = ref("eight")
    answers: list[ToolMessage] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def run(i: int) -> None:
        try:
            agent = create_agent(model(charge_call(r, call_id=f"call_{i}")), tools=[charge], middleware=[IdemToolMiddleware(client, [GUARD], tools=[charge])])
            [m] = tool_messages(agent.invoke(ask(), config={"configurable": {"thread_id": "chat-1"}}))
            with lock:
                answers.append(m)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    assert psp.calls == 1 and len(tenant.charges()) == 1
    assert sorted(idem_of(m)["replayed"] for m in answers) == [False] + [True] * 7
    assert sorted(m.tool_call_id for m in answers) == sorted(f"call_{i}" for i in range(8))
    assert len({json.loads(str(m.content).split("\n\n")[0])["charge_id"] for m in answers}) == 1


@pytest.mark.parametrize("guarded", [True, False], ids=["idem", "without"])
def test_a_process_killed_mid_tool_and_resumed_from_the_checkpointer_charges_once(tenant: Tenant, tmp_path: Path, guarded: bool) -> None:
    """The worker charges, then is SIGKILLed before the tool returns; the
    thread is resumed from its SQLite checkpointer in this process, which
    runs the tools node again from its start."""
    db = tmp_path / "checkpoints.db"
    marker = tmp_path / "charged"
    r = ref("killed")
    env = dict(
        os.environ,
        IDEM_URL=tenant.url,
        IDEM_TOKEN=tenant.token,
        LC_CHECKPOINTS=str(db),
        LC_MARKER=str(marker),
        LC_REF=r,
        LC_GUARDED="1" if guarded else "",
    )
    worker = subprocess.Popen([sys.executable, str(HERE / "lc_worker.py"), "start"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert worker.poll() is None, worker.communicate()
            assert time.monotonic() < deadline, "the worker never charged"
            time.sleep(0.05)
        worker.send_signal(signal.SIGKILL)
        worker.wait(10)
    finally:
        if worker.poll() is None:
            worker.kill()
    assert len(tenant.charges()) == 1
    resumed = subprocess.run([sys.executable, str(HERE / "lc_worker.py"), "resume"], env=env, capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    said = json.loads(resumed.stdout.strip().splitlines()[-1])
    if not guarded:
        assert len(tenant.charges()) == 2, "without idem the resumed run charged again"
        return
    assert len(tenant.charges()) == 1
    assert said["status"] == "success" and said["tool_call_id"] == "call_1"
    assert said["idem"]["reconciled"] is True and said["idem"]["attempt"] == 2, said


# -- async -------------------------------------------------------------------


async def test_async_the_retry_resends_once_and_a_second_extraction_replays(tenant: Tenant) -> None:
    psp = Psp(tenant.url, tenant.token, fail_first=True)
    charge = psp.tool()
    r = ref("async")
    async with tenant.async_client() as aclient:
        idem = IdemToolMiddleware(aclient, [GUARD], tools=[charge])
        agent = create_agent(
            model(charge_call(r, call_id="a"), charge_call(r, "1800.00", call_id="b")),
            tools=[charge],
            middleware=[ToolRetryMiddleware(max_retries=2, initial_delay=0.01), idem],
        )
        first, second = tool_messages(await agent.ainvoke(ask()))
    assert len(tenant.charges()) == 1
    assert idem_of(first)["reconciled"] is True
    assert idem_of(second)["replayed"] is True and second.tool_call_id == "b"
    assert "differs from the frozen intent's 180.00" in str(second.content)


async def test_async_8_concurrent_runs_charge_once(tenant: Tenant) -> None:
    psp = Psp(tenant.url, tenant.token, sleep=0.2)
    charge = psp.tool()
    r = ref("async8")
    async with tenant.async_client() as aclient:

        async def run(i: int) -> ToolMessage:
            agent = create_agent(model(charge_call(r, call_id=f"c{i}")), tools=[charge], middleware=[IdemToolMiddleware(aclient, [GUARD], tools=[charge])])
            [m] = tool_messages(await agent.ainvoke(ask()))
            return m

        answers = await asyncio.gather(*(run(i) for i in range(8)))
    assert len(tenant.charges()) == 1
    assert sorted(idem_of(m)["replayed"] for m in answers) == [False] + [True] * 7


# -- the turn as the reference ------------------------------------------------


def test_the_turn_as_reference_charges_once_per_user_message_across_runs(tenant: Tenant) -> None:
    psp = Psp(tenant.url, tenant.token)
    charge = psp.tool()
    g = guard(fields={**GUARD["fields"], "referencia_intencao": "$turn"})
    saver = InMemorySaver()
    config = {"configurable": {"thread_id": f"chat-{time.monotonic_ns()}"}}
    for call_id in ("a", "b"):
        # The same WhatsApp message delivered twice: same id, same turn.
        agent = create_agent(model(charge_call("ignored", call_id=call_id)), tools=[charge], middleware=[IdemToolMiddleware(tenant.client(), [g], tools=[charge])], checkpointer=saver)
        agent.invoke(ask(msg_id="wamid.HBgM"), config=config)
    assert psp.calls == 1 and len(tenant.charges()) == 1
    agent = create_agent(model(charge_call("ignored", call_id="c")), tools=[charge], middleware=[IdemToolMiddleware(tenant.client(), [g], tools=[charge])], checkpointer=saver)
    agent.invoke(ask(msg_id="wamid.OTHER"), config=config)
    assert psp.calls == 2, "a new user message is a new turn"


def test_the_turn_without_a_thread_is_refused_and_nothing_runs(tenant: Tenant) -> None:
    psp = Psp(tenant.url, tenant.token)
    charge = psp.tool()
    g = guard(fields={**GUARD["fields"], "referencia_intencao": "$turn"})
    agent = create_agent(model(charge_call("x")), tools=[charge], middleware=[IdemToolMiddleware(tenant.client(), [g], tools=[charge])])
    [m] = tool_messages(agent.invoke(ask()))
    assert m.status == "error" and psp.calls == 0 and "no thread id" in str(m.content)


# -- the guard declarations ---------------------------------------------------

GOOD = """\
[upstream]
command = ["/usr/bin/python3", "/opt/psp/pay.py"]

[[guard]]
tool = "charge_pix"
action = "pix.cobranca"
key_argument = "idempotency_key"
lease_ms = 30000
on_uncertain = "resend"
[guard.fields]
cliente_id = "customer_id"
valor = "amount"
chave_pix_destino = "pix_key"
referencia_intencao = "invoice_ref"
"""

# (what a reader types instead, the line it is on, what the error says)
MISTAKES = [
    ('on_uncertain = "resend"', 'on_uncertian = "resend"', 9, "did you mean `on_uncertain`"),
    ('on_uncertain = "resend"', 'on_uncertain = "retry"', 9, '"refuse", "resend" or "lookup"'),
    ("lease_ms = 30000", 'lease_ms = "30s"', 8, "whole number of milliseconds"),
    ('valor = "amount"', 'valor = "amout"', 12, "does not declare"),
    ('valor = "amount"', 'valor = "payload/amount"', 12, "a JSON Pointer starting with `/`"),
    ('valor = "amount"', 'valor = "meta:/x402~1payment/accepted/amount"', 12, "Guard this tool with the MCP gateway"),
    ('key_argument = "idempotency_key"', 'key_argument = "invoice_ref"', 7, "overlaps field `referencia_intencao`"),
    ('key_argument = "idempotency_key"', 'key_argument = "idempotencykey"', 7, "did you mean `idempotency_key`"),
    ('tool = "charge_pix"', 'tool = "charge_pyx"', 5, "the agent does not have (did you mean `charge_pix`?)"),
    ('action = "pix.cobranca"', 'action = "pix cobranca"', 6, "`action` names the catalog action"),
    ("[guard.fields]", "[guard.field]", 10, "did you mean `fields`"),
    ('on_uncertain = "resend"', 'on_uncertain = "lookup"', 9, "lookups={\"charge_pix\": fn}"),
    ("[[guard]]", "[[guards]]", 4, "did you mean `guard`"),
    ('on_uncertain = "resend"', 'on_uncertain = "resend"\nsupersede_failed = true', 10, "POST /v1/intents/{action}/{reference}/supersede"),
    ('on_uncertain = "resend"', 'on_uncertain = "resend"\nfreeze_meta = ["x402/payment"]', 10, "a tool run in-process has none"),
    ('lease_ms = 30000', "lease_ms = 30000\nlease_ms = 1000", 9, "not TOML"),
]


@pytest.mark.parametrize("good,typed,line,says", MISTAKES, ids=[m[1].split("\n")[-1] for m in MISTAKES])
def test_each_likely_guard_file_mistake_is_refused_at_start_naming_its_line(tmp_path: Path, good: str, typed: str, line: int, says: str) -> None:
    assert good in GOOD
    path = tmp_path / "pay-guard.toml"
    path.write_text(GOOD.replace(good, typed, 1))
    charge = Psp("http://127.0.0.1:9", "t").tool()
    client = idem_client.Client("http://127.0.0.1:9", "t")
    with pytest.raises(GuardFileError) as e:
        IdemToolMiddleware(client, str(path), tools=[charge])
    assert e.value.where == f"{path}:{line}", str(e.value)
    assert says in e.value.message, str(e.value)


def test_the_gateway_s_guard_file_loads_as_written(tmp_path: Path) -> None:
    path = tmp_path / "pay-guard.toml"
    path.write_text(GOOD)
    guards = load(str(path))
    g = guards["charge_pix"]
    assert (g.action, g.key_argument, g.lease_ms, g.on_uncertain) == ("pix.cobranca", "idempotency_key", 30000, "resend")
    assert [(f.name, f.source, f.line) for f in g.fields][1] == ("valor", "amount", 12)


def test_a_guard_in_code_is_checked_like_the_file() -> None:
    with pytest.raises(GuardFileError) as e:
        load([{**GUARD, "on_uncertian": "resend"}])
    assert e.value.where == "guards[0]" and "did you mean `on_uncertain`" in e.value.message


def test_without_tools_a_guarded_tool_is_checked_at_its_first_call(tenant: Tenant) -> None:
    psp = Psp(tenant.url, tenant.token)
    charge = psp.tool()
    g = guard(fields={**GUARD["fields"], "valor": "amout"})
    agent = create_agent(model(charge_call(ref("late"))), tools=[charge], middleware=[IdemToolMiddleware(tenant.client(), [g])])
    with pytest.raises(GuardFileError) as e:
        agent.invoke(ask())
    assert "does not declare" in str(e.value) and psp.calls == 0


# -- interrupts, lookups ----------------------------------------------------------


def test_an_interrupt_before_the_charge_gives_the_claim_back_and_the_resume_charges_once(tenant: Tenant) -> None:
    from langchain_core.tools import tool
    from langgraph.types import Command, interrupt

    psp = Psp(tenant.url, tenant.token)
    inner = psp.tool()
    asked: list[Any] = []

    @tool
    def charge_pix(customer_id: str, amount: str, pix_key: str, invoice_ref: str, idempotency_key: str = "") -> str:
        """Charges a Pix payment, once a person approves it."""
        asked.append(interrupt(f"approve {amount} for {invoice_ref}?"))
        return inner.invoke({"customer_id": customer_id, "amount": amount, "pix_key": pix_key, "invoice_ref": invoice_ref, "idempotency_key": idempotency_key})

    r = ref("approve")
    agent = create_agent(
        model(charge_call(r)),
        tools=[charge_pix],
        middleware=[IdemToolMiddleware(tenant.client(), [GUARD], tools=[charge_pix])],
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": f"approve-{r}"}}
    paused = agent.invoke(ask(), config=config)
    assert "__interrupt__" in paused and psp.calls == 0
    out = agent.invoke(Command(resume="yes"), config=config)
    [m] = tool_messages(out)
    assert asked == ["yes"] and psp.calls == 1 and len(tenant.charges()) == 1
    assert m.status == "success" and idem_of(m)["attempt"] == 2


@pytest.mark.parametrize("said", ["executed", "not_executed", "cannot_tell"])
def test_on_uncertain_lookup_asks_the_provider_in_code(tenant: Tenant, said: str) -> None:
    psp = Psp(tenant.url, tenant.token, fail_first=True)
    charge = psp.tool()
    asked: list[str] = []

    def lookup(intent: idem_client.Intent) -> Any:
        asked.append(intent.key)
        if said == "executed":
            return {"charge_id": "found", "amount_cents": 18000}
        if said == "not_executed":
            return None
        raise ConnectionError("the PSP's lookup is down")

    idem = IdemToolMiddleware(tenant.client(), [guard(on_uncertain="lookup")], tools=[charge], lookups={"charge_pix": lookup})
    agent = create_agent(model(charge_call(ref("lookup"))), tools=[charge], middleware=[ToolRetryMiddleware(max_retries=1, initial_delay=0.01), idem])
    [m] = tool_messages(agent.invoke(ask()))
    meta = idem_of(m)
    assert len(asked) == 1 and asked[0] == meta["key"]
    if said == "executed":
        assert m.status == "success" and json.loads(str(m.content).split("\n\n")[0])["charge_id"] == "found"
        assert meta["reconciled"] is True and meta["lookup"] == "executed" and psp.calls == 1
    elif said == "not_executed":
        # As the gateway: run again under the same key, not a reconciliation.
        assert m.status == "success" and psp.calls == 2 and meta["reconciled"] is False and meta["lookup"] == "not_executed"
        assert len(tenant.charges()) == 1, "the resend carried the same key"
    else:
        assert m.status == "error" and meta["lookup"] == "unknown" and psp.calls == 1
        assert "asking the provider did not tell: ConnectionError" in str(m.content)
        assert tenant.client().get_action(meta["key"])["state"] == "uncertain"


def test_a_turn_whose_message_id_langgraph_made_up_is_warned_once(tenant: Tenant, caplog: pytest.LogCaptureFixture) -> None:
    psp = Psp(tenant.url, tenant.token)
    charge = psp.tool()
    g = guard(fields={**GUARD["fields"], "referencia_intencao": "$turn"})
    idem = IdemToolMiddleware(tenant.client(), [g], tools=[charge])
    agent = create_agent(model(charge_call("x", call_id="a"), charge_call("x", call_id="b")), tools=[charge], middleware=[idem])
    with caplog.at_level("WARNING", logger="idem_client"):
        agent.invoke({"messages": [HumanMessage("pay")]}, config={"configurable": {"thread_id": f"t-{time.monotonic_ns()}"}})
    warned = [r for r in caplog.records if "looks like one LangGraph made up" in r.getMessage()]
    assert len(warned) == 1 and "HumanMessage(text, id=...)" in warned[0].getMessage()
    assert psp.calls == 1


def test_with_idem_unreachable_nothing_runs_unguarded(tenant: Tenant) -> None:
    psp = Psp(tenant.url, tenant.token)
    charge = psp.tool()
    down = idem_client.Client("http://127.0.0.1:9", tenant.token, max_retries=0)
    agent = create_agent(model(charge_call(ref("down"))), tools=[charge], middleware=[IdemToolMiddleware(down, [GUARD], tools=[charge])])
    [m] = tool_messages(agent.invoke(ask()))
    assert m.status == "error" and psp.calls == 0 and not tenant.charges()
    assert "idem could not record this call" in str(m.content) and "nothing was executed" in str(m.content)
    assert idem_of(m)["source"] == "idem"


def test_a_langgraph_node_retry_policy_reruns_the_tools_node_through_the_guard(tenant: Tenant) -> None:
    """A graph of its own: the tools node (LangGraph's ToolNode, with the
    middleware's wrap_tool_call) under a RetryPolicy, which re-runs the
    whole node when the tool raises."""
    from langchain_core.messages import AIMessage
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode
    from langgraph.types import RetryPolicy

    psp = Psp(tenant.url, tenant.token, fail_first=True)
    charge = psp.tool()
    idem = IdemToolMiddleware(tenant.client(), [GUARD], tools=[charge])
    r = ref("node")
    builder = StateGraph(MessagesState)
    builder.add_node("tools", ToolNode([charge], wrap_tool_call=idem.wrap_tool_call), retry_policy=RetryPolicy(max_attempts=3, initial_interval=0.01))
    builder.add_edge(START, "tools")
    builder.add_edge("tools", END)
    out = builder.compile().invoke({"messages": [HumanMessage("pay"), charge_call(r)]})
    [m] = tool_messages(out)
    assert psp.calls == 2 and len(tenant.charges()) == 1
    assert m.status == "success" and idem_of(m)["reconciled"] is True
    assert isinstance(out["messages"][1], AIMessage)


def test_without_idem_the_node_retry_policy_charges_twice(tenant: Tenant) -> None:
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode
    from langgraph.types import RetryPolicy

    psp = Psp(tenant.url, tenant.token, fail_first=True)
    builder = StateGraph(MessagesState)
    # LangGraph retries a TimeoutError only when asked to (an OSError).
    builder.add_node("tools", ToolNode([psp.tool()]), retry_policy=RetryPolicy(max_attempts=3, initial_interval=0.01, retry_on=TimeoutError))
    builder.add_edge(START, "tools")
    builder.add_edge("tools", END)
    builder.compile().invoke({"messages": [HumanMessage("pay"), charge_call(ref("node-bare"))]})
    assert len(tenant.charges()) == 2


def test_a_resend_is_recorded_as_the_reconciliation_and_later_replays_say_so(tenant: Tenant) -> None:
    psp = Psp(tenant.url, tenant.token, fail_first=True)
    charge = psp.tool()
    r = ref("resent")
    agent = create_agent(
        model(charge_call(r, call_id="a"), charge_call(r, call_id="b")),
        tools=[charge],
        middleware=[ToolRetryMiddleware(max_retries=1, initial_delay=0.01), IdemToolMiddleware(tenant.client(), [GUARD], tools=[charge])],
    )
    first, second = tool_messages(agent.invoke(ask()))
    assert idem_of(first)["reconciled"] is True and idem_of(second)["replayed"] is True and idem_of(second)["reconciled"] is True
    assert tenant.client().get_action(idem_of(first)["key"])["reconciled"] is True


def test_a_resend_answered_with_an_error_stays_uncertain_and_says_so(tenant: Tenant) -> None:
    from langchain_core.tools import tool

    calls: list[str] = []

    @tool
    def charge_pix(customer_id: str, amount: str, pix_key: str, invoice_ref: str, idempotency_key: str = "") -> str:
        """Charges."""
        calls.append(idempotency_key)
        if len(calls) == 1:
            raise TimeoutError("no answer")
        return "the payment was already processed"

    from langgraph.prebuilt import ToolNode  # noqa: F401  (the tools node makes the error message)

    r = ref("resend-error")
    g = guard()
    idem = IdemToolMiddleware(tenant.client(), [g], tools=[charge_pix])

    def second_is_an_error(request: Any, handler: Any) -> Any:
        out = handler(request)
        if len(calls) == 2:
            return ToolMessage(content=out.content, tool_call_id=out.tool_call_id, name=out.name, status="error")
        return out

    from langchain.agents.middleware import wrap_tool_call

    as_error = wrap_tool_call(second_is_an_error)
    agent = create_agent(model(charge_call(r)), tools=[charge_pix], middleware=[ToolRetryMiddleware(max_retries=1, initial_delay=0.01), idem, as_error])
    [m] = tool_messages(agent.invoke(ask()))
    assert m.status == "error" and len(calls) == 2 and calls[0] == calls[1]
    assert "resending it under the same key was answered with the error above" in str(m.content)
    meta = idem_of(m)
    assert meta["source"] == "upstream" and meta["reconciled"] is False
    assert tenant.client().get_action(meta["key"])["state"] == "uncertain"


# -- hostile arguments: refused, nothing recorded, nothing run ---------------------


def _deep(n: int) -> Any:
    v: Any = "x"
    for _ in range(n):
        v = {"a": v}
    return v


# (what the model sends beside the charge's arguments, what the refusal says)
HOSTILE = [
    ({"note": "x" * (70 * 1024)}, "a guarded call takes at most 65536"),
    ({"note": _deep(80)}, "nest deeper than 64 levels"),
    ({"note": "bad\u0000byte"}, "holds a NUL character"),
    ({"customer_id": "c-1\u0000"}, "holds a NUL character"),
]


@pytest.mark.parametrize("extra,says", HOSTILE, ids=["70KiB", "depth80", "nul-extra", "nul-field"])
def test_hostile_arguments_are_refused_with_nothing_recorded_or_run(tenant: Tenant, extra: dict[str, Any], says: str) -> None:
    from langchain_core.tools import tool

    runs: list[int] = []

    @tool
    def charge_pix(customer_id: str, amount: str, pix_key: str, invoice_ref: str, idempotency_key: str = "", note: Any = None) -> str:
        """Charges."""
        runs.append(1)
        return "charged"

    r = ref("hostile")
    call = charge_call(r)
    call.tool_calls[0]["args"].update(extra)
    agent = create_agent(model(call), tools=[charge_pix], middleware=[IdemToolMiddleware(tenant.client(), [GUARD], tools=[charge_pix])])
    [m] = tool_messages(agent.invoke(ask()))
    assert m.status == "error" and not runs
    assert says in str(m.content) and idem_of(m)["key"] is None
    assert tenant.client().get_intent("pix.cobranca", r) is None, "nothing was recorded"
    # The store stays writable: the same reference, well formed, runs once.
    agent = create_agent(model(charge_call(r, call_id="ok")), tools=[charge_pix], middleware=[IdemToolMiddleware(tenant.client(), [GUARD], tools=[charge_pix])])
    [ok] = tool_messages(agent.invoke(ask()))
    assert ok.status == "success" and runs == [1]


def test_a_guard_file_over_its_bounds_is_refused(tmp_path: Path) -> None:
    big = tmp_path / "big.toml"
    big.write_text(GOOD + "#" * (65 * 1024))
    with pytest.raises(GuardFileError) as e:
        load(str(big))
    assert "a guard file is at most 65536" in e.value.message
    many = [{**GUARD, "tool": f"t{i}"} for i in range(65)]
    with pytest.raises(GuardFileError) as e:
        load(many)
    assert "at most 64" in e.value.message
    with pytest.raises(GuardFileError) as e:
        load(str(tmp_path / "missing.toml"))
    assert "cannot be read" in e.value.message


async def test_a_run_cancelled_mid_tool_leaves_the_action_uncertain_and_the_next_run_charges_once(tenant: Tenant) -> None:
    """asyncio cancels the agent's task while the tool waits after the
    provider charged: the cancellation goes on, the action is uncertain at
    once (never completed, never lost), and the next run resends under the
    same key."""
    charged = asyncio.Event()
    psp = Psp(tenant.url, tenant.token)
    inner = psp.tool()
    from langchain_core.tools import tool

    slow = {"on": True}

    @tool
    async def charge_pix(customer_id: str, amount: str, pix_key: str, invoice_ref: str, idempotency_key: str = "") -> str:
        """Charges a Pix payment."""
        out = await asyncio.to_thread(inner.invoke, {"customer_id": customer_id, "amount": amount, "pix_key": pix_key, "invoice_ref": invoice_ref, "idempotency_key": idempotency_key})
        if slow["on"]:
            charged.set()
            await asyncio.sleep(60)
        return str(out)

    r = ref("cancelled")
    async with tenant.async_client() as client:
        agent = create_agent(model(charge_call(r)), tools=[charge_pix], middleware=[IdemToolMiddleware(client, [GUARD], tools=[charge_pix])])
        task = asyncio.create_task(agent.ainvoke(ask()))
        await asyncio.wait_for(charged.wait(), 30)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        intent = await client.get_intent("pix.cobranca", r)
        assert intent is not None
        assert (await client.get_action(intent["key"]))["state"] == "uncertain"
        slow["on"] = False
        agent = create_agent(model(charge_call(r, call_id="again")), tools=[charge_pix], middleware=[IdemToolMiddleware(client, [GUARD], tools=[charge_pix])])
        [m] = tool_messages(await agent.ainvoke(ask()))
    assert m.status == "success" and idem_of(m)["reconciled"] is True
    assert len(tenant.charges()) == 1
