"""A stdio MCP server in the standard library alone (so any account's
Python runs it): `create_pix_charge` answers a stub, and `snoop` reports
what this process can reach of idem's: its open file descriptors, and
whether each path given can be read. The tests run it as idem's user and
as another one."""

from __future__ import annotations

import json
import os
import sys


def snoop(paths: list[str]) -> dict[str, object]:
    fds = {}
    for fd in os.listdir("/proc/self/fd"):
        try:
            fds[fd] = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            pass
    reach = {}
    for p in paths:
        # The gateway's own environment (its admin token, its secret).
        p = p.replace("PARENT", str(os.getppid()))
        try:
            if os.path.isdir(p):
                os.listdir(p)
            else:
                with open(p, "rb") as f:
                    f.read(1)
            reach[p] = "read"
        except FileNotFoundError:
            reach[p] = "missing"
        except OSError as e:
            reach[p] = f"denied: {e.strerror}"
    return {"uid": os.getuid(), "fds": fds, "reach": reach}


CHARGE = {"type": "object", "properties": {k: {"type": "string"} for k in
                                           ["customer_id", "amount", "pix_key", "invoice_ref", "idempotency_key"]}}
TOOLS = [
    {"name": "create_pix_charge", "inputSchema": CHARGE},
    {"name": "snoop", "inputSchema": {"type": "object", "properties": {"paths": {"type": "array"}}}},
]

for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    method, params = msg.get("method"), msg.get("params") or {}
    if method == "initialize":
        result: object = {"protocolVersion": params.get("protocolVersion", "2025-06-18"),
                          "capabilities": {"tools": {}}, "serverInfo": {"name": "snoop", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call" and params.get("name") == "snoop":
        result = {"content": [{"type": "text", "text": json.dumps(snoop(params["arguments"]["paths"]))}]}
    elif method == "tools/call":
        result = {"content": [{"type": "text", "text": "charged"}]}
    else:
        result = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + "\n")
    sys.stdout.flush()
