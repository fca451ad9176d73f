"""One guarded tool call, whatever framework runs the tool.

The same steps and the same answers as the MCP gateway's guarded call
(``mcp/src/guarded.rs``): the arguments become the action's fields, the
first call freezes the fields the key covers and the arguments as it sent
them, the tool runs only in the call that holds the claim, always with the
frozen arguments (and the key in ``key_argument``), and every answer says
what happened in an ``idem`` dict shaped as the gateway's ``_meta.idem``
(``clients/conformance/mcp-meta.schema.json``), plus the sentences a model
reads. Each framework module turns a ``ToolResult`` and an ``Answer`` into
its own message types.
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
from copy import deepcopy
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Mapping, cast

from ._errors import Failed, FailedForGood, InFlight, OutcomeTooLarge, ProblemError, Uncertain, Unprocessable
from ._models import Intent, Outcome
from .guards import Guard, dumps

_log = logging.getLogger("idem_client")

#: The member of the recorded candidate that keeps the tool's arguments as
#: the first call sent them; the catalog's fields beside it make the key,
#: this member never enters it.
ARGUMENTS_MEMBER = "_tool_arguments"
#: The largest arguments object a guarded call may send, as the gateway's.
MAX_ARGUMENTS_BYTES = 64 * 1024
MAX_DEPTH = 64


@dataclass
class ToolResult:
    """What a tool answered, as stored for replay: ``content`` (text, or a
    list of content blocks), whether it is an error, and JSON ``extra``
    the framework keeps beside it. ``native`` is the framework's own object,
    handed back unchanged by the call that ran the tool."""

    content: Any
    is_error: bool = False
    extra: dict[str, Any] = field(default_factory=lambda: cast(dict[str, Any], {}))
    native: Any = None

    def stored(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"content": self.content, "is_error": self.is_error}
        if self.extra:
            doc["extra"] = self.extra
        return doc

    @staticmethod
    def from_stored(doc: Any) -> ToolResult:
        if isinstance(doc, Mapping) and "content" in doc:
            d = cast(Mapping[str, Any], doc)
            extra = d.get("extra")
            return ToolResult(
                d["content"],
                bool(d.get("is_error", False)),
                dict(cast(Mapping[str, Any], extra)) if isinstance(extra, Mapping) else {},
            )
        # Settled through /v1 or on /live with a document of another shape:
        # shown as it was recorded.
        return ToolResult(doc if isinstance(doc, str) else dumps(doc))


@dataclass
class Answer:
    """What the framework hands the model: ``result`` (the tool's, stored
    or fresh), ``idem`` (the gateway's ``_meta.idem``), and ``notes``, the
    sentences appended for the model. ``executed``: this call ran the tool
    and ``result.native`` is the framework's own answer."""

    result: ToolResult
    idem: dict[str, Any]
    notes: list[str] = field(default_factory=lambda: cast(list[str], []))
    executed: bool = False

    @property
    def is_error(self) -> bool:
        return self.result.is_error


class OutcomeUnknown(Exception):
    """The tool raised: whether it acted is unknown. The action is
    uncertain in idem (retrying the same call is safe: same key), and this
    exception, raised from the tool's own, says so to whatever handles the
    framework's tool errors (its retry middleware, or the model)."""

    def __init__(self, message: str, idem: dict[str, Any]) -> None:
        super().__init__(message)
        self.idem = idem


class _Refused(Exception):
    pass


class _ResendRefused(Exception):
    """A resend (``on_uncertain = "resend"``) answered with an error: the
    first send's outcome is still unknown, so it is never recorded as the
    reconciliation (a provider that refuses a replayed payment answers so
    even when the first one settled)."""

    def __init__(self, result: ToolResult) -> None:
        text = result.content if isinstance(result.content, str) else dumps(result.content)
        super().__init__(f"the resend was answered with an error, so the first send's outcome is still unknown: {text[:500]}")
        self.result = result


class _ErrorResult(Exception):
    """The framework answered with an error it made of an exception: the
    outcome is unknown, so the client marks the action uncertain."""

    def __init__(self, result: ToolResult) -> None:
        super().__init__("the tool answered with an error (an exception the framework caught)")
        self.result = result


def meta(
    key: str | None,
    attempt: int = 0,
    *,
    replayed: bool = False,
    diverged: bool = False,
    reconciled: bool = False,
    source: str | None = None,
    **more: Any,
) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "key": key,
        "replayed": replayed,
        "diverged": diverged,
        "attempt": attempt,
        "reconciled": reconciled,
        "diverged_meta": [],
    }
    if source is not None:
        doc["source"] = source
    doc.update(more)
    return doc


def refused(message: str) -> Answer:
    return Answer(ToolResult(message, True), meta(None, source="idem"))


def _depth(v: Any, d: int = 0) -> int:
    if d > MAX_DEPTH:
        return d
    if isinstance(v, Mapping):
        return max([_depth(x, d + 1) for x in cast(Mapping[str, Any], v).values()], default=d + 1)
    if isinstance(v, list):
        return max([_depth(x, d + 1) for x in cast(list[Any], v)], default=d + 1)
    return d


def _holds_nul(v: Any) -> bool:
    if isinstance(v, str):
        return "\0" in v
    if isinstance(v, Mapping):
        return any("\0" in k or _holds_nul(x) for k, x in cast(Mapping[str, Any], v).items())
    if isinstance(v, list):
        return any(_holds_nul(x) for x in cast(list[Any], v))
    return False


def prepare(guard: Guard, arguments: Mapping[str, Any], turn: str | None) -> dict[str, Any]:
    """The candidate to record: each field read from its argument (or the
    turn), and the arguments as sent. Raises ``_Refused`` saying what is
    missing or unstorable; nothing is recorded then."""
    try:
        sent = json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError) as e:
        raise _Refused(f"the arguments are not JSON ({e}); nothing was recorded or executed") from None
    if len(sent.encode()) > MAX_ARGUMENTS_BYTES:
        raise _Refused(f"the arguments are {len(sent.encode())} bytes; a guarded call takes at most {MAX_ARGUMENTS_BYTES}")
    if _depth(arguments) > MAX_DEPTH:
        raise _Refused(f"the arguments nest deeper than {MAX_DEPTH} levels; nothing was recorded or executed")
    bad = next((k for k, v in arguments.items() if _holds_nul(v)), None)
    if bad is not None:
        raise _Refused(f"argument `{bad}` holds a NUL character (\\u0000), which idem cannot store; nothing was recorded or executed")
    kp = guard.key_pointer
    if kp is not None:
        try:
            kp.set(deepcopy(dict(arguments)), None)
        except ValueError as e:
            raise _Refused(f"key_argument {e}; nothing was recorded or executed") from None
    candidate: dict[str, Any] = {}
    for f in guard.fields:
        if f.is_turn:
            if not turn:
                raise _Refused(
                    f"{guard.tool} reads idem's field `{f.name}` from the conversation's turn, and this run has none "
                    "(no thread id, or no id on the user's message); nothing was recorded or executed"
                )
            candidate[f.name] = turn
            continue
        ok, value = f.pointer.get(arguments)
        if not ok:
            raise _Refused(
                f"missing argument `{f.source}`: {guard.tool} needs it (idem's field `{f.name}`) to tell this charge "
                "from others; nothing was recorded or executed"
            )
        candidate[f.name] = value
    candidate[ARGUMENTS_MEMBER] = dict(arguments)
    return candidate


def frozen_arguments(guard: Guard, intent: Intent, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments as the first call sent them: the recorded copy, or
    (an intent recorded through /v1 without one) this call's arguments
    with the frozen fields' values."""
    frozen = intent.payload.get(ARGUMENTS_MEMBER)
    if isinstance(frozen, Mapping):
        return deepcopy(dict(cast(Mapping[str, Any], frozen)))
    out = deepcopy(dict(arguments))
    for f in guard.fields:
        if not f.is_turn and f.name in intent.payload:
            try:
                f.pointer.set(out, deepcopy(intent.payload[f.name]))
            except ValueError:
                pass
    return out


def to_send(guard: Guard, frozen: dict[str, Any], key: str) -> dict[str, Any]:
    kp = guard.key_pointer
    if kp is not None:
        # Overwritten whatever the model put there; its place was checked
        # before the intent was recorded.
        kp.set(frozen, key)
    return frozen


def differences(guard: Guard, now: Mapping[str, Any], frozen: Mapping[str, Any]) -> list[tuple[str, Any, Any]]:
    out: list[tuple[str, Any, Any]] = []
    for f in guard.fields:
        if f.is_turn:
            continue
        a_ok, a = f.pointer.get(now)
        b_ok, b = f.pointer.get(frozen)
        if a_ok and b_ok and a != b:
            out.append((f.source, a, b))
    return out


def _plain(v: Any) -> str:
    return v if isinstance(v, str) else dumps(v)


def divergence_note(diffs: list[tuple[str, Any, Any]], diverged: bool, reference: str) -> str | None:
    if not diffs:
        return None
    verb = "differs from" if diverged else "is written differently from (the same value as)"
    said = "; ".join(f"the {arg} you sent, {_plain(now)}, {verb} the frozen intent's {_plain(first)}" for arg, now, first in diffs)
    return f"idem: {said}; the frozen intent was used, as the first call for {reference} sent it."


def replay_note(guard: Guard, reference: str, updated_ms: int | None) -> str:
    at = ""
    if updated_ms is not None:
        t = _dt.datetime.fromtimestamp(updated_ms / 1000, tz=_dt.timezone.utc).replace(microsecond=0)
        at = " at " + t.isoformat().replace("+00:00", "Z")
    return (
        f"idem: {guard.tool} was already executed for {reference}{at}; the stored result is returned "
        "and nothing was executed or charged again."
    )


def unknown_sentence(guard: Guard, reference: str, key: str, why: str) -> str:
    return (
        f"{guard.tool} for {reference} was sent, and its answer never came ({why}): whether it was executed is unknown. "
        f"Do not retry with a new reference; retrying this same call is safe (same key). Key {key}."
    )


def refuse_sentence(guard: Guard, reference: str, key: str) -> str:
    return (
        f"the outcome of an earlier {guard.tool} for {reference} is unknown: it may have been executed. "
        "Do not retry it with a new reference (that would be a new charge); "
        f"it is in idem's work queue (/live), where a person settles it. Key {key}."
    )


def _name_the_argument(guard: Guard, message: str) -> str:
    for f in guard.fields:
        if f"`{f.name}`" in message or f" {f.name}" in message:
            where = "the conversation's turn" if f.is_turn else f"argument `{f.source}`"
            return f"{where}: {message} (idem's field `{f.name}`); nothing was recorded or executed"
    return f"{message}; nothing was recorded or executed"


@dataclass
class _Box:
    """What happened inside the client's ``run``, told apart afterwards."""

    result: ToolResult | None = None
    raised: BaseException | None = None
    resent: bool = False
    lookup_said: str | None = None
    lookup_raised: BaseException | None = None
    paused: BaseException | None = None


def _reference(e: ProblemError) -> tuple[str, str]:
    intent = cast(Intent | None, e.intent)
    if intent is None:
        return "this call", str(e.body.get("key", ""))
    return intent.reference, intent.key


def _mapped_error(guard: Guard, e: ProblemError) -> Answer | None:
    """The answer for an error the client raised before the tool ran."""
    ref, key = _reference(e)
    intent = cast(Intent | None, e.intent)
    diverged = bool(intent.diverged) if intent is not None else False
    if isinstance(e, InFlight):
        wait_s = int(e.retry_after) + 1
        return Answer(
            ToolResult(
                f"{guard.tool} for {ref} is still running in another call; nothing was executed by this one. "
                f"Retry the same call in {wait_s} s to get its result.",
                True,
            ),
            meta(key or None, diverged=diverged, source="idem"),
        )
    if isinstance(e, Uncertain):
        attempt = int(e.body.get("attempt", 0) or 0)
        return Answer(ToolResult(refuse_sentence(guard, ref, key), True), meta(key, attempt, diverged=diverged, source="idem"))
    if isinstance(e, FailedForGood):
        return Answer(
            ToolResult(f"{guard.tool} for {ref} failed for good earlier and will not run again: {e.error}", True),
            meta(key, diverged=diverged, source="idem"),
        )
    if isinstance(e, Unprocessable):
        return refused(_name_the_argument(guard, e.detail or str(e)))
    return None


def _settled(run: _Run, out: Outcome[Any], updated_ms: int | None) -> Answer:
    guard, box = run.guard, run.box
    intent = out.intent
    reconciled = out.reconciled or box.resent
    note = run.divergence(intent)
    notes = [note] if note else []
    if out.replayed:
        result = ToolResult.from_stored(out.response)
        return Answer(
            result,
            meta(out.key, out.attempt, replayed=True, diverged=intent.diverged, reconciled=reconciled, source="upstream" if result.is_error else None),
            [*notes, replay_note(guard, intent.reference, updated_ms)],
        )
    if box.result is not None and (not out.reconciled or box.resent):
        r = box.result
        idem = meta(out.key, out.attempt, diverged=intent.diverged, reconciled=reconciled, source="upstream" if r.is_error else None)
        if box.lookup_said:
            idem["lookup"] = box.lookup_said
        return Answer(r, idem, notes, executed=True)
    # Settled by the lookup: its answer stands for the tool's.
    return Answer(
        ToolResult.from_stored(out.response),
        meta(out.key, out.attempt, diverged=intent.diverged, reconciled=True, lookup="executed"),
        notes,
    )


class _Run:
    """State shared by the sync and async drivers for one call."""

    def __init__(self, guard: Guard, arguments: Mapping[str, Any], turn: str | None) -> None:
        self.guard = guard
        self.arguments = dict(arguments)
        self.candidate = prepare(guard, arguments, turn)
        self.box = _Box()
        self.intent: Intent | None = None

    def frozen(self, intent: Intent) -> dict[str, Any]:
        self.intent = intent
        return to_send(self.guard, frozen_arguments(self.guard, intent, self.arguments), intent.key)

    def divergence(self, intent: Intent) -> str | None:
        """The sentence naming each argument this call sent otherwise than
        the frozen intent (``None`` when none)."""
        frozen = frozen_arguments(self.guard, intent, self.arguments)
        return divergence_note(differences(self.guard, self.arguments, frozen), intent.diverged, intent.reference)

    def kept(self, result: ToolResult) -> dict[str, Any]:
        self.box.result = result
        if result.is_error and self.box.resent:
            raise _ResendRefused(result)
        if result.is_error and self.guard.errors != "final":
            raise _ErrorResult(result)
        return result.stored()

    def raised(self, e: BaseException) -> Answer:
        """The answer after the tool raised (``OutcomeUnknown`` is raised
        from it instead when its outcome is unknown)."""
        intent = self.intent
        key = intent.key if intent else ""
        ref = intent.reference if intent else "this call"
        attempt = intent.attempt if intent else 0
        diverged = intent.diverged if intent else False
        if isinstance(e, (Failed, _ErrorResult)):
            # The tool ran: it refused (``Failed``, recorded as it says), or
            # the framework made an error of an exception (marked uncertain).
            if isinstance(e, Failed):
                answer = Answer(ToolResult(e.error, True), meta(key, attempt, diverged=diverged, reconciled=self.box.resent, source="upstream"))
            else:
                why = "the tool answered with an error the framework made of an exception"
                answer = Answer(
                    e.result, meta(key, attempt, diverged=diverged, source="upstream"), [unknown_sentence(self.guard, ref, key, why)], executed=True
                )
            note = self.divergence(intent) if intent else None
            if note:
                answer.notes.insert(0, note)
            return answer
        if not isinstance(e, Exception):
            # Cancelled or interrupted mid-call: the client marked the
            # action uncertain; the cancellation itself goes on.
            raise e
        why = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
        idem = meta(key, attempt, diverged=diverged, source="idem")
        raise OutcomeUnknown(unknown_sentence(self.guard, ref, key, why), idem) from e

    def reconcile(self, effect: Callable[[Intent], Any], is_async: bool = False) -> Any:
        """What the client calls when it finds the action uncertain: with
        ``resend``, the tool again under the same key, its answer recorded
        as the reconciliation (as the gateway's resend); with ``lookup``,
        the provider asked."""
        g = self.guard
        if g.on_uncertain == "refuse":
            return None
        if g.on_uncertain == "resend":

            def resend(intent: Intent) -> Any:
                self.box.resent = True
                return effect(intent)

            async def aresend(intent: Intent) -> Any:
                self.box.resent = True
                return await effect(intent)

            return aresend if is_async else resend
        lookup = g.lookup
        assert lookup is not None

        def found_as(found: Any) -> Any:
            if found is None:
                # Not executed: the tool runs again, same key.
                self.box.lookup_said = "not_executed"
                return None
            self.box.lookup_said = "executed"
            return ToolResult(found if isinstance(found, str) else dumps(found)).stored()

        def sync_lookup(intent: Intent) -> Any:
            self.intent = intent
            try:
                found = lookup(intent)
            except BaseException as e:
                self.box.lookup_raised = e
                raise
            return found_as(found)

        async def async_lookup(intent: Intent) -> Any:
            self.intent = intent
            try:
                found = lookup(intent)
                if isinstance(found, Awaitable):
                    found = await cast(Awaitable[Any], found)
            except BaseException as e:
                self.box.lookup_raised = e
                raise
            return found_as(found)

        return async_lookup if is_async else sync_lookup

    def lookup_unknown(self, e: BaseException) -> Answer:
        intent = self.intent
        key = intent.key if intent else ""
        ref = intent.reference if intent else "this call"
        text = (
            f"the outcome of {self.guard.tool} for {ref} is unknown, and asking the provider did not tell: "
            f"{type(e).__name__}: {e}. Do not retry it with a new reference (that would be a new charge); "
            f"it is in idem's work queue (/live), where a person settles it. Key {key}."
        )
        return Answer(
            ToolResult(text, True),
            meta(key, intent.attempt if intent else 0, diverged=bool(intent and intent.diverged), source="idem", lookup="unknown"),
        )


def call(
    client: Any,
    guard: Guard,
    arguments: Mapping[str, Any],
    execute: Callable[[dict[str, Any]], ToolResult],
    turn: str | None = None,
    pauses: tuple[type[BaseException], ...] = (),
) -> Answer:
    """One guarded call through a blocking ``Client``; ``execute`` runs the
    tool with the arguments it is given (the frozen ones). An exception in
    ``pauses`` (LangGraph's interrupt) means the tool stopped before acting
    and will run again: the claim is given back and it propagates."""
    try:
        run = _Run(guard, arguments, turn)
    except _Refused as r:
        return refused(str(r))

    def effect(intent: Intent) -> dict[str, Any]:
        to = run.frozen(intent)
        try:
            result = execute(to)
        except pauses as e:
            run.box.paused = e
            raise Failed(f"the tool paused ({type(e).__name__}) before an outcome; it runs again when resumed", retryable=True) from e
        except BaseException as e:
            run.box.raised = e
            raise
        return run.kept(result)

    try:
        out = client.run(
            guard.action,
            effect,
            run.candidate,
            lease_ms=guard.lease_ms,
            on_in_flight="wait",
            max_wait=guard.lease_ms / 1000 + 1,
            reconcile=run.reconcile(effect),
        )
    except BaseException as e:
        return _failed(run, e)
    updated = None
    if out.replayed:
        try:
            updated = int(client.get_action(out.key)["updated_ms"])
        except (ProblemError, KeyError, TypeError, ValueError):
            pass
    return _settled(run, out, updated)


async def acall(
    client: Any,
    guard: Guard,
    arguments: Mapping[str, Any],
    execute: Callable[[dict[str, Any]], Awaitable[ToolResult]],
    turn: str | None = None,
    pauses: tuple[type[BaseException], ...] = (),
) -> Answer:
    """As ``call``, through an ``AsyncClient``."""
    try:
        run = _Run(guard, arguments, turn)
    except _Refused as r:
        return refused(str(r))

    async def effect(intent: Intent) -> dict[str, Any]:
        to = run.frozen(intent)
        try:
            result = await execute(to)
        except pauses as e:
            run.box.paused = e
            raise Failed(f"the tool paused ({type(e).__name__}) before an outcome; it runs again when resumed", retryable=True) from e
        except BaseException as e:
            run.box.raised = e
            raise
        return run.kept(result)

    reconcile = run.reconcile(effect, is_async=True)
    try:
        out = await client.run(
            guard.action,
            effect,
            run.candidate,
            lease_ms=guard.lease_ms,
            on_in_flight="wait",
            max_wait=guard.lease_ms / 1000 + 1,
            reconcile=reconcile,
        )
    except BaseException as e:
        return _failed(run, e)
    updated = None
    if out.replayed:
        try:
            updated = int((await client.get_action(out.key))["updated_ms"])
        except (ProblemError, KeyError, TypeError, ValueError):
            pass
    return _settled(run, out, updated)


def _failed(run: _Run, e: BaseException) -> Answer:
    box = run.box
    if box.lookup_raised is not None and e is box.lookup_raised:
        if not isinstance(e, Exception):
            raise e
        return run.lookup_unknown(e)
    if isinstance(e, Failed) and box.resent and e is box.raised:
        # The tool refused the resend: the client left the action uncertain
        # (a resend's refusal says nothing about the first send).
        e = _ResendRefused(ToolResult(e.error, True))
    if isinstance(e, _ResendRefused):
        intent = run.intent
        key = intent.key if intent else ""
        ref = intent.reference if intent else "this call"
        note = (
            f"idem: an earlier {run.guard.tool} for {ref} may have been executed, and resending it under the same key was answered with the error above "
            "(a provider that refuses a replayed payment answers so even when the first one settled). Whether it was executed is unknown: "
            f"do not retry it with a new reference or a new payment; it is in idem's work queue (/live), where a person settles it. Key {key}."
        )
        idem = meta(key, intent.attempt if intent else 0, diverged=bool(intent and intent.diverged), source="upstream")
        return Answer(e.result, idem, [note], executed=True)
    if box.paused is not None:
        # The tool paused (a LangGraph interrupt) before any outcome: given
        # back as a retryable failure, so resuming runs it again.
        raise box.paused
    if box.raised is not None and (e is box.raised or isinstance(e, (Failed, _ErrorResult))):
        # The tool itself raised (the client marked the action uncertain,
        # or recorded the known failure ``Failed`` says).
        return run.raised(box.raised if e is box.raised else e)
    if isinstance(e, _ErrorResult):
        return run.raised(e)
    if box.result is not None:
        # The tool answered; its answer goes back even though it could not
        # be recorded (the lease ends, and the action is uncertain then).
        _log.warning("idem: a guarded call's outcome could not be recorded: %s", e)
        r = box.result
        intent = run.intent
        key = intent.key if intent else None
        if isinstance(e, OutcomeTooLarge):
            note = f"idem: the result was over idem's outcome limit and was not stored; {run.guard.tool} was executed once."
        else:
            note = f"idem: the result could not be recorded ({e}); {run.guard.tool} was executed once."
        return Answer(r, meta(key, intent.attempt if intent else 0, source="upstream" if r.is_error else None), [note], executed=True)
    if isinstance(e, ProblemError):
        mapped = _mapped_error(run.guard, e)
        if mapped is not None:
            if isinstance(e.intent, Intent):
                note = run.divergence(e.intent)
                if note:
                    mapped.notes.insert(0, note)
            return mapped
        _log.warning("idem: a guarded call could not be recorded: %s", e)
        return refused(f"idem could not record this call ({e}); nothing was executed. Retry the same call later.")
    raise e
