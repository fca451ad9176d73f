"""Verifies a webhook as idem's relay signs it (Standard Webhooks), with
the standard library only. Run as a program it reads one delivery as JSON
on stdin ({"secret", "id", "timestamp", "signature", "body"}) and prints
valid or invalid; an HTTP test feeds it a real delivery."""

# ANCHOR: verify
import base64
import hashlib
import hmac
import time


def verify(secret: str, msg_id: str, timestamp: str, body: bytes, signature: str, now: float | None = None) -> bool:
    """`secret` is the endpoint's `whsec_…`; the rest are the
    `webhook-id`, `webhook-timestamp` and `webhook-signature` headers and
    the raw body, as received."""
    if abs((time.time() if now is None else now) - int(timestamp)) > 300:
        return False  # older or newer than 5 minutes: a replay, or a wrong clock
    key = base64.b64decode(secret.removeprefix("whsec_"))
    signed = f"{msg_id}.{timestamp}.".encode() + body
    expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    # The header may carry several signatures, space-separated.
    return any(hmac.compare_digest(s.removeprefix("v1,"), expected) for s in signature.split())
# ANCHOR_END: verify


if __name__ == "__main__":
    import json
    import sys

    d = json.load(sys.stdin)
    ok = verify(d["secret"], d["id"], d["timestamp"], d["body"].encode(), d["signature"], now=float(d["timestamp"]))
    print("valid" if ok else "invalid")
