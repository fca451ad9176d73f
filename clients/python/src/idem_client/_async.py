"""``AsyncClient``: the same API as ``Client``, awaitable (asyncio)."""

from __future__ import annotations

import asyncio
import functools
import inspect
import time
from types import TracebackType
from typing import Any, Awaitable, Callable, Mapping, TypeVar, Union

import httpx

from . import _protocol as p
from . import wire as w
from ._errors import Failed, FailedForGood, InFlight, OutcomeTooLarge, ProblemError, Uncertain
from ._models import EventClaim, Intent, Outcome
from ._protocol import OnInFlight

T = TypeVar("T")
#: An effect or reconcile function: plain or ``async``.
MaybeAsync = Union[Callable[[Intent], Awaitable[T]], Callable[[Intent], T]]
AsyncCandidate = Union[Mapping[str, Any], Callable[[], Any]]


async def _maybe_await(value: Any) -> Any:
    if inspect.isawaitable(value):
        return await value
    return value


class AsyncClient:
    """The asyncio client: every method of ``Client``, awaitable. Effects,
    lazy candidates and ``reconcile`` may be ``async def`` or plain."""

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout: float = 30.0,
        max_retries: int = 2,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        if not token:
            raise TypeError("token= is required: the tenant's API token (idem tenant create)")
        self._owned = http_client is None
        self._http = http_client or httpx.AsyncClient(timeout=timeout)
        self._base = base_url.rstrip("/")
        self._headers = {"authorization": f"Bearer {token}", "accept": "application/json"}
        self._json_headers = {**self._headers, "content-type": "application/json"}
        self.max_retries = max_retries
        self.events = AsyncEvents(self)

    async def aclose(self) -> None:
        if self._owned:
            await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def once(
        self,
        action: str,
        *,
        lease_ms: int = p.DEFAULT_LEASE_MS,
        on_in_flight: OnInFlight = "wait",
        max_wait: float = 60.0,
        reconcile: MaybeAsync[Any] | None = None,
    ) -> Callable[[MaybeAsync[T]], Callable[..., Awaitable[Outcome[T]]]]:
        """As ``Client.once``; the guarded function is a coroutine."""
        p.check_options(lease_ms, on_in_flight, max_wait)

        def decorate(effect: MaybeAsync[T]) -> Callable[..., Awaitable[Outcome[T]]]:
            @functools.wraps(effect)
            async def guarded(candidate: AsyncCandidate, *, reference: str | None = None) -> Outcome[T]:
                return await self.run(
                    action,
                    effect,
                    candidate,
                    reference=reference,
                    lease_ms=lease_ms,
                    on_in_flight=on_in_flight,
                    max_wait=max_wait,
                    reconcile=reconcile,
                )

            return guarded

        return decorate

    async def run(
        self,
        action: str,
        effect: MaybeAsync[T],
        candidate: AsyncCandidate,
        *,
        reference: str | None = None,
        lease_ms: int = p.DEFAULT_LEASE_MS,
        on_in_flight: OnInFlight = "wait",
        max_wait: float = 60.0,
        reconcile: MaybeAsync[Any] | None = None,
    ) -> Outcome[T]:
        """As ``Client.run``."""
        p.check_options(lease_ms, on_in_flight, max_wait)
        p.check_candidate(candidate, reference)
        give_up = time.monotonic() + max_wait
        attempt_id = p.new_attempt_id()
        payload = await self._payload(action, candidate, reference)
        doc = p.intent_answer(
            await self._call(
                "POST",
                "/v1/intents",
                p.record_body(action, payload, lease_ms, attempt_id, p.wait_ms(on_in_flight, give_up)),
                "record",
            )
        )
        intent = p.intent_of_answer(doc)
        try:
            claim = p.claim_of(doc)
            while claim["status"] == "in_flight":
                wait_ms = p.wait_ms(on_in_flight, give_up)
                if wait_ms == 0:
                    raise p.in_flight(claim)
                claim = p.claim_answer(
                    await self._call(
                        "POST",
                        p.action_path(intent.key, "begin"),
                        p.begin_body(action, lease_ms, attempt_id, wait_ms),
                        "begin",
                        in_flight_ok=True,
                    )
                )
            return await self._settle(intent, claim, effect, lease_ms, reconcile)
        except (InFlight, Uncertain, FailedForGood) as e:
            # Said with the intent it is about (its reference and key).
            e.intent = intent
            raise

    async def _settle(
        self,
        intent: Intent,
        claim: w.BeginResponse,
        effect: MaybeAsync[T],
        lease_ms: int,
        reconcile: MaybeAsync[Any] | None,
    ) -> Outcome[T]:
        status = claim["status"]
        finished = p.finished(intent, claim)
        if finished is not None:
            return finished
        p.hold(intent, claim)
        if status == "uncertain":
            if reconcile is None:
                await self._mark_uncertain(intent, "uncertain: the client has no reconcile function")
                raise p.uncertain_error(intent, claim)
            try:
                found = await _maybe_await(reconcile(intent))
            except BaseException as e:
                await self._mark_uncertain(intent, f"reconcile raised {type(e).__name__}: {e}")
                raise
            if found is not None:
                await self._call(
                    "POST",
                    p.action_path(intent.key, "reconcile"),
                    p.reconcile_body(intent.token, p.encode_response(found)),
                    "settle",
                )
                return Outcome(found, False, intent.key, intent.attempt, True, intent)
        return await self._execute(intent, effect, lease_ms)

    async def _execute(self, intent: Intent, effect: MaybeAsync[T], lease_ms: int) -> Outcome[T]:
        renewer = asyncio.ensure_future(self._renew(intent, lease_ms))
        try:
            result: T = await _maybe_await(effect(intent))
        except Failed as f:
            await _stop(renewer)
            await self._call(
                "POST",
                p.action_path(intent.key, "fail"),
                p.fail_body(intent.token, f.error, f.retryable),
                "settle",
            )
            raise
        except BaseException as e:
            await _stop(renewer)
            # Cancelled or raised: whether the provider acted is unknown.
            await asyncio.shield(self._mark_uncertain(intent, f"the effect raised {type(e).__name__}: {e}"))
            raise
        await _stop(renewer)
        try:
            # Encoded once, here: a result that is not JSON is said before
            # anything is sent.
            body = p.encode(p.complete_body(intent.token, result))
        except (TypeError, ValueError) as e:
            await self._mark_uncertain(intent, "the effect's result is not JSON")
            raise TypeError(f"the effect's result must be JSON-serializable to be stored: {e}") from e
        try:
            await self._call("POST", p.action_path(intent.key, "complete"), body, "settle")
        except OutcomeTooLarge as e:
            # The provider acted; its answer just cannot be kept. Uncertain,
            # so a person settles it; never read as bad input.
            if not e.marked_uncertain:
                await self._mark_uncertain(
                    intent, f"the effect's result was over the server's outcome limit ({e.limit} bytes)"
                )
            raise
        return Outcome(result, False, intent.key, intent.attempt, False, intent)

    async def _renew(self, intent: Intent, lease_ms: int) -> None:
        every = max(lease_ms / 3000, 0.05)
        while True:
            await asyncio.sleep(every)
            try:
                doc = await self._call(
                    "POST",
                    p.action_path(intent.key, "renew"),
                    p.renew_body(intent.token, lease_ms),
                    "settle",
                )
            except ProblemError:
                return
            intent._extend(int(p.renew_answer(doc)["lease_until_ms"]))  # pyright: ignore[reportPrivateUsage]

    async def _mark_uncertain(self, intent: Intent, why: str) -> None:
        try:
            await self._call(
                "POST", p.action_path(intent.key, "uncertain"), p.uncertain_body(intent.token, why), "settle"
            )
        except ProblemError:
            pass

    async def _payload(self, action: str, candidate: AsyncCandidate, reference: str | None) -> Mapping[str, Any]:
        if not callable(candidate):
            return candidate
        assert reference is not None
        doc = await self.get_intent(action, reference)
        if doc is not None:
            return p.frozen_candidate(doc)
        fresh = await _maybe_await(candidate())
        if not isinstance(fresh, Mapping):
            raise TypeError(f"the lazy candidate returned {type(fresh).__name__}, not a dict")
        # Recorded alone first (nothing claimed), so a reference= that is not
        # the one the catalog reads from the payload is said before any
        # effect runs, and not by a model call on every redelivery.
        p.check_reference(action, reference, await self.record(action, fresh))  # pyright: ignore[reportUnknownArgumentType]
        return fresh  # pyright: ignore[reportUnknownVariableType]

    async def get_intent(self, action: str, reference: str) -> w.IntentView | None:
        """The frozen intent, or ``None`` when none was recorded."""
        try:
            return p.intent_view(await self._call("GET", p.intent_path(action, reference), None, "read"))
        except ProblemError as e:
            if e.status == 404:
                return None
            raise

    async def record(self, action: str, payload: Mapping[str, Any]) -> w.IntentResponse:
        """``POST /v1/intents``: records a delivery (first write wins)."""
        return p.intent_answer(await self._call("POST", "/v1/intents", p.delivery_body(action, payload), "record"))

    async def get_action(self, key: str) -> w.ActionResponse:
        """``GET /v1/actions/{key}``."""
        return p.action_answer(await self._call("GET", p.action_path(key), None, "read"))

    async def _call(
        self,
        method: str,
        path: str,
        body: Any,
        kind: str,
        *,
        in_flight_ok: bool = False,
    ) -> dict[str, Any]:
        content = None if body is None else body if isinstance(body, bytes) else p.encode(body)
        headers = p.with_trace(self._headers if body is None else self._json_headers)
        tries = 0
        while True:
            try:
                r = await self._http.request(method, self._base + path, content=content, headers=headers)
            except httpx.TransportError as e:
                if tries >= self.max_retries:
                    raise p.unreachable(e) from e
                await asyncio.sleep(p.backoff(tries, None))
                tries += 1
                continue
            retry = tries < self.max_retries
            doc = p.read_answer(method, path, kind, r.status_code, r.content, r.headers, in_flight_ok, retry)
            if doc is not None:
                return doc
            await asyncio.sleep(p.backoff(tries, p.retry_after_of(r.headers)))
            tries += 1


async def _stop(task: asyncio.Future[None]) -> None:
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass


class AsyncEvents:
    """As ``Events``, with ``async with``."""

    def __init__(self, client: AsyncClient) -> None:
        self._client = client

    def claim(self, source: str, event_id: str, *, lease_ms: int = p.DEFAULT_LEASE_MS) -> _AsyncEventScope:
        return _AsyncEventScope(self._client, source, event_id, lease_ms)


class _AsyncEventScope:
    def __init__(self, client: AsyncClient, source: str, event_id: str, lease_ms: int) -> None:
        self._c = client
        self._ev = EventClaim(source, event_id, duplicate=False)
        self._lease_ms = lease_ms

    async def __aenter__(self) -> EventClaim:
        doc = await self._c._call(  # pyright: ignore[reportPrivateUsage]
            "POST", p.event_path(self._ev.source, self._ev.event_id), p.event_claim_body(self._lease_ms), "event"
        )
        p.event_claimed(self._ev, doc)
        return self._ev

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        ev = self._ev
        if ev.duplicate or ev.token is None or ev.settled:
            return
        path, body = p.event_settlement(ev, kind)
        await self._c._call("POST", path, body, "settle")  # pyright: ignore[reportPrivateUsage]
        ev.settled = True
