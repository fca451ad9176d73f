"""What the tests and the worker processes share: the PSP call and a
candidate."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import httpx


def psp_charge(url: str, token: str, payload: Any, key: str) -> dict[str, Any]:
    cents = int(Decimal(str(payload["valor"])) * 100)
    r = httpx.post(
        url + "/v1/demo/charges",
        headers={"authorization": f"Bearer {token}", "idempotency-key": key},
        json={"amount_cents": cents, "currency": "BRL", "customer": payload["cliente_id"]},
        timeout=30,
    )
    r.raise_for_status()
    body: dict[str, Any] = r.json()
    return body



def pix(reference: str, valor: str = "180.00", cliente: str = "c-1") -> dict[str, str]:
    return {
        "cliente_id": cliente,
        "valor": valor,
        "chave_pix_destino": "fulano@example.com",
        "referencia_intencao": reference,
    }
