"""A payment provider's MCP server, written with the official Python SDK,
for the gateway's tests: `create_pix_charge` honours its idempotency key
(a repeated key returns the first charge) and writes every REAL execution
to the ledger file PAY_LEDGER, shared by every process under a file lock.
PAY_HTTP_PORT serves it over Streamable HTTP instead of stdio.
PAY_DELAY_MS makes a new charge answer late, after it was executed (the window
in which the tests kill the gateway). `echo` is a tool the gateway passes
through; `refuse_charge` answers isError."""

from __future__ import annotations

import fcntl
import json
import os
import sys
import time
import uuid

from mcp.server.mcpserver import MCPServer

LEDGER = os.environ["PAY_LEDGER"]
DELAY_MS = int(os.environ.get("PAY_DELAY_MS", "0"))
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
def create_pix_charge(customer_id: str, amount: str, pix_key: str, invoice_ref: str, idempotency_key: str = "") -> dict:
    def charge(state):  # type: ignore[no-untyped-def]
        if idempotency_key and idempotency_key in state["by_key"]:
            return None, state["by_key"][idempotency_key]
        receipt = {"charge_id": "ch_" + uuid.uuid4().hex[:12], "amount": amount, "customer_id": customer_id,
                   "pix_key": pix_key, "invoice_ref": invoice_ref}
        state["executions"].append(dict(receipt, idempotency_key=idempotency_key, pid=os.getpid()))
        if idempotency_key:
            state["by_key"][idempotency_key] = receipt
        return receipt, receipt

    executed, receipt = _locked(charge)
    if DELAY_MS and executed:
        print(f"pay_server: charged {receipt['charge_id']}, answering in {DELAY_MS} ms", file=sys.stderr, flush=True)
        time.sleep(DELAY_MS / 1000)
    return receipt


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
