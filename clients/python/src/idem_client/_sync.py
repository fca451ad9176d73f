"""``Client``: the blocking client (threads, plain workers)."""

from __future__ import annotations

import functools
import threading
import time
from types import TracebackType
from typing import Any, Callable, Mapping, TypeVar, cast

import httpx

from . import _protocol as p
from . import wire as w
from ._errors import Failed, FailedForGood, InFlight, OutcomeTooLarge, ProblemError, Uncertain
from ._models import EventClaim, Intent, Outcome
from ._protocol import OnInFlight

T = TypeVar("T")


class Client:
    """A blocking client of one idem server, for one tenant (the token's).

    ``max_retries`` is how many times a call to idem is repeated after a
    broken connection or a 429/502/503/504 (every call the client makes is
    safe to repeat); ``timeout`` bounds each HTTP call, in seconds.
    ``http_client`` replaces the ``httpx.Client`` (a proxy, a transport for
    tests); the client then does not close it.
    """

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout: float = 30.0,
        max_retries: int = 2,
        http_client: httpx.Client | None = None,
    ) -> None:
        if not token:
            raise TypeError("token= is required: the tenant's API token (idem tenant create)")
        self._owned = http_client is None
        self._http = http_client or httpx.Client(timeout=timeout)
        self._base = base_url.rstrip("/")
        self._headers = {"authorization": f"Bearer {token}", "accept": "application/json"}
        self._json_headers = {**self._headers, "content-type": "application/json"}
        self.max_retries = max_retries
        self.events = Events(self)
        self._renewals = _Renewals(self)

    # -- lifecycle ---------------------------------------------------------

    def close(self) -> None:
        if self._owned:
            self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the decorator -----------------------------------------------------

    def once(
        self,
        action: str,
        *,
        lease_ms: int = p.DEFAULT_LEASE_MS,
        on_in_flight: OnInFlight = "wait",
        max_wait: float = 60.0,
        reconcile: Callable[[Intent], Any] | None = None,
    ) -> Callable[[Callable[[Intent], T]], Callable[..., Outcome[T]]]:
        """Guards ``effect(intent)`` so it runs once per intent.

        The decorated function takes the candidate payload (a dict, or a
        zero-argument callable with ``reference=``) and returns an
        ``Outcome``. See ``run`` for what happens in each state.
        """
        p.check_options(lease_ms, on_in_flight, max_wait)

        def decorate(effect: Callable[[Intent], T]) -> Callable[..., Outcome[T]]:
            @functools.wraps(effect)
            def guarded(candidate: p.Candidate, *, reference: str | None = None) -> Outcome[T]:
                return self.run(
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

    def run(
        self,
        action: str,
        effect: Callable[[Intent], T],
        candidate: p.Candidate,
        *,
        reference: str | None = None,
        lease_ms: int = p.DEFAULT_LEASE_MS,
        on_in_flight: OnInFlight = "wait",
        max_wait: float = 60.0,
        reconcile: Callable[[Intent], Any] | None = None,
    ) -> Outcome[T]:
        """Records the intent, claims it, and runs ``effect`` only when this
        call holds the claim (the explicit form of ``once``).

        - completed earlier: the stored response, ``replayed=True``;
        - in flight elsewhere: waits for its outcome (``on_in_flight="wait"``,
          at most ``max_wait`` seconds) or raises ``InFlight``;
        - uncertain: ``reconcile(intent)``'s value is recorded as the outcome,
          ``None`` from it runs the effect under the same key; without
          ``reconcile``, raises ``Uncertain`` and runs nothing;
        - the effect raises: the action is marked uncertain at once and the
          exception propagates (``Failed`` from the effect records a known
          failure instead).
        """
        p.check_options(lease_ms, on_in_flight, max_wait)
        p.check_candidate(candidate, reference)
        give_up = time.monotonic() + max_wait
        attempt_id = p.new_attempt_id()
        payload = self._payload(action, candidate, reference)
        doc = p.intent_answer(
            self._call(
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
                    self._call(
                        "POST",
                        p.action_path(intent.key, "begin"),
                        p.begin_body(action, lease_ms, attempt_id, wait_ms),
                        "begin",
                        in_flight_ok=True,
                    )
                )
            return self._settle(intent, claim, effect, lease_ms, reconcile)
        except (InFlight, Uncertain, FailedForGood) as e:
            # Said with the intent it is about (its reference and key).
            e.intent = intent
            raise

    # -- what a claim leads to ----------------------------------------------

    def _settle(
        self,
        intent: Intent,
        claim: w.BeginResponse,
        effect: Callable[[Intent], T],
        lease_ms: int,
        reconcile: Callable[[Intent], Any] | None,
    ) -> Outcome[T]:
        status = claim["status"]
        finished = p.finished(intent, claim)
        if finished is not None:
            return finished
        p.hold(intent, claim)
        if status == "uncertain":
            if reconcile is None:
                # Nobody here can tell what happened: hand the claim back at
                # once (still uncertain) so the work queue shows it now.
                self._mark_uncertain(intent, "uncertain: the client has no reconcile function")
                raise p.uncertain_error(intent, claim)
            try:
                found = reconcile(intent)
            except BaseException as e:
                self._mark_uncertain(intent, f"reconcile raised {type(e).__name__}: {e}")
                raise
            if found is not None:
                self._call(
                    "POST",
                    p.action_path(intent.key, "reconcile"),
                    p.reconcile_body(intent.token, p.encode_response(found)),
                    "settle",
                )
                return Outcome(found, False, intent.key, intent.attempt, True, intent)
        return self._execute(intent, effect, lease_ms)

    def _execute(self, intent: Intent, effect: Callable[[Intent], T], lease_ms: int) -> Outcome[T]:
        renewer = self._renewals.hold(intent, lease_ms)
        try:
            result = effect(intent)
        except Failed as f:
            renewer.stop()
            self._call(
                "POST",
                p.action_path(intent.key, "fail"),
                p.fail_body(intent.token, f.error, f.retryable),
                "settle",
            )
            raise
        except BaseException as e:
            renewer.stop()
            # A timeout may hide a charge: the outcome is unknown, never
            # "not done", and the next attempt must not guess.
            self._mark_uncertain(intent, f"the effect raised {type(e).__name__}: {e}")
            raise
        renewer.stop()
        try:
            # Encoded once, here: a result that is not JSON is said before
            # anything is sent.
            body = p.encode(p.complete_body(intent.token, result))
        except (TypeError, ValueError) as e:
            self._mark_uncertain(intent, "the effect's result is not JSON")
            raise TypeError(f"the effect's result must be JSON-serializable to be stored: {e}") from e
        try:
            self._call("POST", p.action_path(intent.key, "complete"), body, "settle")
        except OutcomeTooLarge as e:
            # The provider acted; its answer just cannot be kept. Uncertain,
            # so a person settles it; never read as bad input.
            if not e.marked_uncertain:
                self._mark_uncertain(intent, f"the effect's result was over the server's outcome limit ({e.limit} bytes)")
            raise
        return Outcome(result, False, intent.key, intent.attempt, False, intent)

    def _mark_uncertain(self, intent: Intent, why: str) -> None:
        try:
            self._call("POST", p.action_path(intent.key, "uncertain"), p.uncertain_body(intent.token, why), "settle")
        except ProblemError:
            # The lease still ends on its own and the action is uncertain
            # then; the original exception is what the caller must see.
            pass

    def _payload(self, action: str, candidate: p.Candidate, reference: str | None) -> Mapping[str, Any]:
        if not callable(candidate):
            return candidate
        assert reference is not None
        doc = self.get_intent(action, reference)
        if doc is not None:
            # Frozen already: the model is not called again.
            return p.frozen_candidate(doc)
        # Typed as a mapping, but a model's output is whatever it is.
        fresh = cast(object, candidate())
        if not isinstance(fresh, Mapping):
            raise TypeError(f"the lazy candidate returned {type(fresh).__name__}, not a dict")
        # Recorded alone first (nothing claimed), so a reference= that is not
        # the one the catalog reads from the payload is said before any
        # effect runs, and not by a model call on every redelivery.
        p.check_reference(action, reference, self.record(action, fresh))  # pyright: ignore[reportUnknownArgumentType]
        return cast(Mapping[str, Any], fresh)

    # -- the API, one call each ----------------------------------------------

    def get_intent(self, action: str, reference: str) -> w.IntentView | None:
        """The frozen intent, or ``None`` when none was recorded."""
        try:
            return p.intent_view(self._call("GET", p.intent_path(action, reference), None, "read"))
        except ProblemError as e:
            if e.status == 404:
                return None
            raise

    def record(self, action: str, payload: Mapping[str, Any]) -> w.IntentResponse:
        """``POST /v1/intents``: records a delivery (first write wins)."""
        return p.intent_answer(self._call("POST", "/v1/intents", p.delivery_body(action, payload), "record"))

    def get_action(self, key: str) -> w.ActionResponse:
        """``GET /v1/actions/{key}``."""
        return p.action_answer(self._call("GET", p.action_path(key), None, "read"))

    def _call(
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
                r = self._http.request(method, self._base + path, content=content, headers=headers)
            except httpx.TransportError as e:
                if tries >= self.max_retries:
                    raise p.unreachable(e) from e
                time.sleep(p.backoff(tries, None))
                tries += 1
                continue
            retry = tries < self.max_retries
            doc = p.read_answer(method, path, kind, r.status_code, r.content, r.headers, in_flight_ok, retry)
            if doc is not None:
                return doc
            time.sleep(p.backoff(tries, p.retry_after_of(r.headers)))
            tries += 1


class Events:
    """Queue and webhook deduplication (``client.events``)."""

    def __init__(self, client: Client) -> None:
        self._client = client

    def claim(self, source: str, event_id: str, *, lease_ms: int = p.DEFAULT_LEASE_MS) -> _EventScope:
        """A context manager: ``with client.events.claim("rabbitmq", msg_id) as ev``.

        ``ev.duplicate`` is true when the event was handled before (only
        acknowledge it). A clean exit completes the claim; an exception
        releases it, so a redelivery runs again. Another consumer holding it
        raises ``InFlight``.
        """
        return _EventScope(self._client, source, event_id, lease_ms)


class _EventScope:
    def __init__(self, client: Client, source: str, event_id: str, lease_ms: int) -> None:
        self._c = client
        self._ev = EventClaim(source, event_id, duplicate=False)
        self._lease_ms = lease_ms

    def __enter__(self) -> EventClaim:
        doc = self._c._call(  # pyright: ignore[reportPrivateUsage]
            "POST", p.event_path(self._ev.source, self._ev.event_id), p.event_claim_body(self._lease_ms), "event"
        )
        p.event_claimed(self._ev, doc)
        return self._ev

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        ev = self._ev
        if ev.duplicate or ev.token is None or ev.settled:
            return
        path, body = p.event_settlement(ev, kind)
        self._c._call("POST", path, body, "settle")  # pyright: ignore[reportPrivateUsage]
        ev.settled = True


class _Renewals:
    """Renews each running claim's lease every third of it while its effect
    runs, so an effect longer than the lease keeps its claim. A renewal
    refused means the claim was lost: ``complete`` will then raise
    ``StaleToken``.

    One thread per client serves every claim, started at the first and
    ended after a minute with none: a thread started per effect cost
    1-3.5 ms per guarded call (``Thread.start`` waits until the new thread
    runs), ten times the rest of the client's own work."""

    IDLE = 60.0

    def __init__(self, client: Client) -> None:
        self._client = client
        self._cond = threading.Condition()
        self._held: dict[int, _Claim] = {}
        self._renewing: int | None = None
        self._next = 0
        self._thread: threading.Thread | None = None
        # When the thread wakes next on its own (None: it waits for work).
        # A claim due no earlier needs no wake-up: each one would cost a
        # switch to the thread and back.
        self._wake_at: float | None = None

    def hold(self, intent: Intent, lease_ms: int) -> _Held:
        every = max(lease_ms / 3000, 0.05)
        with self._cond:
            n = self._next
            self._next += 1
            due = time.monotonic() + every
            self._held[n] = _Claim(due, every, intent, lease_ms)
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="idem-renew", daemon=True)
                self._thread.start()
            elif self._wake_at is None or due < self._wake_at:
                self._cond.notify()
        return _Held(self, n)

    def release(self, n: int) -> None:
        """Stops renewing claim ``n``; returns once no renewal of it runs."""
        with self._cond:
            self._held.pop(n, None)
            while self._renewing == n:
                self._cond.wait()

    def _loop(self) -> None:
        while True:
            with self._cond:
                while True:
                    if not self._held:
                        self._wake_at = None
                        if not self._cond.wait(self.IDLE) and not self._held:
                            self._thread = None
                            return
                        continue
                    n = min(self._held, key=lambda k: self._held[k].due)
                    claim = self._held[n]
                    delay = claim.due - time.monotonic()
                    if delay <= 0:
                        break
                    self._wake_at = claim.due
                    self._cond.wait(delay)
                # Busy: it looks at every claim again before it sleeps.
                self._wake_at = float("-inf")
                self._renewing = n
                claim.due = time.monotonic() + claim.every
                intent, lease_ms = claim.intent, claim.lease_ms
            keep = True
            try:
                doc = self._client._call(  # pyright: ignore[reportPrivateUsage]
                    "POST",
                    p.action_path(intent.key, "renew"),
                    p.renew_body(intent.token, lease_ms),
                    "settle",
                )
                intent._extend(int(p.renew_answer(doc)["lease_until_ms"]))  # pyright: ignore[reportPrivateUsage]
            except Exception:
                # Refused (the claim is lost) or unreachable: this claim is
                # not renewed again; its holder learns it at complete.
                keep = False
            with self._cond:
                self._renewing = None
                if not keep:
                    self._held.pop(n, None)
                # A release may be waiting for this renewal to end.
                self._cond.notify_all()


class _Claim:
    """A claim being renewed: when next, how often, and with what lease."""

    __slots__ = ("due", "every", "intent", "lease_ms")

    def __init__(self, due: float, every: float, intent: Intent, lease_ms: int) -> None:
        self.due = due
        self.every = every
        self.intent = intent
        self.lease_ms = lease_ms


class _Held:
    """One claim's place in its client's renewals."""

    def __init__(self, renewals: _Renewals, n: int) -> None:
        self._renewals = renewals
        self._n = n

    def stop(self) -> None:
        self._renewals.release(self._n)


