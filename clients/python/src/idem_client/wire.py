"""The JSON shapes idem sends and accepts, as ``TypedDict``s.

Each class is one schema of the committed OpenAPI document
(``clients/conformance/openapi.json``), named as it is there (a variant of a
``oneOf`` adds its ``status``): the same members, the same required ones. A
test (``tests/test_wire.py``) checks every class against the document, so a
member renamed on the server fails the tests here, and pyright --strict
checks this client reads and writes only the members declared.

The classes keep to Python 3.10's ``TypedDict``: required members in a base,
optional ones in a ``total=False`` subclass.
"""

from __future__ import annotations

from typing import Any, Dict, Literal, TypedDict, Union

#: Any JSON value (a stored response, a payload's member).
JSONValue = Any


class ClaimOptions(TypedDict, total=False):
    lease_ms: int | None
    attempt_id: str | None
    wait_ms: int | None


class _RecordRequest(TypedDict):
    action: str
    payload: Dict[str, JSONValue]


class RecordRequest(_RecordRequest, total=False):
    claim: ClaimOptions | None


class _BeginRequest(TypedDict):
    action: str


class BeginRequest(_BeginRequest, total=False):
    lease_ms: int | None
    attempt_id: str | None
    wait_ms: int | None


class CompleteRequest(TypedDict):
    token: int
    response: JSONValue


class FailRequest(TypedDict):
    token: int
    error: str
    retryable: bool


class UncertainRequest(TypedDict):
    token: int
    error: str


class _ReconcileRequest(TypedDict):
    token: int
    outcome: Literal["completed", "failed"]


class ReconcileRequest(_ReconcileRequest, total=False):
    response: JSONValue
    error: str | None
    retryable: bool | None


class _RenewRequest(TypedDict):
    token: int


class RenewRequest(_RenewRequest, total=False):
    lease_ms: int | None


class RenewResponse(TypedDict):
    token: int
    lease_until_ms: int


class _IntentView(TypedDict):
    key: str
    rules_version: int
    action: str
    reference: str
    payload: Dict[str, JSONValue]
    revision: int
    deliveries: int
    divergences: int
    first_seen_ms: int
    last_seen_ms: int


class IntentView(_IntentView, total=False):
    frozen: Dict[str, JSONValue] | None


class _PreviousAttemptDoc(TypedDict):
    token: int
    started_ms: int


class PreviousAttemptDoc(_PreviousAttemptDoc, total=False):
    lease_until_ms: int | None


class _BeginClaimed(TypedDict):
    token: int
    attempt: int
    lease_until_ms: int
    status: Literal["claimed"]


class BeginClaimed(_BeginClaimed, total=False):
    previous_error: str | None


class BeginCompleted(TypedDict):
    response: JSONValue
    attempt: int
    reconciled: bool
    status: Literal["completed"]


class BeginFailed(TypedDict):
    error: str
    status: Literal["failed"]


class BeginUncertain(TypedDict):
    token: int
    attempt: int
    lease_until_ms: int
    previous: PreviousAttemptDoc
    advice: str
    status: Literal["uncertain"]


class BeginInFlight(TypedDict):
    lease_until_ms: int
    retry_after_ms: int
    status: Literal["in_flight"]


#: A claim's answer: ``begin``'s, or the ``claim`` of ``POST /v1/intents``.
BeginResponse = Union[BeginClaimed, BeginCompleted, BeginFailed, BeginUncertain, BeginInFlight]


class _IntentResponse(_IntentView):
    diverged: bool
    first_delivery: bool
    candidate_key: str


class IntentResponse(_IntentResponse, total=False):
    frozen: Dict[str, JSONValue] | None
    claim: BeginResponse | None


class _SupersedeRequest(TypedDict):
    reason: str


class SupersedeRequest(_SupersedeRequest, total=False):
    candidate: Dict[str, JSONValue] | None


class _SupersedeResponse(_IntentView):
    superseded_key: str
    released: bool


class SupersedeResponse(_SupersedeResponse, total=False):
    frozen: Dict[str, JSONValue] | None


class ClaimRequest(TypedDict, total=False):
    lease_ms: int | None


class _EventFirst(TypedDict):
    token: int
    attempt: int
    lease_until_ms: int
    status: Literal["first"]


class EventFirst(_EventFirst, total=False):
    previous: str | None
    advice: str | None


class EventDuplicate(TypedDict):
    status: Literal["duplicate"]


class EventFailed(TypedDict):
    status: Literal["failed"]


#: ``POST /v1/events/{source}/{event_id}``'s answer.
EventResponse = Union[EventFirst, EventDuplicate, EventFailed]


class CompleteEventRequest(TypedDict):
    token: int


class FailEventRequest(TypedDict):
    token: int
    retryable: bool


#: An action's state (the document's ``ActionState`` enum).
ActionState = Literal["started", "completed", "failed", "uncertain"]


class _ActionResponse(TypedDict):
    key: str
    action: str
    state: ActionState
    token: int
    attempts: int
    started_ms: int
    updated_ms: int
    reconciled: bool


class ActionResponse(_ActionResponse, total=False):
    lease_until_ms: int | None
    response: JSONValue
    error: str | None
    retryable: bool | None


#: Each class and the schema it declares: ``Schema`` or ``Schema/status``
#: for a variant of a ``oneOf`` told apart by its ``status``.
SCHEMAS: Dict[str, type] = {
    "RecordRequest": RecordRequest,
    "ClaimOptions": ClaimOptions,
    "BeginRequest": BeginRequest,
    "CompleteRequest": CompleteRequest,
    "FailRequest": FailRequest,
    "UncertainRequest": UncertainRequest,
    "ReconcileRequest": ReconcileRequest,
    "RenewRequest": RenewRequest,
    "RenewResponse": RenewResponse,
    "IntentView": IntentView,
    "IntentResponse": IntentResponse,
    "SupersedeRequest": SupersedeRequest,
    "SupersedeResponse": SupersedeResponse,
    "PreviousAttemptDoc": PreviousAttemptDoc,
    "BeginResponse/claimed": BeginClaimed,
    "BeginResponse/completed": BeginCompleted,
    "BeginResponse/failed": BeginFailed,
    "BeginResponse/uncertain": BeginUncertain,
    "BeginResponse/in_flight": BeginInFlight,
    "ClaimRequest": ClaimRequest,
    "EventResponse/first": EventFirst,
    "EventResponse/duplicate": EventDuplicate,
    "EventResponse/failed": EventFailed,
    "CompleteEventRequest": CompleteEventRequest,
    "FailEventRequest": FailEventRequest,
    "ActionResponse": ActionResponse,
}
