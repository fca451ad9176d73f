"""An OpenAI Agents SDK agent whose payment tool runs once per invoice,
whatever the model asks again.

The model is scripted through the SDK's Model interface, so this runs
offline: it asks for the charge, then again with a re-extracted amount.
With a real model, leave ``model=`` out (or name one).
"""

# ANCHOR: openai_agents
import asyncio
import json
import os
import uuid
from decimal import Decimal

import httpx
from agents import Agent, Runner, set_tracing_disabled
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

import idem_client
from idem_client.openai_agents import IdemGuard

URL, TOKEN = os.environ["IDEM_URL"], os.environ["IDEM_TOKEN"]
GUARDS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pay-guard.toml")
set_tracing_disabled(True)  # the SDK exports traces to OpenAI by default


class Scripted(Model):  # stands in for a real model
    def __init__(self, amounts: list[str]) -> None:
        self.amounts = amounts

    async def get_response(self, *args, **kwargs) -> ModelResponse:
        if self.amounts:
            n = 3 - len(self.amounts)
            args = {"customer_id": "c-1", "amount": self.amounts.pop(0), "pix_key": "fulano@example.com", "invoice_ref": "FAT-1", "idempotency_key": ""}
            out = ResponseFunctionToolCall(type="function_call", call_id=f"call_{n}", name="charge_pix", arguments=json.dumps(args))
        else:
            out = ResponseOutputMessage(id="m", type="message", role="assistant", status="completed",
                                        content=[ResponseOutputText(type="output_text", text="Paid.", annotations=[])])
        return ModelResponse(output=[out], usage=Usage(), response_id=None)

    def stream_response(self, *args, **kwargs):
        raise NotImplementedError


async def main() -> None:
    async with idem_client.AsyncClient(base_url=URL, token=TOKEN) as client:
        idem = IdemGuard(client, GUARDS)  # the lines idem adds: this one,

        @idem.function_tool  # and this one, in place of @function_tool
        async def charge_pix(customer_id: str, amount: str, pix_key: str, invoice_ref: str, idempotency_key: str = "") -> str:
            """Charges a Pix payment of `amount` (reais, e.g. "180.00") for an invoice."""
            async with httpx.AsyncClient() as http:
                r = await http.post(
                    URL + "/v1/demo/charges",  # the demo provider stands in for a PSP
                    headers={"authorization": f"Bearer {TOKEN}", "idempotency-key": idempotency_key or str(uuid.uuid4())},
                    json={"amount_cents": int(Decimal(amount) * 100), "currency": "BRL", "customer": customer_id},
                )
            r.raise_for_status()
            return f"charged {r.json()['amount_cents']} cents, charge {r.json()['id']}"

        agent = Agent(name="billing", model=Scripted(["180.00", "1800.00"]), tools=[charge_pix])
        result = await Runner.run(agent, "pay invoice FAT-1")
    for item in result.new_items:
        if item.type == "tool_call_output_item":
            print(item.raw_item["call_id"], "already executed" in item.output, item.output.splitlines()[0])


asyncio.run(main())
# ANCHOR_END: openai_agents
