"""``idem_client.openai_agents.IdemGuard`` through the OpenAI Agents SDK's
own ``Runner``, with a scripted ``Model`` (the SDK's model interface, as its
own tests script one) asking for the tool calls, against a real idem server
on SQLite and PostgreSQL; the demo provider's ledger is the oracle."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from agents import Agent, FunctionTool, Runner, function_tool, set_tracing_disabled
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

import idem_client
from conftest import Tenant
from idem_client.guards import GuardFileError
from idem_client.openai_agents import IdemGuard
from lc_support import GUARD
from support import psp_charge

HERE = Path(__file__).resolve().parent
# The SDK's traces go to OpenAI's platform by default; nothing leaves here.
set_tracing_disabled(True)
SCHEMA = json.loads((HERE.parent.parent / "conformance" / "mcp-meta.schema.json").read_text())


def ref(name: str) -> str:
    return f"{name}-{time.monotonic_ns()}"


def call(ref: str, amount: str = "180.00", call_id: str = "c1") -> ResponseFunctionToolCall:
    args = {"customer_id": "c-1", "amount": amount, "pix_key": "fulano@example.com", "invoice_ref": ref, "idempotency_key": ""}
    return ResponseFunctionToolCall(type="function_call", call_id=call_id, name="charge_pix", arguments=json.dumps(args), id=f"fc_{call_id}", status="completed")


def done() -> ResponseOutputMessage:
    return ResponseOutputMessage(
        id="msg_done", type="message", role="assistant", status="completed", content=[ResponseOutputText(type="output_text", text="done", annotations=[])]
    )


class Scripted(Model):
    """The SDK's model interface, answering with each scripted call in turn."""

    def __init__(self, *calls: ResponseFunctionToolCall) -> None:
        self.queue: list[Any] = [*calls, done()]

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        return ModelResponse(output=[self.queue.pop(0)], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


def outputs(result: Any) -> list[Any]:
    return [it.output for it in result.new_items if type(it).__name__ == "ToolCallOutputItem"]


class Psp:
    def __init__(self, tenant: Tenant, *, fail_first: bool = False, sleep: float = 0.0) -> None:
        self.tenant, self.fail_first, self.sleep = tenant, fail_first, sleep
        self.calls = 0

    def charge_pix(self, customer_id: str, amount: str, pix_key: str, invoice_ref: str, idempotency_key: str = "") -> str:
        """Charges a Pix payment of `amount` (reais) for an invoice."""
        self.calls += 1
        n = self.calls
        body = psp_charge(self.tenant.url, self.tenant.token, {"valor": amount, "cliente_id": customer_id}, idempotency_key or uuid.uuid4().hex)
        if self.sleep:
            time.sleep(self.sleep)
        if self.fail_first and n == 1:
            raise TimeoutError("the PSP did not answer within 10 s")
        return f"charged {body['amount_cents']} cents, charge {body['id']}"

    def tool(self, idem: IdemGuard | None) -> FunctionTool:
        def charge_pix(customer_id: str, amount: str, pix_key: str, invoice_ref: str, idempotency_key: str = "") -> str:
            """Charges a Pix payment of `amount` (reais) for an invoice."""
            return self.charge_pix(customer_id, amount, pix_key, invoice_ref, idempotency_key)

        return idem.function_tool(charge_pix) if idem else function_tool(charge_pix)


async def test_without_idem_the_model_s_retry_after_a_timeout_charges_twice(tenant: Tenant) -> None:
    psp = Psp(tenant, fail_first=True)
    r = ref("bare")
    await Runner.run(Agent(name="billing", model=Scripted(call(r), call(r, call_id="c2")), tools=[psp.tool(None)]), "pay")
    assert len(tenant.charges()) == 2


async def test_the_model_s_retry_after_a_timeout_resends_under_the_same_key_and_a_re_extraction_replays(tenant: Tenant) -> None:
    psp = Psp(tenant, fail_first=True)
    r = ref("retry")
    said: dict[str, dict[str, Any]] = {}
    async with tenant.async_client() as client:
        idem = IdemGuard(client, [GUARD], on_answer=lambda call_id, meta: said.__setitem__(call_id, meta))
        agent = Agent(name="billing", model=Scripted(call(r), call(r, call_id="c2"), call(r, "1800.00", "c3")), tools=[psp.tool(idem)])
        first, second, third = outputs(await Runner.run(agent, "pay"))
    assert len(tenant.charges()) == 1 and psp.calls == 2
    assert "whether it was executed is unknown" in first and "retrying this same call is safe" in first
    assert second.startswith("charged 18000 cents")
    assert "the amount you sent, 1800.00, differs from the frozen intent's 180.00" in third
    assert f"charge_pix was already executed for {r} at " in third
    for meta in said.values():
        jsonschema.validate(meta, SCHEMA)
    assert said["c1"]["source"] == "idem" and said["c2"]["reconciled"] is True and said["c3"]["replayed"] is True


async def test_arguments_the_schema_refuses_are_never_recorded(tenant: Tenant) -> None:
    psp = Psp(tenant)
    r = ref("invalid")
    bad = call(r)
    bad.arguments = json.dumps({"customer_id": "c-1", "amount": "180.00", "invoice_ref": r})
    async with tenant.async_client() as client:
        agent = Agent(name="billing", model=Scripted(bad, call(r, "181.00", "c2")), tools=[psp.tool(IdemGuard(client, [GUARD]))])
        first, second = outputs(await Runner.run(agent, "pay"))
        intent = await client.get_intent("pix.cobranca", r)
    assert "error" in first.lower() and psp.calls == 1
    assert intent is not None and intent["payload"]["valor"] == "18100", "the refused call froze nothing"
    assert second.startswith("charged 18100 cents")


async def test_8_concurrent_runs_of_the_same_conversation_charge_once(tenant: Tenant) -> None:
    psp = Psp(tenant, sleep=0.2)
    r = ref("eight")
    async with tenant.async_client() as client:
        tool = psp.tool(IdemGuard(client, [GUARD]))

        async def run(i: int) -> str:
            [out] = outputs(await Runner.run(Agent(name="billing", model=Scripted(call(r, call_id=f"c{i}")), tools=[tool]), "pay"))
            return out

        answers = await asyncio.gather(*(run(i) for i in range(8)))
    assert psp.calls == 1 and len(tenant.charges()) == 1
    assert sum("already executed" in a for a in answers) == 7
    assert len({a.split("charge ")[1].split()[0] for a in answers}) == 1


def test_a_tool_no_guard_names_is_refused_at_start() -> None:
    idem = IdemGuard(idem_client.AsyncClient("http://127.0.0.1:9", "t"), [GUARD])

    def refund(charge_id: str) -> str:
        """Refunds."""
        return "ok"

    with pytest.raises(GuardFileError) as e:
        idem.function_tool(refund)
    assert "no guard names tool `refund`" in e.value.message


def test_a_guard_naming_an_argument_the_function_lacks_is_refused_at_start() -> None:
    idem = IdemGuard(idem_client.AsyncClient("http://127.0.0.1:9", "t"), [{**GUARD, "key_argument": "idem_key"}])

    def charge_pix(customer_id: str, amount: str, pix_key: str, invoice_ref: str, idempotency_key: str = "") -> str:
        """Charges."""
        return "ok"

    with pytest.raises(GuardFileError) as e:
        idem.function_tool(charge_pix)
    assert "key_argument reads `idem_key`" in e.value.message
