#!/usr/bin/env python3
"""ACP's complete_checkout_session through `idem mcp gateway`, guarded as
examples/mcp/acp/guard.toml ships it, against the same call made directly
to the example merchant, in one run, interleaved; and the cost of settling
a lost answer by lookup. The official Python MCP SDK is the agent; stdio
both ways; SQLite.

Each iteration opens a fresh checkout session (untimed), then times:
- direct: complete, straight to the merchant;
- gateway: complete through the gateway (record, claim, forward, complete);
- gateway replay: the same complete again (answered from the store);
- lookup reconciliation: a call on an action whose answer was lost. A
  second gateway (same store, same merchant state, on_uncertain = "refuse",
  a merchant that answers after the 50 ms lease) leaves the action
  uncertain; the timed call, on the first gateway, asks
  get_checkout_session, finds it completed and reconciles it.

    IDEM_BIN=target/release/idem target/mcp-venv/bin/python bench/mcp-acp.py [--n 200]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

ROOT = Path(__file__).resolve().parent.parent
ACP = ROOT / "examples" / "mcp" / "acp"
IDEM = os.environ.get("IDEM_BIN", str(ROOT / "target" / "release" / "idem"))


def guard_text(state: Path, *, on_uncertain: str, lease_ms: int, delay_ms: int) -> str:
    out = []
    for line in (ACP / "guard.toml").read_text().splitlines():
        if line.startswith("command = "):
            line = f"command = [{json.dumps(sys.executable)}, {json.dumps(str(ACP / 'merchant.py'))}]"
        elif line.startswith("env = "):
            line = f'env = {{ ACP_STATE = {json.dumps(str(state))}, ACP_DELAY_MS = "{delay_ms}" }}'
        elif line.startswith("lease_ms = "):
            line = f"lease_ms = {lease_ms}"
        elif line.startswith("on_uncertain = "):
            line = f'on_uncertain = "{on_uncertain}"'
        elif on_uncertain != "lookup" and line.startswith("[guard.lookup]"):
            break
        out.append(line)
    return "\n".join(out) + "\n"


def complete(session: str, key: str) -> dict[str, Any]:
    return {"meta": {"idempotency_key": key},
            "payload": {"checkout_session_id": session, "currency": "brl", "buyer": {"email": "ana@example.com"},
                        "items": [{"id": "coffee-1kg", "quantity": 1}],
                        "totals": [{"type": "total", "display_text": "Total", "amount": 9000}],
                        "payment_data": {"token": "spt_bench", "provider": "stripe"}}}


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200)
    n = ap.parse_args().n
    with tempfile.TemporaryDirectory() as tmp:
        # The merchant's file (the stand-in's database, rewritten whole on
        # every call) lives in memory where there is one, so its fsync and
        # growth do not drown what is measured: idem's own writes, on disk.
        shm = Path("/dev/shm")
        state = (Path(tempfile.mkdtemp(dir=shm)) if shm.is_dir() else Path(tmp)) / "acp.json"
        data = Path(tmp) / "data"
        env = {"PATH": os.environ.get("PATH", ""), "ACP_STATE": str(state)}
        subprocess.run([IDEM, "tenant", "create", "bench", "--data-dir", str(data)], check=True,
                       capture_output=True, env={**os.environ, **env})

        def gateway(name: str, **kw: Any) -> StdioServerParameters:
            path = Path(tmp) / f"{name}.toml"
            path.write_text(guard_text(state, **kw))
            return StdioServerParameters(command=IDEM, args=[
                "mcp", "gateway", "--guard", str(path), "--catalog", str(ACP / "catalog.toml"),
                "--tenant", "bench", "--data-dir", str(data)], env={**env, "IDEM_LOG": "warn",
                # As root idem runs a command upstream as `nobody` unless
                # named: the stand-in lives in this checkout, so root, named.
                **({"IDEM_UPSTREAM_USER": "root"} if os.geteuid() == 0 else {})})

        direct = StdioServerParameters(command=sys.executable, args=[str(ACP / "merchant.py")], env=env)
        guarded = gateway("guarded", on_uncertain="lookup", lease_ms=15000, delay_ms=0)
        lossy = gateway("lossy", on_uncertain="refuse", lease_ms=50, delay_ms=120)
        times: dict[str, list[float]] = {"direct": [], "gateway": [], "gateway replay": [],
                                         "lookup reconciliation": []}
        with open(Path(tmp) / "stderr.log", "w") as log:
            async with stdio_client(direct, errlog=log) as (r1, w1), stdio_client(guarded, errlog=log) as (r2, w2), \
                    stdio_client(lossy, errlog=log) as (r3, w3):
                async with ClientSession(r1, w1) as up, ClientSession(r2, w2) as gw, ClientSession(r3, w3) as lost:
                    for s in (up, gw, lost):
                        await s.initialize()

                    async def session() -> str:
                        made = await up.call_tool("create_checkout_session", {
                            "meta": {}, "payload": {"items": [{"id": "coffee-1kg", "quantity": 1}]}})
                        assert made.structured_content is not None
                        return str(made.structured_content["id"])

                    async def timed(name: str, s: ClientSession, args: dict[str, Any], i: int) -> Any:
                        t = time.perf_counter()
                        res = await s.call_tool("complete_checkout_session", args)
                        if i >= 20:
                            times[name].append((time.perf_counter() - t) * 1000)
                        assert not res.is_error, res
                        return res

                    for i in range(n + 20):
                        # Each iteration's sessions are new: the stand-in's
                        # file starts empty, so its cost stays flat.
                        state.write_text("")
                        await timed("direct", up, complete(await session(), f"d-{i}"), i)
                        cs = await session()
                        await timed("gateway", gw, complete(cs, "model"), i)
                        await timed("gateway replay", gw, complete(cs, "model-again"), i)
                        cs = await session()
                        refused = await lost.call_tool("complete_checkout_session", complete(cs, "model"))
                        assert refused.is_error, refused  # unknown: left uncertain
                        res = await timed("lookup reconciliation", gw, complete(cs, "model-retry"), i)
                        assert res.meta["idem"]["lookup"] == "executed", res.meta
    if state.parent != Path(tmp):
        state.unlink(missing_ok=True)
        state.parent.rmdir()
    print(f"SQLite, {n} calls each, interleaved (stdio; ACP complete_checkout_session, examples/mcp/acp)")
    print(f"{'way':<22} {'p50 ms':>8} {'p99 ms':>8} {'p50 / direct':>13}")
    base = statistics.median(times["direct"])
    for name, xs in times.items():
        xs.sort()
        p50, p99 = statistics.median(xs), xs[min(len(xs) - 1, int(len(xs) * 0.99))]
        print(f"{name:<22} {p50:>8.2f} {p99:>8.2f} {p50 / base:>13.2f}")


if __name__ == "__main__":
    asyncio.run(main())
