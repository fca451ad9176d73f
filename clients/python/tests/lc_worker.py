"""The LangGraph process the kill test runs. ``start``: an agent with a
SQLite checkpointer charges, writes LC_MARKER, then hangs in the tool until
the test SIGKILLs it. ``resume``: the same thread resumed from the
checkpointer (``invoke(None, config)``), which runs the tools node again;
prints the tool message as one JSON line. LC_GUARDED=1 puts
IdemToolMiddleware in front of the tool."""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from langchain.agents import create_agent  # noqa: E402
from langchain_core.messages import HumanMessage, ToolMessage  # noqa: E402
from langgraph.checkpoint.sqlite import SqliteSaver  # noqa: E402

import idem_client  # noqa: E402
from idem_client.langchain import IdemToolMiddleware  # noqa: E402
from lc_support import GUARD, Psp, charge_call, model  # noqa: E402

mode = sys.argv[1]
url, token = os.environ["IDEM_URL"], os.environ["IDEM_TOKEN"]
marker = Path(os.environ["LC_MARKER"])


def hang() -> None:
    marker.write_text("charged")
    time.sleep(120)


psp = Psp(url, token, on_charged=hang if mode == "start" else None)
charge = psp.tool()
middleware = [IdemToolMiddleware(idem_client.Client(url, token), [GUARD], tools=[charge])] if os.environ.get("LC_GUARDED") else []
saver = SqliteSaver(sqlite3.connect(os.environ["LC_CHECKPOINTS"], check_same_thread=False))
# Resumed, the model has already asked for the charge: it only answers.
scripted = model(charge_call(os.environ["LC_REF"])) if mode == "start" else model()
agent = create_agent(scripted, tools=[charge], middleware=middleware, checkpointer=saver)
config = {"configurable": {"thread_id": "chat-killed"}}
if mode == "start":
    agent.invoke({"messages": [HumanMessage("pay my invoice", id="wamid.K")]}, config=config)
    sys.exit("the tool returned: the test should have killed this process")
out = agent.invoke(None, config=config)
[m] = [x for x in out["messages"] if isinstance(x, ToolMessage)]
print(json.dumps({"status": m.status, "tool_call_id": m.tool_call_id, "content": m.content, "idem": m.response_metadata.get("idem")}))
