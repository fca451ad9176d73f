#!/usr/bin/env python3
"""A guarded MCP tool call through `idem mcp gateway` against the same call
made directly to the upstream, in one run, interleaved, with the official
Python MCP SDK as the agent and the tests' payment server as the upstream
(stdio both ways; a new intent per call, so every guarded call records,
claims, calls the upstream and completes).

    IDEM_BIN=target/release/idem target/mcp-venv/bin/python bench/mcp-gateway.py [--n 300]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

HERE = Path(__file__).resolve().parent
PAY = HERE.parent / "mcp" / "tests" / "python" / "pay_server.py"
IDEM = os.environ.get("IDEM_BIN", str(HERE.parent / "target" / "release" / "idem"))


def args_for(ref: str) -> dict[str, str]:
    return {"customer_id": "c-1", "amount": "180.00", "pix_key": "fulano@example.com", "invoice_ref": ref}


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=300)
    n = ap.parse_args().n
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        env = {"PAY_LEDGER": str(Path(tmp) / "ledger.json"), "PATH": os.environ.get("PATH", "")}
        subprocess.run([IDEM, "tenant", "create", "bench", "--data-dir", str(data)], check=True,
                       capture_output=True, env={**os.environ, **env})
        guard = Path(tmp) / "guard.toml"
        guard.write_text(f"""
[upstream]
command = ["{sys.executable}", "{PAY}"]
env = {{ PAY_LEDGER = "{Path(tmp) / 'ledger.json'}" }}
[[guard]]
tool = "create_pix_charge"
action = "pix.cobranca"
key_argument = "idempotency_key"
[guard.fields]
cliente_id = "customer_id"
valor = "amount"
chave_pix_destino = "pix_key"
referencia_intencao = "invoice_ref"
""")
        direct = StdioServerParameters(command=sys.executable, args=[str(PAY)], env=env)
        gateway = StdioServerParameters(command=IDEM, args=["mcp", "gateway", "--guard", str(guard), "--tenant", "bench",
                                                            "--data-dir", str(data)], env={**env, "IDEM_LOG": "warn",
                # As root idem runs a command upstream as `nobody` unless
                # named: the stand-in lives in this checkout, so root, named.
                **({"IDEM_UPSTREAM_USER": "root"} if os.geteuid() == 0 else {})})
        with open(Path(tmp) / "stderr.log", "w") as log:
            async with stdio_client(direct, errlog=log) as (r1, w1), stdio_client(gateway, errlog=log) as (r2, w2):
                async with ClientSession(r1, w1) as up, ClientSession(r2, w2) as gw:
                    await up.initialize()
                    await gw.initialize()
                    times: dict[str, list[float]] = {"direct": [], "gateway": [], "gateway replay": []}
                    for i in range(n + 20):
                        ref = f"B-{i}-{uuid.uuid4().hex[:6]}"
                        for name, session in (("direct", up), ("gateway", gw), ("gateway replay", gw)):
                            t = time.perf_counter()
                            res = await session.call_tool("create_pix_charge", args_for(ref if name != "direct" else ref + "-d"))
                            dt = (time.perf_counter() - t) * 1000
                            assert not res.is_error, res
                            if i >= 20:
                                times[name].append(dt)
    print(f"SQLite, {n} calls each, interleaved (stdio; a new intent per guarded call, then its replay)")
    print(f"{'way':<16} {'p50 ms':>8} {'p99 ms':>8} {'p50 / direct':>13}")
    base = statistics.median(times["direct"])
    for name, xs in times.items():
        xs.sort()
        p50, p99 = statistics.median(xs), xs[min(len(xs) - 1, int(len(xs) * 0.99))]
        print(f"{name:<16} {p50:>8.2f} {p99:>8.2f} {p50 / base:>13.2f}")
    d = sorted(times["direct"])
    g = sorted(times["gateway"])
    print(f"the gateway adds {statistics.median(g) - statistics.median(d):.2f} ms at p50, "
          f"{g[int(len(g) * 0.99)] - d[int(len(d) * 0.99)]:.2f} ms at p99")


if __name__ == "__main__":
    asyncio.run(main())
