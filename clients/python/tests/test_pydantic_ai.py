"""``idem_client.pydantic_ai.IdemToolset`` through Pydantic AI's own agent
loop, with its ``FunctionModel`` scripting the tool calls, against a real
idem server on SQLite and PostgreSQL; the demo provider's ledger is the
oracle."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from pydantic_ai import Agent, FunctionToolset, ModelRetry
from pydantic_ai.messages import ModelMessage, ModelResponse, RetryPromptPart, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

import idem_client
from conftest import Tenant
from idem_client.guards import GuardFileError
from idem_client.pydantic_ai import IdemToolset, OutcomeUnknown
from lc_support import GUARD
from support import psp_charge

HERE = Path(__file__).resolve().parent
SCHEMA = json.loads((HERE.parent.parent / "conformance" / "mcp-meta.schema.json").read_text())


def ref(name: str) -> str:
    return f"{name}-{time.monotonic_ns()}"


def call(ref: str, amount: str = "180.00", call_id: str = "c1") -> ToolCallPart:
    args = {"customer_id": "c-1", "amount": amount, "pix_key": "fulano@example.com", "invoice_ref": ref}
    return ToolCallPart("charge_pix", args, tool_call_id=call_id)


def scripted(*calls: ToolCallPart) -> FunctionModel:
    """Asks for each call in turn (one per model turn), then answers."""
    queue = list(calls)

    def fn(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if queue:
            return ModelResponse(parts=[queue.pop(0)])
        return ModelResponse(parts=[TextPart("done")])

    return FunctionModel(fn)


def returns(result: Any) -> list[ToolReturnPart | RetryPromptPart]:
    return [p for m in result.all_messages() for p in m.parts if isinstance(p, (ToolReturnPart, RetryPromptPart))]


def idem_of(part: ToolReturnPart) -> dict[str, Any]:
    meta: dict[str, Any] = part.metadata["idem"]
    jsonschema.validate(meta, SCHEMA)
    return meta


class Psp:
    def __init__(self, tenant: Tenant, *, fail_first: bool = False, sleep: float = 0.0) -> None:
        self.tenant, self.fail_first, self.sleep = tenant, fail_first, sleep
        self.calls = 0

    def toolset(self) -> FunctionToolset[None]:
        psp = self

        async def charge_pix(customer_id: str, amount: str, pix_key: str, invoice_ref: str, idempotency_key: str = "") -> str:
            """Charges a Pix payment of `amount` (reais) for an invoice."""
            psp.calls += 1
            n = psp.calls
            body = await asyncio.to_thread(
                psp_charge, psp.tenant.url, psp.tenant.token, {"valor": amount, "cliente_id": customer_id}, idempotency_key or uuid.uuid4().hex
            )
            if psp.sleep:
                await asyncio.sleep(psp.sleep)
            if psp.fail_first and n == 1:
                raise TimeoutError("the PSP did not answer within 10 s")
            return f"charged {body['amount_cents']} cents, charge {body['id']}"

        return FunctionToolset([charge_pix])


async def test_without_idem_the_model_s_second_call_charges_again(tenant: Tenant) -> None:
    psp = Psp(tenant)
    r = ref("bare")
    await Agent(scripted(call(r), call(r, "1800.00", "c2")), toolsets=[psp.toolset()]).run("pay")
    assert len(tenant.charges()) == 2


async def test_a_divergent_second_call_gets_the_stored_result_under_its_own_id(tenant: Tenant) -> None:
    psp = Psp(tenant)
    r = ref("diverge")
    async with tenant.async_client() as client:
        agent = Agent(scripted(call(r), call(r, "1800.00", "c2")), toolsets=[IdemToolset(psp.toolset(), client, [GUARD])])
        first, second = returns(await agent.run("pay"))
    assert psp.calls == 1 and [c["amount_cents"] for c in tenant.charges()] == [18000]
    assert isinstance(first, ToolReturnPart) and isinstance(second, ToolReturnPart)
    assert (first.tool_call_id, second.tool_call_id) == ("c1", "c2")
    assert idem_of(first)["replayed"] is False and idem_of(second)["replayed"] is True and idem_of(second)["diverged"] is True
    text = str(second.content)
    assert text.startswith(str(first.content))
    assert "the amount you sent, 1800.00, differs from the frozen intent's 180.00" in text
    assert f"charge_pix was already executed for {r} at " in text


@pytest.mark.parametrize("policy", ["resend", "refuse"])
async def test_a_timeout_after_the_charge_is_uncertain_and_the_model_s_retry_never_charges_twice(tenant: Tenant, policy: str) -> None:
    psp = Psp(tenant, fail_first=True)
    r = ref("timeout")
    async with tenant.async_client() as client:
        toolset = IdemToolset(psp.toolset(), client, [{**GUARD, "on_uncertain": policy}])
        with pytest.raises(OutcomeUnknown) as e:
            await Agent(scripted(call(r)), toolsets=[toolset]).run("pay")
        assert isinstance(e.value.__cause__, TimeoutError)
        assert (await client.get_action(e.value.idem["key"]))["state"] == "uncertain"
        # The model (or the caller) tries again: the same call.
        result = await Agent(scripted(call(r, call_id="c2")), toolsets=[toolset]).run("pay")
    [part] = returns(result)
    assert len(tenant.charges()) == 1
    if policy == "resend":
        assert isinstance(part, ToolReturnPart) and idem_of(part)["reconciled"] is True and psp.calls == 2
    else:
        assert isinstance(part, ToolReturnPart) and part.outcome == "failed" and psp.calls == 1
        assert f"the outcome of an earlier charge_pix for {r} is unknown" in str(part.content)


async def test_model_retry_from_the_tool_gives_the_claim_back_and_the_next_call_runs(tenant: Tenant) -> None:
    runs: list[str] = []

    async def charge_pix(customer_id: str, amount: str, pix_key: str, invoice_ref: str, idempotency_key: str = "") -> str:
        """Charges."""
        runs.append(idempotency_key)
        if len(runs) == 1:
            raise ModelRetry("the PSP asks for the customer's confirmation first: call again")
        return "charged"

    r = ref("retry")
    async with tenant.async_client() as client:
        agent = Agent(scripted(call(r), call(r, call_id="c2")), toolsets=[IdemToolset(FunctionToolset([charge_pix]), client, [GUARD])])
        parts = returns(await agent.run("pay"))
    assert isinstance(parts[0], ToolReturnPart) and parts[0].outcome == "retried" and "confirmation" in str(parts[0].content)
    assert isinstance(parts[1], ToolReturnPart) and parts[1].content == "charged" and idem_of(parts[1])["attempt"] == 2
    assert runs[0] == runs[1] and len(runs) == 2


async def test_8_concurrent_runs_of_the_same_conversation_charge_once(tenant: Tenant) -> None:
    psp = Psp(tenant, sleep=0.2)
    r = ref("eight")
    async with tenant.async_client() as client:
        toolset = IdemToolset(psp.toolset(), client, [GUARD])

        async def run(i: int) -> ToolReturnPart:
            [part] = returns(await Agent(scripted(call(r, call_id=f"c{i}")), toolsets=[toolset]).run("pay"))
            assert isinstance(part, ToolReturnPart) and part.tool_call_id == f"c{i}"
            return part

        parts = await asyncio.gather(*(run(i) for i in range(8)))
    assert psp.calls == 1 and len(tenant.charges()) == 1
    assert sorted(idem_of(p)["replayed"] for p in parts) == [False] + [True] * 7


async def test_a_guard_naming_an_argument_the_tool_lacks_is_refused_at_start_naming_the_line(tmp_path: Path) -> None:
    path = tmp_path / "g.toml"
    path.write_text('[[guard]]\ntool = "charge_pix"\naction = "pix.cobranca"\n[guard.fields]\ncliente_id = "customer_id"\nvalor = "amout"\n')
    client = idem_client.AsyncClient("http://127.0.0.1:9", "t")
    with pytest.raises(GuardFileError) as e:
        IdemToolset(Psp.__new__(Psp).toolset(), client, str(path))
    assert e.value.where == f"{path}:6" and "did you mean `amount`" in e.value.message


async def test_the_turn_needs_a_function_from_the_deps() -> None:
    client = idem_client.AsyncClient("http://127.0.0.1:9", "t")
    g = {**GUARD, "fields": {**GUARD["fields"], "referencia_intencao": "$turn"}}
    with pytest.raises(GuardFileError) as e:
        IdemToolset(FunctionToolset([]), client, [g])
    assert "turn=lambda ctx" in e.value.message
