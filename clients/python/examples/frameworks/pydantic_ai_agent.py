"""A Pydantic AI agent whose payment tool runs once per invoice, whatever
the model asks again.

The model is Pydantic AI's own FunctionModel, scripted, so this runs
offline: it asks for the charge, then again with a re-extracted amount.
With a real model, pass its name (``Agent("openai:gpt-5", ...)``) instead.
"""

# ANCHOR: pydantic_ai
import asyncio
import os
import uuid
from decimal import Decimal

import httpx
from pydantic_ai import Agent, FunctionToolset
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import FunctionModel

import idem_client
from idem_client.pydantic_ai import IdemToolset

URL, TOKEN = os.environ["IDEM_URL"], os.environ["IDEM_TOKEN"]
GUARDS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pay-guard.toml")


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


def script(amounts: list[str]) -> FunctionModel:  # stands in for a real model
    def fn(messages, info):
        if amounts:
            args = {"customer_id": "c-1", "amount": amounts.pop(0), "pix_key": "fulano@example.com", "invoice_ref": "FAT-1"}
            return ModelResponse(parts=[ToolCallPart("charge_pix", args, tool_call_id=f"call_{2 - len(amounts)}")])
        return ModelResponse(parts=[TextPart("Paid.")])

    return FunctionModel(fn)


async def main() -> None:
    async with idem_client.AsyncClient(base_url=URL, token=TOKEN) as client:
        tools = IdemToolset(FunctionToolset([charge_pix]), client, GUARDS)  # the line idem adds
        agent = Agent(script(["180.00", "1800.00"]), toolsets=[tools])
        result = await agent.run("pay invoice FAT-1")
    for message in result.all_messages():
        for part in message.parts:
            if isinstance(part, ToolReturnPart):
                print(part.tool_call_id, part.metadata["idem"]["replayed"], str(part.content).splitlines()[0])


asyncio.run(main())
# ANCHOR_END: pydantic_ai
