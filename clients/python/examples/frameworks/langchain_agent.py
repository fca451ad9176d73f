"""A LangChain agent whose payment tool runs once per invoice, whatever
LangChain's retry middleware, a re-extraction or a resumed thread does.

The model is LangChain's own scripted fake, so this runs offline: it asks
for the charge, then asks again with a re-extracted amount. With a real
model, put ``init_chat_model("openai:gpt-5")`` in its place.
"""

# ANCHOR: langchain
import os
import uuid
from decimal import Decimal

import httpx
from langchain.agents import create_agent
from langchain.agents.middleware import ToolRetryMiddleware
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool

import idem_client
from idem_client.langchain import IdemToolMiddleware

URL, TOKEN = os.environ["IDEM_URL"], os.environ["IDEM_TOKEN"]
GUARDS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pay-guard.toml")


@tool
def charge_pix(customer_id: str, amount: str, pix_key: str, invoice_ref: str, idempotency_key: str = "") -> str:
    """Charges a Pix payment of `amount` (reais, e.g. "180.00") for an invoice."""
    r = httpx.post(
        URL + "/v1/demo/charges",  # the demo provider stands in for a PSP
        headers={"authorization": f"Bearer {TOKEN}", "idempotency-key": idempotency_key or str(uuid.uuid4())},
        json={"amount_cents": int(Decimal(amount) * 100), "currency": "BRL", "customer": customer_id},
    )
    r.raise_for_status()
    return f"charged {r.json()['amount_cents']} cents, charge {r.json()['id']}"


client = idem_client.Client(base_url=URL, token=TOKEN)
idem = IdemToolMiddleware(client, GUARDS, tools=[charge_pix])  # the lines idem adds: this one,
agent_tools, middleware = [charge_pix], [ToolRetryMiddleware(max_retries=2), idem]  # and `idem` after the retry


class Scripted(FakeMessagesListChatModel):  # stands in for a real chat model
    def bind_tools(self, tools, **kwargs):
        return self


def call(amount: str, call_id: str) -> AIMessage:
    args = {"customer_id": "c-1", "amount": amount, "pix_key": "fulano@example.com", "invoice_ref": "FAT-1"}
    return AIMessage(content="", tool_calls=[{"name": "charge_pix", "args": args, "id": call_id}])


model = Scripted(responses=[call("180.00", "call_1"), call("1800.00", "call_2"), AIMessage(content="Paid.")])
agent = create_agent(model, tools=agent_tools, middleware=middleware)
out = agent.invoke({"messages": [HumanMessage("pay invoice FAT-1", id="wamid.1")]})
for m in out["messages"]:
    if m.type == "tool":
        print(m.tool_call_id, m.response_metadata["idem"]["replayed"], m.content.splitlines()[0])
# ANCHOR_END: langchain
