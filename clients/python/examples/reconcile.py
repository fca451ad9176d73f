"""An effect that raised leaves its outcome unknown; reconcile settles it."""

# ANCHOR: uncertain
import os

import idem_client

client = idem_client.Client(base_url=os.environ["IDEM_URL"], token=os.environ["IDEM_TOKEN"])
psp = {}  # stands in for the provider: what it charged, by idempotency key

payload = {"cliente_id": "c-9", "valor": "99.90",
           "chave_pix_destino": "fulano@example.com", "referencia_intencao": "FAT-9"}


def charge_but_time_out(intent: idem_client.Intent) -> dict:
    psp[intent.key] = {"id": "ch_9", "valor": intent.payload["valor"]}  # it charged...
    raise TimeoutError("...and the answer never came")


try:
    client.run("pix.cobranca", charge_but_time_out, payload)
except TimeoutError:
    pass  # the action is uncertain now: never retried with a new key

try:
    client.run("pix.cobranca", charge_but_time_out, payload)
except idem_client.Uncertain as e:
    print("uncertain:", e.key[:12], "previous attempt", e.previous["token"])


def look_up(intent: idem_client.Intent):
    # Ask the provider by key; None means it never acted (then the effect
    # runs, under the same key).
    return psp.get(intent.key)


out = client.run("pix.cobranca", charge_but_time_out, payload, reconcile=look_up)
assert out.reconciled and out.response == {"id": "ch_9", "valor": "99.90"}
print("reconciled:", out.response)
# ANCHOR_END: uncertain
