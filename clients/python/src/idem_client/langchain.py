"""LangChain v1 / LangGraph: ``IdemToolMiddleware`` runs each guarded tool
once per intent, whatever retries it.

    from langchain.agents import create_agent
    from langchain.agents.middleware import ToolRetryMiddleware
    from idem_client.langchain import IdemToolMiddleware

    idem = IdemToolMiddleware(client, "pay-guard.toml", tools=[charge_pix])
    agent = create_agent(model, tools=[charge_pix],
                         middleware=[ToolRetryMiddleware(max_retries=2), idem])

Put it **after** ``ToolRetryMiddleware`` (the first middleware listed is the
outermost): every retry then passes through the guard. A node's
``RetryPolicy`` and a resumed thread run the tools node again; each of its
calls passes through the guard too.

``client`` is an ``idem_client.Client`` (``agent.invoke``), an
``AsyncClient`` (``agent.ainvoke``), or both as ``(client, async_client)``.
Requires ``idem-client[langchain]``. See the book's "Agent frameworks".
"""

from __future__ import annotations

import copy
import json
import logging
import re
from typing import Any, Awaitable, Callable, Mapping, Sequence, cast

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool
from langgraph.errors import GraphBubbleUp
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from . import _tool_guard as tg
from ._async import AsyncClient
from ._sync import Client
from .guards import TURN, Guard, Guards, Source, load

__all__ = ["IdemToolMiddleware", "OutcomeUnknown"]

OutcomeUnknown = tg.OutcomeUnknown

_log = logging.getLogger("idem_client")
_UUID4 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


def tool_schemas(tools: Sequence[BaseTool]) -> dict[str, dict[str, Any] | None]:
    """Each tool's argument schema as the model sees it (injected arguments
    left out), for the guards' start-up checks."""
    out: dict[str, dict[str, Any] | None] = {}
    for t in tools:
        schema: Any = t.tool_call_schema
        try:
            if isinstance(schema, dict):
                out[t.name] = cast(dict[str, Any], schema)
            else:
                out[t.name] = cast(dict[str, Any], schema.model_json_schema())
        except Exception:
            out[t.name] = None
    return out


def _args_invalid(guard: Guard, tool: BaseTool | None, args: Mapping[str, Any]) -> bool:
    """Whether the framework would refuse these arguments before running the
    tool: such a call is passed through unrecorded (the framework says why),
    so a malformed first call never freezes an intent. The key argument is
    filled in first, as it will be when the tool runs."""
    if tool is None:
        return True
    schema: Any = tool.tool_call_schema
    validate = getattr(schema, "model_validate", None)
    if validate is None:
        return False
    filled = copy.deepcopy(dict(args))
    kp = guard.key_pointer
    try:
        if kp is not None:
            kp.set(filled, "0" * 64)
        validate(filled)
    except Exception:
        return True
    return False


def turn_of(request: ToolCallRequest) -> str | None:
    """``$turn``: the thread id and the id of the latest user message
    (``HumanMessage.id``, which the caller sets to its channel's message id
    so a redelivered message is the same turn)."""
    runtime = cast(object, request.runtime)  # pyright: ignore[reportUnknownMemberType]
    config = cast(Mapping[str, Any], getattr(runtime, "config", None) or {})
    thread = cast(Mapping[str, Any], config.get("configurable") or {}).get("thread_id")
    state: Any = request.state
    messages: Any = (
        cast(Mapping[str, Any], state).get("messages") if isinstance(state, Mapping) else getattr(state, "messages", None)
    )
    human: str | None = None
    for m in reversed(cast(Sequence[BaseMessage], messages or [])):
        if isinstance(m, HumanMessage):
            human = m.id
            break
    if thread is None or not human:
        return None
    return f"{thread}/{human}"


def _result_of(out: ToolMessage | Command[Any]) -> tg.ToolResult:
    if isinstance(out, ToolMessage):
        extra: dict[str, Any] = {}
        if out.artifact is not None:
            try:
                json.dumps(out.artifact)
                extra["artifact"] = out.artifact
            except (TypeError, ValueError):
                pass
        return tg.ToolResult(out.content, out.status == "error", extra, out)
    # A Command updates the graph's state; only the fact that it ran is kept.
    return tg.ToolResult("executed; its result was a LangGraph Command, which is not stored", False, {}, out)


def _with_notes(content: Any, notes: list[str]) -> Any:
    if not notes:
        return content
    if isinstance(content, str):
        return "\n\n".join([content, *notes]) if content else "\n\n".join(notes)
    blocks = list(cast(list[Any], content))
    blocks.extend({"type": "text", "text": n} for n in notes)
    return blocks


def _message(answer: tg.Answer, request: ToolCallRequest) -> ToolMessage | Command[Any]:
    call_id = request.tool_call["id"]
    native = answer.result.native
    if answer.executed and isinstance(native, Command) and not answer.notes:
        return cast(Command[Any], native)
    if answer.executed and isinstance(native, ToolMessage):
        msg = native.model_copy(deep=True)
        msg.content = _with_notes(msg.content, answer.notes)
    else:
        # Stored (a replay) or idem's own answer: under THIS call's id, as
        # providers require of every tool result.
        r = answer.result
        msg = ToolMessage(
            content=_with_notes(r.content, answer.notes),
            tool_call_id=call_id or "",
            name=request.tool_call["name"],
            status="error" if r.is_error else "success",
            artifact=r.extra.get("artifact"),
        )
    msg.tool_call_id = call_id or msg.tool_call_id
    msg.response_metadata = {**msg.response_metadata, "idem": answer.idem}
    return msg


class IdemToolMiddleware(AgentMiddleware):  # type: ignore[type-arg]
    """Guards the tools its guards name: each call records the intent from
    the tool's arguments, the tool runs once per intent, and a retry, a
    resumed run or another process gets the stored result under its own
    ``tool_call_id``. Other tools pass untouched.

    ``guards``: a guard file's path, the same structure in code, or
    ``idem_client.guards.load(...)``'s result. ``tools``: the agent's tools,
    to check the guards against their schemas now (a guarded tool the agent
    lacks, or an argument its schema does not declare, raises
    ``GuardFileError`` naming the line); without it each guarded tool is
    checked at its first call. ``lookups``: ``{tool: fn(intent)}`` for
    guards with ``on_uncertain = "lookup"``.
    """

    def __init__(
        self,
        client: Client | AsyncClient | tuple[Client, AsyncClient],
        guards: Source,
        *,
        tools: Sequence[BaseTool] | None = None,
        lookups: Mapping[str, Callable[..., Any]] | None = None,
    ) -> None:
        super().__init__()
        self._sync: Client | None = None
        self._async: AsyncClient | None = None
        pair = cast(Sequence[object], client if isinstance(client, tuple) else (client,))
        for c in pair:
            if isinstance(c, Client):
                self._sync = c
            elif isinstance(c, AsyncClient):
                self._async = c
            else:
                raise TypeError(f"client must be an idem_client.Client or AsyncClient, not {type(c).__name__}")
        self.guards: Guards = load(guards, lookups=lookups)
        self._checked: set[str] = set()
        self._warned_turn = False
        if tools is not None:
            self.guards.check_tools(tool_schemas(tools))
            self._checked.update(g.tool for g in self.guards)

    @property
    def name(self) -> str:
        return "IdemToolMiddleware"

    def _guard_for(self, request: ToolCallRequest) -> Guard | None:
        guard = self.guards.get(request.tool_call["name"])
        if guard is None or request.tool is None:
            return guard
        if guard.tool not in self._checked:
            only = Guards([guard], self.guards.where)
            only.check_tools(tool_schemas([request.tool]))
            self._checked.add(guard.tool)
        return guard

    def _turn(self, guard: Guard, request: ToolCallRequest) -> str | None:
        if not any(f.source == TURN for f in guard.fields):
            return None
        turn = turn_of(request)
        if turn and not self._warned_turn and _UUID4.match(turn.rsplit("/", 1)[1]):
            self._warned_turn = True
            _log.warning(
                "idem: %s's reference is the turn %s, whose message id looks like one LangGraph made up for this run: "
                "a redelivered message would be a new turn and run %s again. Give the HumanMessage your channel's "
                "message id (HumanMessage(text, id=...)); if that id is a uuid4 already, ignore this.",
                guard.tool,
                turn,
                guard.tool,
            )
        return turn

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]],
    ) -> ToolMessage | Command[Any]:
        guard = self._guard_for(request)
        if guard is None:
            return handler(request)
        args = cast(Mapping[str, Any], request.tool_call["args"])
        if _args_invalid(guard, request.tool, args):
            return handler(request)
        if self._sync is None:
            raise TypeError("IdemToolMiddleware was given an AsyncClient only: use agent.ainvoke, or pass (Client, AsyncClient)")

        def execute(frozen: dict[str, Any]) -> tg.ToolResult:
            return _result_of(handler(request.override(tool_call={**request.tool_call, "args": frozen})))

        answer = tg.call(self._sync, guard, args, execute, self._turn(guard, request), pauses=(GraphBubbleUp,))
        return _message(answer, request)

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        guard = self._guard_for(request)
        if guard is None:
            return await handler(request)
        args = cast(Mapping[str, Any], request.tool_call["args"])
        if _args_invalid(guard, request.tool, args):
            return await handler(request)
        if self._async is None:
            raise TypeError("IdemToolMiddleware was given a Client only: use agent.invoke, or pass (Client, AsyncClient)")

        async def execute(frozen: dict[str, Any]) -> tg.ToolResult:
            return _result_of(await handler(request.override(tool_call={**request.tool_call, "args": frozen})))

        answer = await tg.acall(self._async, guard, args, execute, self._turn(guard, request), pauses=(GraphBubbleUp,))
        return _message(answer, request)
