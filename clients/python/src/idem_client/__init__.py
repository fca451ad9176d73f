"""idem_client: run a side effect once per intent.

    import idem_client
    client = idem_client.Client(base_url="http://127.0.0.1:3000", token=TOKEN)

    @client.once("pix.cobranca")
    def charge(intent):
        return psp.charge(intent.payload["valor"], idempotency_key=intent.key)

    out = charge({"cliente_id": "c-1", "valor": "180.00", "chave_pix_destino": "…",
                  "referencia_intencao": "FAT-1"})

The first delivery freezes the candidate as sent; every later call acts on
that frozen payload under the key derived from it, and the effect runs only
in the call that holds the claim. See the book's "The Python client".
"""

from ._async import AsyncClient, AsyncEvents
from ._errors import (
    Failed,
    FailedForGood,
    IdemError,
    InFlight,
    OutcomeTooLarge,
    ProblemError,
    ReferenceMismatch,
    StaleToken,
    TenantDisabled,
    Unauthorized,
    Unavailable,
    Uncertain,
    Unprocessable,
)
from ._models import EventClaim, Intent, Outcome
from ._sync import Client, Events
from .wire import ActionResponse, IntentResponse, IntentView

__version__ = "0.1.0"

__all__ = [
    "ActionResponse",
    "AsyncClient",
    "AsyncEvents",
    "Client",
    "EventClaim",
    "Events",
    "Failed",
    "FailedForGood",
    "IdemError",
    "InFlight",
    "Intent",
    "IntentResponse",
    "IntentView",
    "Outcome",
    "OutcomeTooLarge",
    "ProblemError",
    "ReferenceMismatch",
    "StaleToken",
    "TenantDisabled",
    "Unauthorized",
    "Unavailable",
    "Uncertain",
    "Unprocessable",
]
