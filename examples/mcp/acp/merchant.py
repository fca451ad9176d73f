"""An ACP merchant's MCP server, written with the official MCP Python SDK:
the stand-in the gateway's tests and the book use.

Three of the checkout binding's tools, with arguments nested as ACP's MCP
binding has them (`meta.idempotency_key`, the request under `payload`):

- `create_checkout_session` opens a session for some items;
- `complete_checkout_session` places the order. It honours the key as
  ACP's HTTP rules say: the same key and the same body answer the stored
  session; the same key with another body is a conflict. A new key is a
  new order, as with a merchant whose retries made two orders;
- `get_checkout_session` reads a session: its status and, once completed,
  its orders. It reads, never acts.

Every order is written to ACP_STATE (a JSON file shared under a lock by
every process). Fault switches for tests: ACP_DELAY_MS answers a new
order that late (after it is placed); while the file ACP_STALL_IF exists a
complete writes ACP_STALL_IF.seen, waits 3 s and fails before acting (a
request that never arrived).
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import uuid
from typing import Any, Callable, Literal

from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel

STATE = os.environ.get("ACP_STATE", "acp-merchant.json")
DELAY_MS = int(os.environ.get("ACP_DELAY_MS", "0"))
PRICES = {"coffee-1kg": 9000, "filter-100": 1500}  # minor units (BRL cents)
app = MCPServer("acp-merchant")


def _locked(update: Callable[[dict[str, Any]], Any]) -> Any:
    with open(STATE, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.seek(0)
        text = f.read()
        state = json.loads(text) if text.strip() else {"sessions": {}, "by_key": {}, "orders": []}
        out = update(state)
        f.seek(0)
        f.truncate()
        f.write(json.dumps(state))
        f.flush()
        os.fsync(f.fileno())
        return out


class Meta(BaseModel):
    idempotency_key: str = ""


class Item(BaseModel):
    id: str
    quantity: int


class Total(BaseModel):
    type: Literal["total"] = "total"
    display_text: str = "Total"
    amount: int


class Buyer(BaseModel):
    email: str
    first_name: str = ""


class PaymentData(BaseModel):
    token: str
    provider: str = "stripe"


class Order(BaseModel):
    id: str
    checkout_session_id: str
    amount: int
    currency: str


class CheckoutSession(BaseModel):
    id: str
    status: Literal["not_ready_for_payment", "ready_for_payment", "in_progress", "completed", "canceled"]
    currency: str
    line_items: list[Item]
    totals: list[Total]
    orders: list[Order] = []


class CreatePayload(BaseModel):
    items: list[Item]
    currency: str = "brl"


class CompletePayload(BaseModel):
    checkout_session_id: str
    buyer: Buyer
    items: list[Item]
    totals: list[Total]
    currency: str
    payment_data: PaymentData


def _session(state: dict[str, Any], id: str) -> CheckoutSession:
    s = state["sessions"].get(id)
    if s is None:
        raise ValueError(f"no checkout session {id}")
    return CheckoutSession.model_validate(s)


@app.tool(description="Open a checkout session for some items.")
def create_checkout_session(meta: Meta, payload: CreatePayload) -> CheckoutSession:
    def create(state: dict[str, Any]) -> CheckoutSession:
        amount = sum(PRICES[i.id] * i.quantity for i in payload.items)
        s = CheckoutSession(id="cs_" + uuid.uuid4().hex[:12], status="ready_for_payment", currency=payload.currency,
                            line_items=payload.items, totals=[Total(amount=amount)])
        state["sessions"][s.id] = s.model_dump()
        return s

    return _locked(create)


@app.tool(description="Complete a checkout session: place the order and charge the buyer. "
                      "meta.idempotency_key: the same key and body answer the first completion.")
async def complete_checkout_session(meta: Meta, payload: CompletePayload) -> CheckoutSession:
    stall = os.environ.get("ACP_STALL_IF")
    if stall and os.path.exists(stall):
        open(stall + ".seen", "w").close()  # the test knows it was forwarded
        await asyncio.sleep(3)
        raise ValueError("the merchant never received the request")
    body = payload.model_dump_json()

    def complete(state: dict[str, Any]) -> tuple[bool, CheckoutSession]:
        key = meta.idempotency_key
        if key and key in state["by_key"]:
            seen = state["by_key"][key]
            if seen["body"] != body:
                raise ValueError("idempotency_conflict: this key was used with another request body")
            return False, _session(state, seen["session"])
        s = _session(state, payload.checkout_session_id)
        if s.status == "canceled":
            raise ValueError(f"checkout session {s.id} is canceled")
        amount = sum(PRICES[i.id] * i.quantity for i in payload.items)
        if payload.totals[0].amount != amount:
            raise ValueError(f"the total {payload.totals[0].amount} is not the items' {amount}")
        order = Order(id="ord_" + uuid.uuid4().hex[:12], checkout_session_id=s.id, amount=amount,
                      currency=payload.currency)
        s.status, s.line_items, s.totals = "completed", payload.items, payload.totals
        s.orders.append(order)
        state["sessions"][s.id] = s.model_dump()
        state["orders"].append(dict(order.model_dump(), idempotency_key=key, buyer=payload.buyer.email))
        if key:
            state["by_key"][key] = {"body": body, "session": s.id}
        return True, s

    placed, session = _locked(complete)
    if placed and DELAY_MS:
        await asyncio.sleep(DELAY_MS / 1000)  # placed, answering late
    return session


@app.tool(description="Read a checkout session: its status and, once completed, its orders. Reads, never acts.")
def get_checkout_session(id: str) -> CheckoutSession:
    return _locked(lambda state: _session(state, id))


if __name__ == "__main__":
    app.run()
