"""The agent-framework integrations' own time per tool call, against the
same agent with the undecorated tool, in one interleaved run.

Each round runs one agent turn in which the framework's fake model asks
for one tool call (a fresh reference each round), once without idem and
once through the integration, in alternating order; the tool does nothing,
so the difference is the integration's own work (its calls to idem
included). Prints p50/p99 of each and the difference of the p50s.

    python3 -m venv /tmp/fw && /tmp/fw/bin/pip install "./clients/python[langchain,pydantic-ai,openai-agents]"
    /tmp/fw/bin/python bench/frameworks.py [--rounds 300] [--bin target/release/idem] [--database-url URL]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from typing import Any, Callable

import idem_client
from idem_client.testing import serve

GUARD = {
    "tool": "charge_pix",
    "action": "pix.cobranca",
    "key_argument": "idempotency_key",
    "fields": {"cliente_id": "customer_id", "valor": "amount", "chave_pix_destino": "pix_key", "referencia_intencao": "invoice_ref"},
}


def args_for(ref: str) -> dict[str, str]:
    return {"customer_id": "c-1", "amount": "180.00", "pix_key": "fulano@example.com", "invoice_ref": ref}


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p * (len(xs) - 1))))]


def langchain_case(client: idem_client.Client) -> tuple[Callable[[str], None], Callable[[str], None]]:
    from langchain.agents import create_agent
    from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_core.tools import tool

    from idem_client.langchain import IdemToolMiddleware

    @tool
    def charge_pix(customer_id: str, amount: str, pix_key: str, invoice_ref: str, idempotency_key: str = "") -> str:
        """Charges."""
        return "ok"

    class M(FakeMessagesListChatModel):
        def bind_tools(self, tools: Any, **kw: Any) -> M:  # type: ignore[override]
            return self

    middleware = IdemToolMiddleware(client, [GUARD], tools=[charge_pix])

    def run(guarded: bool) -> Callable[[str], None]:
        def one(ref: str) -> None:
            call = AIMessage(content="", tool_calls=[{"name": "charge_pix", "args": args_for(ref), "id": "c1", "type": "tool_call"}])
            agent = create_agent(M(responses=[call, AIMessage(content="done")]), tools=[charge_pix], middleware=[middleware] if guarded else [])
            agent.invoke({"messages": [HumanMessage("pay")]})

        return one

    return run(False), run(True)


def pydantic_ai_case(aclient: idem_client.AsyncClient, loop: asyncio.AbstractEventLoop) -> tuple[Callable[[str], None], Callable[[str], None]]:
    from pydantic_ai import Agent, FunctionToolset
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel

    from idem_client.pydantic_ai import IdemToolset

    async def charge_pix(customer_id: str, amount: str, pix_key: str, invoice_ref: str, idempotency_key: str = "") -> str:
        """Charges."""
        return "ok"

    tools = FunctionToolset([charge_pix])
    guarded_tools = IdemToolset(tools, aclient, [GUARD])

    def run(guarded: bool) -> Callable[[str], None]:
        def one(ref: str) -> None:
            said = [False]

            def fn(messages: Any, info: Any) -> ModelResponse:
                if not said[0]:
                    said[0] = True
                    return ModelResponse(parts=[ToolCallPart("charge_pix", args_for(ref), tool_call_id="c1")])
                return ModelResponse(parts=[TextPart("done")])

            agent = Agent(FunctionModel(fn), toolsets=[guarded_tools if guarded else tools])
            loop.run_until_complete(agent.run("pay"))

        return one

    return run(False), run(True)


def openai_agents_case(aclient: idem_client.AsyncClient, loop: asyncio.AbstractEventLoop) -> tuple[Callable[[str], None], Callable[[str], None]]:
    from agents import Agent, Runner, function_tool, set_tracing_disabled
    from agents.items import ModelResponse
    from agents.models.interface import Model
    from agents.usage import Usage
    from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

    from idem_client.openai_agents import IdemGuard

    set_tracing_disabled(True)

    def charge_pix(customer_id: str, amount: str, pix_key: str, invoice_ref: str, idempotency_key: str = "") -> str:
        """Charges."""
        return "ok"

    bare, guarded_tool = function_tool(charge_pix), IdemGuard(aclient, [GUARD]).function_tool(charge_pix)

    class Scripted(Model):
        def __init__(self, ref: str) -> None:
            self.ref, self.said = ref, False

        async def get_response(self, *a: Any, **k: Any) -> ModelResponse:
            if not self.said:
                self.said = True
                out: Any = ResponseFunctionToolCall(type="function_call", call_id="c1", name="charge_pix", arguments=json.dumps({**args_for(self.ref), "idempotency_key": ""}))
            else:
                out = ResponseOutputMessage(id="m", type="message", role="assistant", status="completed", content=[ResponseOutputText(type="output_text", text="done", annotations=[])])
            return ModelResponse(output=[out], usage=Usage(), response_id=None)

        def stream_response(self, *a: Any, **k: Any) -> Any:
            raise NotImplementedError

    def run(guarded: bool) -> Callable[[str], None]:
        def one(ref: str) -> None:
            agent = Agent(name="b", model=Scripted(ref), tools=[guarded_tool if guarded else bare])
            loop.run_until_complete(Runner.run(agent, "pay"))

        return one

    return run(False), run(True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=300)
    ap.add_argument("--bin", default="target/release/idem")
    ap.add_argument("--database-url", default=None)
    a = ap.parse_args()
    loop = asyncio.new_event_loop()
    with serve(binary=a.bin, database_url=a.database_url) as srv:
        client = idem_client.Client(srv.url, srv.token)
        aclient = idem_client.AsyncClient(srv.url, srv.token)
        cases = {
            "langchain": langchain_case(client),
            "pydantic-ai": pydantic_ai_case(aclient, loop),
            "openai-agents": openai_agents_case(aclient, loop),
        }
        print(f"{'framework':<14} {'bare p50':>9} {'bare p99':>9} {'idem p50':>9} {'idem p99':>9} {'own p50':>8}   (ms per agent turn with one tool call, {a.rounds} rounds)")
        for name, (bare, guarded) in cases.items():
            times: dict[bool, list[float]] = {False: [], True: []}
            for i in range(20):  # warm-up: imports, pools, prepared statements
                bare(f"w-{name}-{i}-{time.monotonic_ns()}")
                guarded(f"w-{name}-{i}-{time.monotonic_ns()}")
            for i in range(a.rounds):
                order = (False, True) if i % 2 == 0 else (True, False)
                for g in order:
                    ref = f"b-{name}-{i}-{g}-{time.monotonic_ns()}"
                    t0 = time.perf_counter()
                    (guarded if g else bare)(ref)
                    times[g].append((time.perf_counter() - t0) * 1000)
            b50, b99 = statistics.median(times[False]), pct(times[False], 0.99)
            g50, g99 = statistics.median(times[True]), pct(times[True], 0.99)
            print(f"{name:<14} {b50:9.2f} {b99:9.2f} {g50:9.2f} {g99:9.2f} {g50 - b50:8.2f}")
        loop.run_until_complete(aclient.aclose())
        client.close()


if __name__ == "__main__":
    main()
