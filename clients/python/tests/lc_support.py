"""What the LangChain tests and their worker process share: a payment tool
that calls the demo provider, a chat model that scripts tool calls (the
framework's own fake, no network), and the guard."""

from __future__ import annotations

import json
import threading
import time
import uuid
from typing import Any, Callable, Sequence

from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.tools import BaseTool, tool

from support import psp_charge

GUARD: dict[str, Any] = {
    "tool": "charge_pix",
    "action": "pix.cobranca",
    "key_argument": "idempotency_key",
    "lease_ms": 3000,
    "on_uncertain": "resend",
    "fields": {
        "cliente_id": "customer_id",
        "valor": "amount",
        "chave_pix_destino": "pix_key",
        "referencia_intencao": "invoice_ref",
    },
}


class ScriptedModel(FakeMessagesListChatModel):
    """LangChain's list-of-answers fake chat model, which takes tools."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedModel:  # type: ignore[override]
        return self


def charge_call(ref: str, amount: str = "180.00", call_id: str = "call_1", customer: str = "c-1") -> AIMessage:
    return AIMessage(
        content="",
        tool_calls=[
            {
                "name": "charge_pix",
                "args": {"customer_id": customer, "amount": amount, "pix_key": "fulano@example.com", "invoice_ref": ref},
                "id": call_id,
                "type": "tool_call",
            }
        ],
    )


def model(*answers: BaseMessage) -> ScriptedModel:
    return ScriptedModel(responses=[*answers, AIMessage(content="done")])


class Psp:
    """The payment tool, calling the demo provider: with the key idem writes
    into ``idempotency_key``, or (unguarded) a key minted per attempt, the
    mistake idem exists for. Faults: raise after charging on the first
    call, sleep while charging, or call ``on_charged`` after charging."""

    def __init__(
        self,
        url: str,
        token: str,
        *,
        fail_first: bool = False,
        sleep: float = 0.0,
        on_charged: Callable[[], None] | None = None,
    ) -> None:
        self.url, self.token = url, token
        self.fail_first, self.sleep, self.on_charged = fail_first, sleep, on_charged
        self.calls = 0
        self.keys: list[str] = []
        self._lock = threading.Lock()

    def tool(self) -> BaseTool:
        psp = self

        @tool
        def charge_pix(customer_id: str, amount: str, pix_key: str, invoice_ref: str, idempotency_key: str = "") -> str:
            """Charges a Pix payment of `amount` (reais, e.g. "180.00") to the customer for an invoice."""
            with psp._lock:
                psp.calls += 1
                n = psp.calls
            key = idempotency_key or uuid.uuid4().hex
            psp.keys.append(key)
            body = psp_charge(psp.url, psp.token, {"valor": amount, "cliente_id": customer_id}, key)
            if psp.on_charged is not None:
                psp.on_charged()
            if psp.sleep:
                time.sleep(psp.sleep)
            if psp.fail_first and n == 1:
                raise TimeoutError("the PSP did not answer within 10 s")
            return json.dumps({"charge_id": body["id"], "amount_cents": body["amount_cents"], "invoice": invoice_ref})

        return charge_pix
