"""Pydantic AI: ``IdemToolset`` runs each guarded tool once per intent,
whatever asks for it again (``ModelRetry``, a re-planned step, another run).

    from pydantic_ai import Agent, FunctionToolset
    from idem_client.pydantic_ai import IdemToolset

    tools = FunctionToolset([charge_pix])
    agent = Agent(model, toolsets=[IdemToolset(tools, async_client, "pay-guard.toml")])

A ``WrapperToolset``: the wrapped toolset validates the arguments as
always (a call its schema refuses never reaches idem), and every guarded
call goes through the guard. Requires ``idem-client[pydantic-ai]``. See the
book's "Agent frameworks".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Generic, Mapping, cast

from pydantic_ai import RunContext
from pydantic_ai.exceptions import ApprovalRequired, CallDeferred, ModelRetry, ToolFailed
from pydantic_ai.messages import ToolReturn
from pydantic_ai.tools import AgentDepsT
from pydantic_ai.toolsets import AbstractToolset, FunctionToolset, ToolsetTool, WrapperToolset
from pydantic_core import to_jsonable_python

from . import _tool_guard as tg
from ._async import AsyncClient
from .guards import Guard, Guards, Source, load

__all__ = ["IdemToolset", "OutcomeUnknown"]

OutcomeUnknown = tg.OutcomeUnknown


def _schemas(toolset: AbstractToolset[Any]) -> dict[str, dict[str, Any] | None] | None:
    """The argument schemas of a function toolset's tools, known before any
    run; ``None`` for a toolset that lists its tools only in a run."""
    if not isinstance(toolset, FunctionToolset):
        return None
    tools = toolset.tools
    return {name: dict(t.function_schema.json_schema) for name, t in tools.items()}


def _result_of(out: Any) -> tg.ToolResult:
    value = out.return_value if isinstance(out, ToolReturn) else out
    try:
        content = to_jsonable_python(value)
    except Exception:
        content = repr(cast(object, value))
    return tg.ToolResult(content, False, {}, out)


def _text(content: Any) -> str:
    return content if isinstance(content, str) else tg.dumps(content)


@dataclass(init=False)
class IdemToolset(WrapperToolset[AgentDepsT], Generic[AgentDepsT]):
    """Guards the wrapped toolset's tools that ``guards`` name; the others
    pass untouched.

    ``client``: an ``idem_client.AsyncClient``. ``guards``: a guard file's
    path, the same structure in code, or ``idem_client.guards.load(...)``.
    ``turn``: ``fn(ctx) -> str | None``, the reference for a guard field
    written ``"$turn"`` (say ``f"{ctx.deps.chat_id}/{ctx.deps.message_id}"``);
    a guard that reads the turn without it is refused at start.
    ``lookups``: ``{tool: fn(intent)}`` for ``on_uncertain = "lookup"``.
    A ``FunctionToolset`` is checked against the guards now; any other at
    each guarded tool's first call.
    """

    client: AsyncClient
    guards: Guards
    turn: Callable[[RunContext[AgentDepsT]], str | None] | None

    def __init__(
        self,
        wrapped: AbstractToolset[AgentDepsT],
        client: AsyncClient,
        guards: Source,
        *,
        turn: Callable[[RunContext[AgentDepsT]], str | None] | None = None,
        lookups: Mapping[str, Callable[..., Any]] | None = None,
    ) -> None:
        if not isinstance(cast(object, client), AsyncClient):
            raise TypeError(f"client must be an idem_client.AsyncClient (Pydantic AI calls tools in its event loop), not {type(client).__name__}")
        self.wrapped = wrapped
        self.client = client
        self.guards = load(guards, lookups=lookups)
        self.turn = turn
        if turn is None:
            self.guards.refuse_turn(
                "pass IdemToolset(..., turn=lambda ctx: ...), the conversation's turn from your deps (the chat and the id of the user's message)"
            )
        schemas = _schemas(wrapped)
        if schemas is not None:
            self.guards.check_tools(schemas)

    def _guard_for(self, name: str, tool: ToolsetTool[AgentDepsT]) -> Guard | None:
        guard = self.guards.get(name)
        if guard is not None:
            Guards([guard], self.guards.where).check_tools({name: tool.tool_def.parameters_json_schema})
        return guard

    async def call_tool(self, name: str, tool_args: dict[str, Any], ctx: RunContext[AgentDepsT], tool: ToolsetTool[AgentDepsT]) -> Any:
        guard = self._guard_for(name, tool)
        if guard is None:
            return await self.wrapped.call_tool(name, tool_args, ctx, tool)
        arguments = cast(dict[str, Any], to_jsonable_python(tool_args))

        async def execute(frozen: dict[str, Any]) -> tg.ToolResult:
            # The frozen arguments as JSON, validated again into what the
            # tool takes (a Decimal, a model), as the framework would.
            validated = cast(dict[str, Any], tool.args_validator.validate_python(frozen, context=ctx.validation_context))
            return _result_of(await self.wrapped.call_tool(name, validated, ctx, tool))

        turn = self.turn(ctx) if self.turn is not None else None
        answer = await tg.acall(self.client, guard, arguments, execute, turn, pauses=(ModelRetry, CallDeferred, ApprovalRequired))
        return _answer(answer)


def _answer(answer: tg.Answer) -> Any:
    result = answer.result
    if result.is_error:
        # A failed tool result the model sees, which does not ask it to
        # try again: as the gateway's isError.
        raise ToolFailed("\n\n".join([_text(result.content), *answer.notes]))
    native = result.native
    if answer.executed and isinstance(native, ToolReturn) and not answer.notes:
        out = cast(ToolReturn[Any], native)
        kept = cast(object, out.metadata)
        if kept is None or isinstance(kept, dict):
            out.metadata = {**cast(dict[str, Any], kept or {}), "idem": answer.idem}
        return out
    value = cast(object, native) if answer.executed else cast(object, result.content)
    if answer.notes and isinstance(value, str):
        return ToolReturn(return_value="\n\n".join([value, *answer.notes]), metadata={"idem": answer.idem})
    return ToolReturn(return_value=value, content="\n\n".join(answer.notes) or None, metadata={"idem": answer.idem})
