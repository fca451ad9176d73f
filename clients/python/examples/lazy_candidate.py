"""The lazy candidate: the model runs only while nothing is frozen."""

# ANCHOR: lazy
import os

import idem_client

client = idem_client.Client(base_url=os.environ["IDEM_URL"], token=os.environ["IDEM_TOKEN"])
calls = []


def extract(message: str) -> dict:
    """Stands in for the model call that reads the amount from a chat."""
    calls.append(message)
    return {"cliente_id": "c-7", "valor": "42.50",
            "chave_pix_destino": "+55 11 98888-7777", "referencia_intencao": "FAT-7"}


@client.once("pix.cobranca")
def charge(intent: idem_client.Intent) -> dict:
    return {"charged": intent.payload["valor"], "key": intent.key}


msg = "pode cobrar os 42,50 da fatura FAT-7"
out = charge(lambda: extract(msg), reference="FAT-7")   # first delivery: the model runs
out = charge(lambda: extract(msg), reference="FAT-7")   # redelivery: it does not
assert len(calls) == 1 and out.replayed
print("model calls:", len(calls))
# ANCHOR_END: lazy
