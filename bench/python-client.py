#!/usr/bin/env python3
"""A guarded effect through idem_client against the same protocol by hand.

Per guarded effect (an effect that does nothing, so only idem's part is
timed), in one run, interleaved so the machine's drift hits each alike:

  client    idem_client.Client.run: record and claim in one call, complete
  combined  the same two calls by hand with httpx (POST /v1/intents with
            "claim", then complete)
  separate  the three calls a worker wrote before the combined call
            (POST /v1/intents, begin, complete)

  before    with --before DIR: Client.run of another build of the client
            (DIR is its idem_client package directory, say a copy of
            clients/python/src/idem_client at the commit before), so two
            builds are compared in one run

Prints round trips, p50 and p99 per effect, the ratios to `separate`, and
each client's share: its p50 minus `combined`'s, and the median over the
rounds of its time minus `combined`'s in the same round.

    IDEM_BIN=target/release/idem target/python-client/venv/bin/python \\
        bench/python-client.py [--n 500] [--database-url postgres://...] [--before DIR]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import statistics
import subprocess
import time
import uuid
from types import ModuleType
from typing import Any, Callable

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
    ap.add_argument("--before", help="another build's idem_client package directory")
    args = ap.parse_args()
    before = load_before(args.before) if args.before else None
    schema = None
    url = args.database_url
    if url and url.startswith("postgres"):
        schema = "bench_" + uuid.uuid4().hex[:10]
        subprocess.run(["psql", url, "-qc", f"create schema {schema}"], check=True)
        url = f"{url}{'&' if '?' in url else '?'}options=-c%20search_path%3D{schema}"
    try:
        with serve(database_url=url) as srv:
            run(srv.url, srv.token, args.n, "PostgreSQL" if schema else "SQLite", before)
    finally:
        if schema:
            subprocess.run(["psql", args.database_url, "-qc", f"drop schema {schema} cascade"], check=True,
                           env={**os.environ, "PGOPTIONS": "-c client_min_messages=warning"})


def load_before(directory: str) -> ModuleType:
    """The package in ``directory`` under a name of its own, beside this
    build's ``idem_client`` (the package imports itself relatively)."""
    spec = importlib.util.spec_from_file_location(
        "idem_client_before", os.path.join(directory, "__init__.py"), submodule_search_locations=[directory]
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["idem_client_before"] = module
    spec.loader.exec_module(module)
    return module


def run(base: str, token: str, n: int, backend: str, before_pkg: ModuleType | None = None) -> None:
    trips = {"n": 0}

    def count(_: httpx.Request) -> None:
        trips["n"] += 1

    http = httpx.Client(base_url=base, headers={"authorization": f"Bearer {token}"}, event_hooks={"request": [count]})
    client = idem_client.Client(base, token, http_client=http)
    effect = lambda intent: {"ok": True}  # noqa: E731

    def by_client(ref: str) -> None:
        client.run("pix.cobranca", effect, candidate(ref))

    before_client: Any = before_pkg.Client(base, token, http_client=http) if before_pkg else None

    def by_before(ref: str) -> None:
        before_client.run("pix.cobranca", effect, candidate(ref))

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
    if before_client is not None:
        ways["before"] = by_before
    names = list(ways)
    times: dict[str, list[float]] = {k: [] for k in ways}
    rts: dict[str, list[int]] = {k: [] for k in ways}
    # The calling thread's CPU time per effect: the client's own work,
    # without the server's or the machine's noise.
    cpu: dict[str, list[float]] = {k: [] for k in ways}
    # Per round, a client's time minus `combined`'s in the same round: its
    # share with the machine's drift between rounds taken out.
    paired: dict[str, list[float]] = {k: [] for k in ("client", "before") if k in ways}
    for i in range(n + 20):
        # Each round in another order, so no way always follows the same one.
        order = names[i % len(names):] + names[: i % len(names)]
        took: dict[str, float] = {}
        for name in order if i % 2 else reversed(order):
            ref = f"{name}-{i}-{uuid.uuid4().hex[:8]}"
            trips_before = trips["n"]
            c = time.thread_time()
            t = time.perf_counter()
            ways[name](ref)
            dt = time.perf_counter() - t
            took[name] = dt * 1000
            cpu[name].append((time.thread_time() - c) * 1000)
            if i >= 20:  # warm-up
                times[name].append(dt * 1000)
                rts[name].append(trips["n"] - trips_before)
        if i >= 20:
            for name in paired:
                paired[name].append(took[name] - took["combined"])
    print(f"{backend}, {n} guarded effects each, interleaved")
    print(f"{'way':<10} {'round trips':>11} {'p50 ms':>8} {'p99 ms':>8} {'p50 / separate':>15}")
    base_p50 = statistics.median(times["separate"])
    for name in ways:
        xs = sorted(times[name])
        p50 = statistics.median(xs)
        p99 = xs[min(len(xs) - 1, int(len(xs) * 0.99))]
        print(f"{name:<10} {statistics.mean(rts[name]):>11.2f} {p50:>8.2f} {p99:>8.2f} {p50 / base_p50:>15.2f}")
    for name, diffs in paired.items():
        share = statistics.median(times[name]) - statistics.median(times["combined"])
        print(f"{name} share: p50 minus combined p50 {share:.3f} ms, median of the rounds' differences {statistics.median(diffs):.3f} ms")
        own = statistics.median(cpu[name]) - statistics.median(cpu["combined"])
        print(f"{name} CPU per effect: median {statistics.median(cpu[name]):.3f} ms, {own:.3f} ms over combined")
    client.close()
    http.close()


if __name__ == "__main__":
    main()
