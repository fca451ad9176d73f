#!/usr/bin/env python3
"""A guarded effect through idem_client against the same protocol by hand.

Per guarded effect (an effect that does nothing, so only idem's part is
timed), in one run, interleaved so the machine's drift hits each alike:

  client    idem_client.Client.run: record and claim in one call, complete
  combined  the same two calls by hand with httpx (POST /v1/intents with
            "claim", then complete)
  separate  the three calls a worker wrote before the combined call
            (POST /v1/intents, begin, complete)

Prints round trips, p50 and p99 per effect, and the ratios to `separate`.

    IDEM_BIN=target/release/idem target/python-client/venv/bin/python \\
        bench/python-client.py [--n 500] [--database-url postgres://...]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import time
import uuid
from typing import Callable

import httpx

import idem_client
from idem_client.testing import serve


def candidate(reference: str) -> dict[str, str]:
    return {
        "cliente_id": "c-1",
        "valor": "180.00",
        "chave_pix_destino": "fulano@example.com",
        "referencia_intencao": reference,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--database-url")
    args = ap.parse_args()
    schema = None
    url = args.database_url
    if url and url.startswith("postgres"):
        schema = "bench_" + uuid.uuid4().hex[:10]
        subprocess.run(["psql", url, "-qc", f"create schema {schema}"], check=True)
        url = f"{url}{'&' if '?' in url else '?'}options=-c%20search_path%3D{schema}"
    try:
        with serve(database_url=url) as srv:
            run(srv.url, srv.token, args.n, "PostgreSQL" if schema else "SQLite")
    finally:
        if schema:
            subprocess.run(["psql", args.database_url, "-qc", f"drop schema {schema} cascade"], check=True,
                           env={**os.environ, "PGOPTIONS": "-c client_min_messages=warning"})


def run(base: str, token: str, n: int, backend: str) -> None:
    trips = {"n": 0}

    def count(_: httpx.Request) -> None:
        trips["n"] += 1

    http = httpx.Client(base_url=base, headers={"authorization": f"Bearer {token}"}, event_hooks={"request": [count]})
    client = idem_client.Client(base, token, http_client=http)
    effect = lambda intent: {"ok": True}  # noqa: E731

    def by_client(ref: str) -> None:
        client.run("pix.cobranca", effect, candidate(ref))

    def combined(ref: str) -> None:
        doc = http.post("/v1/intents", json={"action": "pix.cobranca", "payload": candidate(ref), "claim": {"lease_ms": 30000}}).json()
        assert doc["claim"]["status"] == "claimed"
        http.post(f"/v1/actions/{doc['key']}/complete", json={"token": doc["claim"]["token"], "response": {"ok": True}}).raise_for_status()

    def separate(ref: str) -> None:
        doc = http.post("/v1/intents", json={"action": "pix.cobranca", "payload": candidate(ref)}).json()
        claim = http.post(f"/v1/actions/{doc['key']}/begin", json={"action": "pix.cobranca", "lease_ms": 30000}).json()
        assert claim["status"] == "claimed"
        http.post(f"/v1/actions/{doc['key']}/complete", json={"token": claim["token"], "response": {"ok": True}}).raise_for_status()

    ways: dict[str, Callable[[str], None]] = {"client": by_client, "combined": combined, "separate": separate}
    times: dict[str, list[float]] = {k: [] for k in ways}
    rts: dict[str, list[int]] = {k: [] for k in ways}
    for i in range(n + 20):
        for name, way in ways.items():
            ref = f"{name}-{i}-{uuid.uuid4().hex[:8]}"
            before = trips["n"]
            t = time.perf_counter()
            way(ref)
            dt = time.perf_counter() - t
            if i >= 20:  # warm-up
                times[name].append(dt * 1000)
                rts[name].append(trips["n"] - before)
    print(f"{backend}, {n} guarded effects each, interleaved")
    print(f"{'way':<10} {'round trips':>11} {'p50 ms':>8} {'p99 ms':>8} {'p50 / separate':>15}")
    base_p50 = statistics.median(times["separate"])
    for name in ways:
        xs = sorted(times[name])
        p50 = statistics.median(xs)
        p99 = xs[min(len(xs) - 1, int(len(xs) * 0.99))]
        print(f"{name:<10} {statistics.mean(rts[name]):>11.2f} {p50:>8.2f} {p99:>8.2f} {p50 / base_p50:>15.2f}")
    client.close()
    http.close()


if __name__ == "__main__":
    main()
