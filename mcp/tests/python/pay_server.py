"""A payment provider's MCP server, written with the official Python SDK,
for the gateway's tests: `create_pix_charge` honours its idempotency key
(a repeated key returns the first charge) and writes every REAL execution
to the ledger file PAY_LEDGER, shared by every process under a file lock.
PAY_HTTP_PORT serves it over Streamable HTTP instead of stdio.
PAY_DELAY_MS makes a new charge answer late, after it was executed (the window
in which the tests kill the gateway). `echo` is a tool the gateway passes
through; `refuse_charge` answers isError. `complete_checkout` takes its
arguments nested as ACP's MCP binding does (`meta.idempotency_key`, the
order under `payload`), declared through pydantic models ($defs and $ref in
its input schema)."""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import sys
import time
import uuid

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult
from pydantic import BaseModel

LEDGER = os.environ["PAY_LEDGER"]
DELAY_MS = int(os.environ.get("PAY_DELAY_MS", "0"))
# A receipt this many characters longer (a `note`): a result over a bound.
PAD = int(os.environ.get("PAY_PAD", "0"))
app = MCPServer("pay")


def _locked(update):  # type: ignore[no-untyped-def]
    with open(LEDGER, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.seek(0)
        text = f.read()
        state = json.loads(text) if text.strip() else {"by_key": {}, "executions": []}
        out = update(state)
        f.seek(0)
        f.truncate()
        f.write(json.dumps(state))
        f.flush()
        os.fsync(f.fileno())
        return out


@app.tool(description="Charge a customer by Pix. Pass an idempotency_key: a repeated key returns the first charge.")
def create_pix_charge(customer_id: str, amount: str, pix_key: str, invoice_ref: str, ctx: Context,
                      idempotency_key: str = "") -> dict:
    # The trace context the call arrived with: the tests check it is the
    # gateway's span, never the agent's first attempt frozen.
    traceparent = (ctx.request_context.meta or {}).get("traceparent")

    def charge(state):  # type: ignore[no-untyped-def]
        if idempotency_key and idempotency_key in state["by_key"]:
            return None, state["by_key"][idempotency_key]
        receipt = {"charge_id": "ch_" + uuid.uuid4().hex[:12], "amount": amount, "customer_id": customer_id,
                   "pix_key": pix_key, "invoice_ref": invoice_ref}
        if PAD:
            receipt["note"] = "n" * PAD
        state["executions"].append(dict(receipt, idempotency_key=idempotency_key, pid=os.getpid(),
                                        traceparent=traceparent))
        if idempotency_key:
            state["by_key"][idempotency_key] = receipt
        return receipt, receipt

    executed, receipt = _locked(charge)
    if DELAY_MS and executed:
        print(f"pay_server: charged {receipt['charge_id']}, answering in {DELAY_MS} ms", file=sys.stderr, flush=True)
        time.sleep(DELAY_MS / 1000)
    return receipt


class CheckoutMeta(BaseModel):
    idempotency_key: str = ""


class Total(BaseModel):
    amount: str
    currency: str


class CheckoutPayload(BaseModel):
    checkout_session_id: str
    buyer: str
    pix_key: str
    totals: list[Total]


@app.tool(description="Complete a checkout session (ACP-shaped: meta.idempotency_key, the order under payload).")
async def complete_checkout(meta: CheckoutMeta, payload: CheckoutPayload) -> dict:
    key = meta.idempotency_key
    stall = os.environ.get("PAY_STALL_IF")
    if stall and os.path.exists(stall):
        # The request is lost before the merchant acts: nothing is executed.
        await asyncio.sleep(3)
        raise ValueError("the merchant never received it")

    def complete(state):  # type: ignore[no-untyped-def]
        if key and key in state["by_key"]:
            return None, state["by_key"][key]
        order = {"order_id": "ord_" + uuid.uuid4().hex[:12], "amount": payload.totals[0].amount,
                 "checkout_session_id": payload.checkout_session_id}
        state["executions"].append(dict(order, idempotency_key=key, invoice_ref=payload.checkout_session_id))
        state.setdefault("orders", {})[payload.checkout_session_id] = order
        if key:
            state["by_key"][key] = order
        return order, order

    executed, order = _locked(complete)
    if DELAY_MS and executed:
        await asyncio.sleep(DELAY_MS / 1000)  # executed, answering late
    return order


class Order(BaseModel):
    order_id: str
    amount: str
    checkout_session_id: str


@app.tool(description="complete_checkout with a declared output schema (an Order).")
async def complete_typed_checkout(meta: CheckoutMeta, payload: CheckoutPayload) -> Order:
    return Order(**await complete_checkout(meta, payload))


@app.tool(description="Read an order by the idempotency key it was placed with (a lookup by idem's key). Reads, never acts.")
def get_order_by_key(key: str) -> dict:
    order = _locked(lambda s: s["by_key"].get(key))
    return {"status": "completed", "order": order} if order else {"status": "none"}


@app.tool(description="Read a checkout session (ACP's get_checkout_session): its status, and its order once completed. Reads, never acts.")
def get_checkout(id: str) -> dict:
    order = _locked(lambda s: s.get("orders", {}).get(id))
    if order is None:
        return {"id": id, "status": "ready_for_payment"}
    return {"id": id, "status": "completed", "order": order}


@app.tool(description="x402-shaped: settles the payment authorization in _meta['x402/payment'] once per nonce, "
                       "and answers with _meta['x402/payment-response'].")
def pay_resource(resource: str, amount: str, pay_to: str, payer_pix: str, ctx: Context) -> CallToolResult:
    payment = (ctx.request_context.meta or {}).get("x402/payment")
    if not isinstance(payment, dict) or not payment.get("nonce"):
        return CallToolResult.model_validate({"content": [{"type": "text", "text": "402: payment required"}], "isError": True})
    nonce = str(payment["nonce"])

    def settle(state):  # type: ignore[no-untyped-def]
        settled = state.setdefault("nonces", {})
        if nonce in settled:
            return None, settled[nonce]
        receipt = {"transaction": "0x" + uuid.uuid4().hex, "nonce": nonce, "success": True}
        state["executions"].append({"settled": nonce, "invoice_ref": resource, "amount": amount, "idempotency_key": ""})
        settled[nonce] = receipt
        return receipt, receipt

    executed, receipt = _locked(settle)
    if DELAY_MS and executed:
        time.sleep(DELAY_MS / 1000)
    return CallToolResult.model_validate({
        "content": [{"type": "text", "text": json.dumps({"resource": resource, "paid": amount})}],
        "_meta": {"x402/payment-response": receipt},
    })


@app.tool(description="The _meta keys this call arrived with (a tool the gateway passes through).")
def meta_keys(ctx: Context) -> str:
    return " ".join(sorted(ctx.request_context.meta or {}))


@app.tool(description="Refuse a charge: always answers isError.")
def refuse_charge(customer_id: str, amount: str, pix_key: str, invoice_ref: str, idempotency_key: str = "") -> dict:
    _locked(lambda s: s["executions"].append({"refused": invoice_ref, "idempotency_key": idempotency_key}))
    raise ValueError("card declined")


@app.resource("pay://fees", description="The fee table (a resource the gateway passes through).")
def fees() -> str:
    return "pix: 0.00"


@app.prompt(description="How to ask for a refund (a prompt the gateway passes through).")
def refund_help(invoice_ref: str) -> str:
    return f"To refund {invoice_ref}, call refund with its charge id."


@app.tool(description="Say it back.")
def echo(text: str) -> str:
    return text


@app.tool(description="The names of this server's environment variables (what it inherited).")
def environment() -> str:
    return " ".join(sorted(os.environ))


if __name__ == "__main__":
    # A test's switch: while this file exists the server will not start
    # (an upstream that stays down after it died).
    down = os.environ.get("PAY_DOWN_IF")
    if down and os.path.exists(down):
        raise SystemExit(3)
    port = os.environ.get("PAY_HTTP_PORT")
    if port:
        # Over Streamable HTTP, for a gateway whose [upstream] is a url.
        app.run("streamable-http", host="127.0.0.1", port=int(port))
    else:
        app.run()
