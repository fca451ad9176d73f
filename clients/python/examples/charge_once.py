"""A charge guarded by the decorator: run it as often as a queue would."""

# ANCHOR: decorator
import os
from decimal import Decimal

import httpx

import idem_client

URL, TOKEN = os.environ["IDEM_URL"], os.environ["IDEM_TOKEN"]
client = idem_client.Client(base_url=URL, token=TOKEN)


@client.once("pix.cobranca", lease_ms=30_000, on_in_flight="wait")
def charge(intent: idem_client.Intent) -> dict:
    # intent.payload is the candidate as its FIRST delivery sent it.
    cents = int(Decimal(intent.payload["valor"]) * 100)
    r = httpx.post(
        URL + "/v1/demo/charges",  # the demo provider stands in for a PSP
        headers={"authorization": f"Bearer {TOKEN}", "idempotency-key": intent.key},
        json={"amount_cents": cents, "currency": "BRL", "customer": intent.payload["cliente_id"]},
    )
    if r.status_code == 422:
        # The provider refused: it did not act, and never will for this payload.
        raise idem_client.Failed(r.text, retryable=False)
    r.raise_for_status()
    return r.json()


message = {"cliente_id": "c-1", "valor": "180.00",
           "chave_pix_destino": "fulano@example.com", "referencia_intencao": "FAT-1"}
first = charge(message)
again = charge(message)                       # a redelivery: nothing runs
assert not first.replayed and again.replayed
assert again.response == first.response
print(first.response["id"], "charged", first.response["amount_cents"], "cents; replayed:", again.replayed)
# ANCHOR_END: decorator
