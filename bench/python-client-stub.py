#!/usr/bin/env python3
"""The Python client's own time per guarded effect with the transport
stubbed (``httpx.MockTransport``: canned answers, no server, no socket),
against the same two calls by hand through the same stub, interleaved: what
the client itself costs, without the network's or the server's noise.

    python3 bench/python-client-stub.py [N, 5000]
"""

from __future__ import annotations

import json
import statistics
import sys
import time

import httpx

import idem_client

KEY = "a" * 64


def candidate(ref: str) -> dict[str, str]:
    return {"cliente_id": "c-1", "valor": "180.00", "chave_pix_destino": "fulano@example.com", "referencia_intencao": ref}


def answer(req: httpx.Request) -> httpx.Response:
    if req.url.path.endswith("/complete"):
        body = {"key": KEY, "status": "completed", "attempt": 1, "token": 7, "response": {"ok": True}, "reconciled": False}
    else:
        p = json.loads(req.content)["payload"]
        body = {
            "key": KEY, "action": "pix.cobranca", "reference": p["referencia_intencao"], "payload": p, "frozen": p,
            "normalized": p, "rules_version": 1, "created_ms": 1, "diverged": False, "status": "recorded",
            "claim": {"status": "claimed", "token": 7, "attempt": 1, "lease_until_ms": int(time.time() * 1000) + 30000},
        }
    return httpx.Response(200, json=body)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    http = httpx.Client(base_url="http://idem.invalid", headers={"authorization": "Bearer t"}, transport=httpx.MockTransport(answer))
    client = idem_client.Client("http://idem.invalid", "t", http_client=http)

    def by_client(ref: str) -> None:
        client.run("pix.cobranca", lambda intent: {"ok": True}, candidate(ref))

    def by_hand(ref: str) -> None:
        doc = http.post("/v1/intents", json={"action": "pix.cobranca", "payload": candidate(ref), "claim": {"lease_ms": 30000}}).json()
        assert doc["claim"]["status"] == "claimed"
        http.post(f"/v1/actions/{doc['key']}/complete", json={"token": doc["claim"]["token"], "response": {"ok": True}}).raise_for_status()

    ways = {"client": by_client, "hand": by_hand}
    times: dict[str, list[float]] = {k: [] for k in ways}
    for i in range(300):
        for way in ways.values():
            way(f"warm-{i}")
    for i in range(n):
        for name in ("client", "hand") if i % 2 else ("hand", "client"):
            t = time.perf_counter()
            ways[name](f"b-{i}")
            times[name].append(time.perf_counter() - t)
    for name, xs in times.items():
        print(f"{name:<6} p50 {statistics.median(xs) * 1e6:.1f} µs")
    own = statistics.median(times["client"]) - statistics.median(times["hand"])
    print(f"client's own time per effect (p50 over by hand): {own * 1e6:.1f} µs")


if __name__ == "__main__":
    main()
