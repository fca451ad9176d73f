"""An x402 resource server's MCP tool, written with the official MCP Python
SDK and the `x402` package's types and EIP-712 hashing: the stand-in the
gateway's tests and the book use.

`get_report` is paid. Called without `_meta["x402/payment"]` it answers
isError with the payment requirements (x402's MCP transport). Called with
one, it checks the authorization (an EIP-3009 transferWithAuthorization
signed by the payer, for the required amount, asset and pay-to, still
valid), settles it once per nonce, as a chain would, and answers with
`_meta["x402/payment-response"]`. A nonce it already settled answers that
settlement again: the re-presented authorization moves no money. A new
nonce is a new transfer, which is how a client that re-signs on every
retry pays twice.

Nothing here touches a chain: X402_LEDGER (a JSON file shared under a lock)
stands in for it. X402_DELAY_MS answers a new settlement that late.
X402_REFUSE_REPLAY=1 makes it behave as facilitators that answer a nonce
already settled with an error rather than with its settlement.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
import uuid
from typing import Any, Callable

from eth_keys import keys
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult
from x402.mechanisms.evm.eip712 import hash_eip3009_authorization
from x402.mechanisms.evm.types import ExactEIP3009Authorization
from x402.schemas import PaymentPayload, PaymentRequirements

LEDGER = os.environ.get("X402_LEDGER", "x402-ledger.json")
DELAY_MS = int(os.environ.get("X402_DELAY_MS", "0"))
REFUSE_REPLAY = os.environ.get("X402_REFUSE_REPLAY") == "1"
NETWORK, CHAIN_ID = "eip155:84532", 84532  # Base Sepolia, a test network
REQUIREMENTS = PaymentRequirements(
    scheme="exact", network=NETWORK, amount="10000",  # 0.01 USDC (6 decimals)
    asset="0x036CbD53842c5426634e7929541eC2318f3dCF7e",
    pay_to="0x209693Bc6afc0C5328bA36FaF03C514EF312287C",
    max_timeout_seconds=60, extra={"name": "USDC", "version": "2"},
)
app = MCPServer("x402-reports")


def _locked(update: Callable[[dict[str, Any]], Any]) -> Any:
    with open(LEDGER, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.seek(0)
        text = f.read()
        state = json.loads(text) if text.strip() else {"settled": {}, "transfers": []}
        out = update(state)
        f.seek(0)
        f.truncate()
        f.write(json.dumps(state))
        f.flush()
        os.fsync(f.fileno())
        return out


def _refused(message: str) -> CallToolResult:
    required = {"x402Version": 2, "error": message,
                "resource": {"url": "mcp://tool/get_report", "mimeType": "application/json"},
                "accepts": [REQUIREMENTS.model_dump(by_alias=True)]}
    text = json.dumps({"x402/error": {"code": 402, "message": message, "data": required}})
    return CallToolResult.model_validate(
        {"content": [{"type": "text", "text": text}], "structuredContent": required, "isError": True})


def _signer(payment: PaymentPayload) -> str:
    """The address that signed the authorization, or ValueError."""
    a = payment.payload["authorization"]
    auth = ExactEIP3009Authorization(from_address=a["from"], to=a["to"], value=a["value"],
                                     valid_after=a["validAfter"], valid_before=a["validBefore"], nonce=a["nonce"])
    digest = hash_eip3009_authorization(auth, CHAIN_ID, REQUIREMENTS.asset, "USDC", "2")
    sig = bytes.fromhex(payment.payload["signature"].removeprefix("0x"))
    if len(sig) != 65:
        raise ValueError("a signature is 65 bytes")
    rsv = sig[:64] + bytes([sig[64] - 27 if sig[64] >= 27 else sig[64]])
    return keys.Signature(rsv).recover_public_key_from_msg_hash(digest).to_checksum_address()


@app.tool(description="A market report, paid with x402: 0.01 USDC per report.")
def get_report(report: str, ctx: Context) -> CallToolResult:
    raw = (ctx.request_context.meta or {}).get("x402/payment")
    if raw is None:
        return _refused("payment required")
    try:
        payment = PaymentPayload.model_validate(raw)
        a = payment.payload["authorization"]
        accepted = payment.accepted
        if (accepted.amount, accepted.asset.lower(), accepted.pay_to.lower()) != (
                REQUIREMENTS.amount, REQUIREMENTS.asset.lower(), REQUIREMENTS.pay_to.lower()):
            return _refused("the payment does not meet the requirements")
        if a["value"] != REQUIREMENTS.amount or a["to"].lower() != REQUIREMENTS.pay_to.lower():
            return _refused("the authorization does not meet the requirements")
        if _signer(payment).lower() != a["from"].lower():
            return _refused("the signature is not the payer's")
    except (ValueError, KeyError, TypeError) as e:
        return _refused(f"invalid payment: {e}")
    nonce = a["nonce"]

    def settle(state: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
        if nonce in state["settled"]:
            return False, state["settled"][nonce]
        if int(a["validBefore"]) < time.time():
            raise ValueError("the authorization expired")
        receipt = {"success": True, "transaction": "0x" + uuid.uuid4().hex * 2, "network": NETWORK, "payer": a["from"]}
        state["settled"][nonce] = receipt
        state["transfers"].append({"nonce": nonce, "from": a["from"], "value": a["value"], "report": report})
        return True, receipt

    moved, receipt = _locked(settle)
    if not moved and REFUSE_REPLAY:
        return _refused("invalid_exact_evm_payload_authorization_nonce_already_used")
    if moved and DELAY_MS:
        time.sleep(DELAY_MS / 1000)  # settled, answering late
    return CallToolResult.model_validate({
        "content": [{"type": "text", "text": json.dumps({"report": report, "summary": "BRL/USD flat this week"})}],
        "_meta": {"x402/payment-response": receipt},
    })


if __name__ == "__main__":
    app.run()
