"""The protocol both clients speak, without I/O: request bodies, how an
answer is read, and when a call to idem may be retried.

Every call the client makes is safe to repeat: recording an intent is first
write wins, a claim names its attempt (``attempt_id``) so a retry after a
lost answer gets its own token back, and complete, fail, reconcile, renew
and uncertain are accepted twice with the same token. So a call is retried
on a broken connection and on 429/502/503/504 alike, with exponential
backoff and jitter, ``Retry-After`` honoured.
"""

from __future__ import annotations

import json
import os
import random
import secrets
import time
from decimal import Decimal
from typing import Any, Callable, Literal, Mapping, Union, cast
from urllib.parse import quote

from ._errors import FailedForGood, InFlight, ProblemError, ReferenceMismatch, Unavailable, Uncertain, problem_from
from . import wire as w
from ._models import EventClaim, Intent, Outcome

try:
    # `idem-client[otel]`: the caller's trace continues into idem's spans.
    from opentelemetry import context as _otel_context
    from opentelemetry import propagate as _propagate
except ImportError:  # pragma: no cover - the extra is not installed
    _propagate = None
    _otel_context = None

JSON = Any
OnInFlight = Literal["wait", "raise"]
Candidate = Union[Mapping[str, Any], Callable[[], Mapping[str, Any]]]

#: A claim's lease when the caller names none, and the longest the server
#: grants, in ms: the OpenAPI document's ``default`` and ``maximum`` for
#: every ``lease_ms`` (a test checks both against it).
DEFAULT_LEASE_MS = 30_000
MAX_LEASE_MS = 3_600_000
#: The longest wait one claim asks the server for (its bound is 20 s).
MAX_SERVER_WAIT_MS = 20_000
#: Statuses after which a call is repeated.
RETRY_STATUSES = frozenset({429, 502, 503, 504})
#: The longest pause between two tries, whatever ``Retry-After`` says.
MAX_BACKOFF_S = 30.0


def backoff(attempt: int, retry_after: float | None) -> float:
    """Seconds to wait before try number ``attempt + 1`` (0-based)."""
    if retry_after is not None and retry_after > 0:
        return min(retry_after, MAX_BACKOFF_S)
    base: float = min(0.25 * (2**attempt), 8.0)
    return base * (0.5 + random.random() / 2)


def retry_after_of(headers: Mapping[str, str]) -> float | None:
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def new_attempt_id() -> str:
    """A fresh name for one call's attempt. Random on purpose: it names the
    attempt, never the action (the key comes from the frozen intent)."""
    # From the OS, never the `random` module: an application (or a test
    # plugin) that seeds `random` the same in two workers would give both
    # the same attempt id, and the server answers a held claim to its
    # attempt, so both would run the effect.
    return "py-" + os.urandom(16).hex()


def check_candidate(candidate: object, reference: str | None) -> None:
    """Refuses what cannot be a candidate before anything runs."""
    if callable(candidate):
        if not reference:
            raise TypeError("a lazy candidate (a callable) needs reference=: the intent's reference, known before the model runs")
        return
    if not isinstance(candidate, Mapping):
        raise TypeError(
            f"the candidate must be a dict (the payload) or a zero-argument callable returning one, not {type(candidate).__name__}"
        )


def check_reference(action: str, reference: str | None, doc: w.IntentResponse) -> None:
    """A lazy candidate's fresh intent must be recorded under ``reference=``,
    or every redelivery would call the model again."""
    # Read as the untrusted JSON it is: the type says str, the wire may not.
    recorded = cast(object, doc.get("reference"))
    if reference is not None and isinstance(recorded, str) and recorded != reference:
        raise ReferenceMismatch(action, reference, recorded)


def intent_path(action: str, reference: str) -> str:
    return f"/v1/intents/{quote(action, safe='')}/{quote(reference, safe='')}"


def action_path(key: str, verb: str = "") -> str:
    return f"/v1/actions/{key}" + (f"/{verb}" if verb else "")


def event_path(source: str, event_id: str, verb: str = "") -> str:
    base = f"/v1/events/{quote(source, safe='')}/{quote(event_id, safe='')}"
    return base + (f"/{verb}" if verb else "")


# The bodies, one constructor each, typed by the document's schemas
# (idem_client.wire): a member misspelled here fails pyright.


def record_body(action: str, payload: Mapping[str, Any], lease_ms: int, attempt_id: str, wait_ms: int) -> w.RecordRequest:
    return w.RecordRequest(
        action=action,
        payload=dict(payload),
        claim=w.ClaimOptions(lease_ms=lease_ms, attempt_id=attempt_id, wait_ms=wait_ms),
    )


def delivery_body(action: str, payload: Mapping[str, Any]) -> w.RecordRequest:
    return w.RecordRequest(action=action, payload=dict(payload))


def begin_body(action: str, lease_ms: int, attempt_id: str, wait_ms: int) -> w.BeginRequest:
    return w.BeginRequest(action=action, lease_ms=lease_ms, attempt_id=attempt_id, wait_ms=wait_ms)


def held(token: int | None) -> int:
    """The fencing token of a claim this call holds: settling without one
    is a defect in this client, named rather than sent as null."""
    if token is None:
        raise TypeError("idem_client: settling a claim it does not hold")
    return token


def complete_body(token: int | None, response: JSON) -> w.CompleteRequest:
    return w.CompleteRequest(token=held(token), response=response)


def fail_body(token: int | None, error: str, retryable: bool) -> w.FailRequest:
    return w.FailRequest(token=held(token), error=error, retryable=retryable)


def uncertain_body(token: int | None, why: str) -> w.UncertainRequest:
    return w.UncertainRequest(token=held(token), error=why[:2000])


def reconcile_body(token: int | None, response: JSON) -> w.ReconcileRequest:
    return w.ReconcileRequest(token=held(token), outcome="completed", response=response)


def renew_body(token: int | None, lease_ms: int) -> w.RenewRequest:
    return w.RenewRequest(token=held(token), lease_ms=lease_ms)


def event_claim_body(lease_ms: int) -> w.ClaimRequest:
    return w.ClaimRequest(lease_ms=lease_ms)


def frozen_candidate(doc: w.IntentView) -> Mapping[str, Any]:
    """The candidate as first sent, from an intent document."""
    frozen = doc.get("frozen")
    if isinstance(frozen, Mapping):
        return frozen
    # Intents recorded before idem kept the candidate: only the normalized
    # fields exist, and a worker must know it is reading those.
    raise ProblemError(
        200,
        "about:blank",
        "No frozen candidate",
        "this intent was recorded before idem kept the candidate as sent; read intent.normalized instead",
    )


def intent_of(doc: w.IntentView, diverged: bool) -> Intent:
    try:
        return Intent(
            key=str(doc["key"]),
            action=str(doc["action"]),
            reference=str(doc["reference"]),
            payload=frozen_candidate(doc),
            normalized=dict(doc["payload"]),
            diverged=diverged,
        )
    except (KeyError, TypeError, ValueError) as e:
        raise unexpected(f"an intent document without {e}") from None


def intent_of_answer(doc: w.IntentResponse) -> Intent:
    """The intent ``POST /v1/intents`` answered with, and whether this
    delivery's candidate differed from it."""
    try:
        diverged = bool(doc["diverged"])
    except KeyError:
        raise unexpected("an intent answer without diverged") from None
    return intent_of(doc, diverged)


def unexpected(what: str, status: int = 200) -> ProblemError:
    """An answer the protocol does not allow: named, never guessed around."""
    return ProblemError(status, "about:blank", "Unexpected answer from idem", what)


def intent_answer(doc: dict[str, Any]) -> w.IntentResponse:
    """``POST /v1/intents``'s answer, read as its schema (its members are
    checked where they are used)."""
    return cast(w.IntentResponse, doc)


def intent_view(doc: dict[str, Any]) -> w.IntentView:
    return cast(w.IntentView, doc)


def action_answer(doc: dict[str, Any]) -> w.ActionResponse:
    return cast(w.ActionResponse, doc)


def renew_answer(doc: dict[str, Any]) -> w.RenewResponse:
    if not isinstance(doc.get("lease_until_ms"), int):
        raise unexpected("a renewal without its lease_until_ms")
    return cast(w.RenewResponse, doc)


def claim_answer(doc: dict[str, Any]) -> w.BeginResponse:
    if not isinstance(doc.get("status"), str):
        raise unexpected("a claim without its status")
    return cast(w.BeginResponse, doc)


def claim_of(doc: w.IntentResponse) -> w.BeginResponse:
    claim = doc.get("claim")
    status = cast(object, claim.get("status")) if isinstance(claim, dict) else None
    if claim is None or not isinstance(status, str):
        raise unexpected("POST /v1/intents with a claim answered without one")
    return claim


def encode_response(value: object) -> JSON:
    """Checks the effect's result is JSON before it is sent to be stored."""
    encode(value)
    return value


def encode(body: object) -> bytes:
    """A request body as JSON text. A ``Decimal`` goes as its exact digits,
    never through a float: ``Decimal("19.99")`` is sent as ``19.99``, so an
    amount read from a payload (which this client reads as ``Decimal``) goes
    back as it came. A Decimal that is not finite is refused, as JSON has no
    such number."""
    try:
        # Most bodies hold no Decimal: one pass, no marks.
        return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")
    except TypeError:
        pass
    token = secrets.token_hex(12)
    numbers: dict[str, str] = {}

    def swap(v: object) -> object:
        if isinstance(v, Decimal):
            if not v.is_finite():
                raise ValueError(f"{v} is not a number JSON can carry")
            mark = f"{token}-{len(numbers)}"
            numbers[mark] = str(v)
            return mark
        if isinstance(v, Mapping):
            return {k: swap(x) for k, x in v.items()}  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
        if isinstance(v, (list, tuple)):
            return [swap(x) for x in v]  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
        return v

    text = json.dumps(swap(body), ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    # Each mark is a random 96-bit token: no string the caller sent holds one.
    for mark, digits in numbers.items():
        text = text.replace(f'"{mark}"', digits, 1)
    return text.encode("utf-8")


def error_of(status: int, body: Any, headers: Mapping[str, str]) -> ProblemError:
    return problem_from(status, body, retry_after_of(headers) or 0.0)


def decode(text: str | bytes, status: int) -> Any:
    # Bytes as they came: idem answers UTF-8 JSON, which json.loads reads
    # itself; httpx's `.text` would first work out a charset per answer.
    if not text:
        return None
    try:
        # Numbers with a fraction read as Decimal: money never passes
        # through a float (19.99 as a float is 19.989999…, 1998 cents).
        return json.loads(text, parse_float=Decimal)
    except ValueError:
        raise unexpected(f"HTTP {status} with a body that is not JSON", status) from None


ALLOWED = {
    "record": {200, 201},
    "read": {200},
    "begin": {200, 201, 202},
    "settle": {200},
    "event": {200, 201},
}


def event_claimed(ev: EventClaim, answer: dict[str, Any]) -> None:
    doc = cast(w.EventResponse, answer)
    try:
        if doc["status"] == "first":
            ev.token = int(doc["token"])
            ev.attempt = int(doc["attempt"])
            prev = doc.get("previous")
            ev.previous = str(prev) if prev is not None else None
        elif doc["status"] == "duplicate" or doc["status"] == "failed":
            ev.duplicate = True
            ev.failed_before = doc["status"] == "failed"
        else:
            raise unexpected(f"an event claim with status {answer.get('status')!r}")
    except (KeyError, TypeError, ValueError) as e:
        raise unexpected(f"an event claim without {e}") from None


def hold(intent: Intent, claim: w.BeginResponse) -> None:
    if claim["status"] != "claimed" and claim["status"] != "uncertain":
        raise unexpected(f"holding a claim with status {claim['status']!r}")
    try:
        intent.token = int(claim["token"])
        intent.attempt = int(claim["attempt"])
        intent._extend(int(claim["lease_until_ms"]))  # pyright: ignore[reportPrivateUsage]
    except (KeyError, TypeError, ValueError):
        raise unexpected("a claim without its token, attempt or lease") from None


def in_flight(claim: w.BeginResponse) -> InFlight:
    ms = float(claim["retry_after_ms"]) if claim["status"] == "in_flight" else 0.0
    return InFlight(
        409,
        "urn:idem:problem:action-in-flight",
        "Another attempt holds this action",
        "another holder's lease is running: nothing ran here; call again later",
        dict(claim),
        retry_after=ms / 1000,
    )


def uncertain_error(intent: Intent, claim: w.BeginResponse) -> Uncertain:
    previous = claim["previous"] if claim["status"] == "uncertain" else None
    return Uncertain(
        202,
        "urn:idem:problem:uncertain",
        "A previous attempt's outcome is unknown",
        f"ask the provider about key {intent.key} and record what it says (reconcile=), never retry with a new reference",
        dict(claim),
        key=intent.key,
        previous=dict(previous) if isinstance(previous, dict) else None,
    )


def wait_ms(on_in_flight: OnInFlight, give_up: float) -> int:
    if on_in_flight == "raise":
        return 0
    left = give_up - time.monotonic()
    return max(0, min(MAX_SERVER_WAIT_MS, int(left * 1000)))


def check_options(lease_ms: int, on_in_flight: str, max_wait: float) -> None:
    if on_in_flight not in ("wait", "raise"):
        raise TypeError(f"on_in_flight must be 'wait' or 'raise', not {on_in_flight!r}")
    if not 1 <= lease_ms <= MAX_LEASE_MS:
        raise TypeError(f"lease_ms must be between 1 and {MAX_LEASE_MS}")
    if max_wait < 0:
        raise TypeError("max_wait must be zero or more seconds")


def unreachable(e: Exception) -> Unavailable:
    return Unavailable(0, "urn:idem:problem:unavailable", "idem could not be reached", str(e))


def read_answer(
    method: str,
    path: str,
    kind: str,
    status: int,
    text: str | bytes,
    headers: Mapping[str, str],
    in_flight_ok: bool,
    may_retry: bool,
) -> dict[str, Any] | None:
    """The answer's JSON object; ``None`` when the call should be repeated
    (``may_retry`` and a status worth repeating); otherwise the typed error
    is raised. An answer the protocol does not allow is named, never read as
    a success."""
    doc = decode(text, status)
    if status in ALLOWED[kind]:
        if not isinstance(doc, dict):
            raise unexpected(f"{method} {path} answered {status} without a JSON object", status)
        return doc  # pyright: ignore[reportUnknownVariableType]
    if in_flight_ok and status == 409 and isinstance(doc, dict) and doc.get("type") == "urn:idem:problem:action-in-flight":  # pyright: ignore[reportUnknownMemberType]
        until = int(doc.get("lease_until_ms", 0))  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
        return {"status": "in_flight", "lease_until_ms": until, "retry_after_ms": (retry_after_of(headers) or 0) * 1000}
    if status in RETRY_STATUSES and may_retry:
        return None
    if 200 <= status < 300:
        raise unexpected(f"{method} {path} answered {status}", status)
    raise error_of(status, doc, headers)


def event_settlement(
    ev: EventClaim, kind: type[BaseException] | None
) -> tuple[str, w.CompleteEventRequest | w.FailEventRequest]:
    """How a claimed event is settled when its block ends: completed after a
    clean exit, released for redelivery after an exception."""
    if kind is None:
        return event_path(ev.source, ev.event_id, "complete"), w.CompleteEventRequest(token=held(ev.token))
    return event_path(ev.source, ev.event_id, "fail"), w.FailEventRequest(token=held(ev.token), retryable=True)


def finished(intent: Intent, claim: w.BeginResponse) -> Outcome[Any] | None:
    """A claim that needs no effect: the stored outcome of a completed
    action (replayed), or ``FailedForGood``; ``None`` when this call holds
    the claim (``claimed`` or ``uncertain``). Any other status is named.
    Every member is read as the document names it, never with a default:
    one the server stopped sending is an unexpected answer, said as such."""
    try:
        if claim["status"] == "completed":
            return Outcome(
                response=claim["response"],
                replayed=True,
                key=intent.key,
                attempt=int(claim["attempt"]),
                reconciled=bool(claim["reconciled"]),
                intent=intent,
            )
        if claim["status"] == "failed":
            error = str(claim["error"])
            raise FailedForGood(200, "urn:idem:problem:failed", "The action failed for good", error, dict(claim), error=error)
    except KeyError as e:
        raise unexpected(f"a {claim['status']} claim without {e}") from None
    if claim["status"] != "claimed" and claim["status"] != "uncertain":
        raise unexpected(f"a claim with status {claim['status']!r}")
    return None


def with_trace(headers: dict[str, str]) -> dict[str, str]:
    """``headers`` and the caller's current trace context (W3C
    ``traceparent``, as the application's OpenTelemetry propagator writes
    it) when OpenTelemetry is installed and a span is current, so idem's
    spans join the caller's trace; ``headers`` itself otherwise. Never part
    of a key: idem reads it from the headers, never from the payload."""
    if _propagate is None or _otel_context is None:
        return headers
    if not _otel_context.get_current():
        # An empty context (no span, no baggage): nothing to send, and the
        # propagators are not asked (most calls of a worker without traces).
        return headers
    carrier: dict[str, str] = {}
    _propagate.inject(carrier)
    return {**headers, **carrier} if carrier else headers
