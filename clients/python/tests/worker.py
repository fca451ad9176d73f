"""A worker process the kill tests run: one guarded charge, then it prints
what happened as one JSON line. IDEM_KILL=before|after SIGKILLs the process
inside the effect, before or after the PSP charged; IDEM_RECONCILE=resend
reconciles an uncertain action by re-sending with the same key (the PSP
deduplicates it), =none-found says the provider never acted."""

from __future__ import annotations

import json
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import idem_client  # noqa: E402
from support import pix, psp_charge  # noqa: E402

url, token = os.environ["IDEM_URL"], os.environ["IDEM_TOKEN"]
kill = os.environ.get("IDEM_KILL", "")
mode = os.environ.get("IDEM_RECONCILE", "")
client = idem_client.Client(url, token)


def resend(intent: idem_client.Intent) -> object:
    return psp_charge(url, token, intent.payload, intent.key)


def never(intent: idem_client.Intent) -> object:
    return None


reconcile = {"resend": resend, "none-found": never}.get(mode)


@client.once("pix.cobranca", lease_ms=int(os.environ.get("IDEM_LEASE_MS", "1000")), reconcile=reconcile)
def charge(intent: idem_client.Intent) -> object:
    if kill == "before":
        os.kill(os.getpid(), signal.SIGKILL)
    out = psp_charge(url, token, intent.payload, intent.key)
    if kill == "after":
        os.kill(os.getpid(), signal.SIGKILL)
    return out


try:
    o = charge(pix(os.environ["IDEM_REF"]))
    print(json.dumps({"ok": True, "replayed": o.replayed, "reconciled": o.reconciled, "attempt": o.attempt, "response": o.response}))
except idem_client.ProblemError as e:
    print(json.dumps({"ok": False, "error": type(e).__name__, "status": e.status}))
