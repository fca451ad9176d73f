"""OpenAI Agents SDK: function tools that run once per intent, whatever the
model or a resumed run asks again.

    from agents import Agent
    from idem_client.openai_agents import IdemGuard

    idem = IdemGuard(async_client, "pay-guard.toml")

    @idem.function_tool
    async def charge_pix(customer_id: str, amount: str, pix_key: str, invoice_ref: str, idempotency_key: str = "") -> str:
        ...

    agent = Agent(name="billing", tools=[charge_pix])

``idem.function_tool`` is the SDK's ``@function_tool`` with the guard
inside: the SDK's schema validates the arguments first (a call it refuses
is never recorded), then the intent is recorded and the function runs only
in the call that holds the claim. For MCP tools, point the SDK's MCP server
at ``idem mcp gateway`` instead. Requires ``idem-client[openai-agents]``.
See the book's "Agent frameworks".
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
from typing import Any, Callable, Mapping, overload

from agents import FunctionTool, RunContextWrapper
from agents.function_schema import function_schema
from agents.tool import set_function_tool_failure_error_function, with_function_tool_failure_error_handler
from agents.tool_context import ToolContext
from pydantic_core import to_jsonable_python

from . import _tool_guard as tg
from ._async import AsyncClient
from .guards import Guards, GuardFileError, Source, load

__all__ = ["IdemGuard", "OutcomeUnknown"]

OutcomeUnknown = tg.OutcomeUnknown

_log = logging.getLogger("idem_client")


def _text(content: Any) -> str:
    return content if isinstance(content, str) else tg.dumps(content)


class IdemGuard:
    """The guards, and the decorator that makes a guarded function tool.

    ``client``: an ``idem_client.AsyncClient`` (the SDK runs tools in its
    event loop). ``guards``: a guard file's path, the same structure in
    code, or ``idem_client.guards.load(...)``. ``turn``: ``fn(ctx) -> str |
    None`` reading the run's context (``ctx.context``) for a guard field
    written ``"$turn"``. ``lookups``: ``{tool: fn(intent)}`` for
    ``on_uncertain = "lookup"``. ``on_answer``: ``fn(tool_call_id, idem)``,
    called with each guarded answer's ``_meta.idem`` equivalent.
    """

    def __init__(
        self,
        client: AsyncClient,
        guards: Source,
        *,
        turn: Callable[[RunContextWrapper[Any]], str | None] | None = None,
        lookups: Mapping[str, Callable[..., Any]] | None = None,
        on_answer: Callable[[str, dict[str, Any]], None] | None = None,
    ) -> None:
        if not isinstance(client, AsyncClient):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError(f"client must be an idem_client.AsyncClient (the SDK runs tools in its event loop), not {type(client).__name__}")
        self.client = client
        self.guards: Guards = load(guards, lookups=lookups)
        self.turn = turn
        self.on_answer = on_answer
        if turn is None:
            self.guards.refuse_turn("pass IdemGuard(..., turn=lambda ctx: ...), the conversation's turn from your run context")

    @overload
    def function_tool(self, func: Callable[..., Any], /) -> FunctionTool: ...

    @overload
    def function_tool(
        self, func: None = None, /, *, name_override: str | None = None, description_override: str | None = None
    ) -> Callable[[Callable[..., Any]], FunctionTool]: ...

    def function_tool(
        self,
        func: Callable[..., Any] | None = None,
        /,
        *,
        name_override: str | None = None,
        description_override: str | None = None,
    ) -> FunctionTool | Callable[[Callable[..., Any]], FunctionTool]:
        """A ``FunctionTool`` of ``func`` (sync or async, its first
        parameter optionally the ``RunContextWrapper``), guarded by the
        guard of its name; raises ``GuardFileError`` when no guard names it
        or the guard names an argument it lacks."""

        def make(f: Callable[..., Any]) -> FunctionTool:
            return self._tool(f, name_override, description_override)

        return make(func) if func is not None else make

    def _tool(self, func: Callable[..., Any], name: str | None, description: str | None) -> FunctionTool:
        schema = function_schema(func, name_override=name, description_override=description)
        guard = self.guards.get(schema.name)
        if guard is None:
            raise GuardFileError(self.guards.where, f"no guard names tool `{schema.name}` (guarded: {', '.join(g.tool for g in self.guards)})")
        # Checked against the schema the model is shown, before any run.
        Guards([guard], self.guards.where).check_tools({schema.name: schema.params_json_schema})

        async def call(ctx: ToolContext[Any], validated: Any) -> Any:
            args, kwargs = schema.to_call_args(validated)
            if schema.takes_context:
                args = [ctx, *args]
            if inspect.iscoroutinefunction(func):
                return await func(*args, **kwargs)
            return await asyncio.to_thread(func, *args, **kwargs)

        async def on_invoke_tool(ctx: ToolContext[Any], input: str) -> Any:
            # Validated before anything is recorded: a call the schema
            # refuses raises here, and the SDK tells the model why.
            validated = schema.params_pydantic_model(**(json.loads(input) if input else {}))
            arguments: dict[str, Any] = validated.model_dump(mode="json")

            async def execute(frozen: dict[str, Any]) -> tg.ToolResult:
                result = await call(ctx, schema.params_pydantic_model(**frozen))
                try:
                    content = to_jsonable_python(result)
                except Exception:
                    content = str(result)
                return tg.ToolResult(content, False, {}, result)

            turn = self.turn(ctx) if self.turn is not None else None
            try:
                answer = await tg.acall(self.client, guard, arguments, execute, turn)
            except tg.OutcomeUnknown as e:
                # The model reads the sentence, as the gateway's isError;
                # the SDK's default error text would hide it.
                _log.warning("idem: %s", e)
                self._said(ctx, e.idem)
                return str(e)
            self._said(ctx, answer.idem)
            return _output(answer)

        tool = FunctionTool(
            name=schema.name,
            description=schema.description or "",
            params_json_schema=schema.params_json_schema,
            # The SDK's own handling of a tool's errors (arguments the schema
            # refuses, say): reported to the model, as @function_tool's are.
            on_invoke_tool=with_function_tool_failure_error_handler(on_invoke_tool, _handled),
            strict_json_schema=schema.strict_json_schema,
        )
        return set_function_tool_failure_error_function(tool)

    def _said(self, ctx: ToolContext[Any], idem: dict[str, Any]) -> None:
        if self.on_answer is not None:
            self.on_answer(ctx.tool_call_id, idem)


def _handled(tool: FunctionTool, error: Exception, input_json: str) -> None:
    _log.info("idem: %s answered the model with an error, nothing recorded: %s", tool.name, type(error).__name__)


def _output(answer: tg.Answer) -> Any:
    result = answer.result
    if answer.executed and not answer.notes:
        return result.native
    return "\n\n".join([_text(result.content), *answer.notes])
