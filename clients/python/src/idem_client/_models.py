"""What the client hands the effect (``Intent``) and the caller (``Outcome``)."""

from __future__ import annotations

import datetime as _dt
import threading
from dataclasses import dataclass, field
from typing import Any, Generic, Mapping, TypeVar

T = TypeVar("T")


class Intent:
    """The frozen intent an effect acts on.

    ``payload`` is the candidate exactly as its FIRST delivery sent it, in the
    worker's own names and formats (``"180.00"`` stays ``"180.00"``): act on
    this, never on a re-extraction. ``normalized`` holds the fields the key is
    derived from, in their normalized forms (``valor`` in cents, as text): do
    not charge from it. ``key`` is the provider's idempotency key.
    ``deadline`` is when the claim's lease ends (renewed while the effect
    runs); ``attempt`` counts claims, 1 for the first.
    """

    __slots__ = ("key", "action", "reference", "payload", "normalized", "diverged", "attempt", "token", "_deadline_ms", "_lock")

    def __init__(
        self,
        *,
        key: str,
        action: str,
        reference: str,
        payload: Mapping[str, Any],
        normalized: Mapping[str, Any],
        diverged: bool,
        attempt: int = 0,
        token: int | None = None,
        deadline_ms: int | None = None,
    ) -> None:
        self.key = key
        self.action = action
        self.reference = reference
        self.payload: Mapping[str, Any] = payload
        self.normalized: Mapping[str, Any] = normalized
        self.diverged = diverged
        self.attempt = attempt
        self.token = token
        self._deadline_ms = deadline_ms
        self._lock = threading.Lock()

    @property
    def deadline(self) -> _dt.datetime | None:
        """When this call's claim ends unless renewed (UTC); ``None`` when
        this call holds no claim."""
        with self._lock:
            ms = self._deadline_ms
        if ms is None:
            return None
        return _dt.datetime.fromtimestamp(ms / 1000, tz=_dt.timezone.utc)

    @property
    def deadline_ms(self) -> int | None:
        """``deadline`` in ms since the epoch."""
        with self._lock:
            return self._deadline_ms

    def _extend(self, until_ms: int) -> None:
        with self._lock:
            self._deadline_ms = until_ms

    def __repr__(self) -> str:
        return (
            f"Intent(action={self.action!r}, reference={self.reference!r}, key={self.key[:12]}…, "
            f"attempt={self.attempt}, diverged={self.diverged})"
        )


@dataclass(frozen=True)
class Outcome(Generic[T]):
    """What a guarded call came to.

    ``response`` is the effect's result (or the stored one). ``replayed`` is
    true when this call ran nothing because the action completed earlier;
    ``reconciled`` when the outcome came from ``reconcile``. ``intent`` is
    the frozen intent (``intent.diverged``: this call's candidate differed
    from it and was not used).
    """

    response: T
    replayed: bool
    key: str
    attempt: int
    reconciled: bool
    intent: Intent = field(repr=False)


@dataclass
class EventClaim:
    """An event claim (``client.events.claim``): ``duplicate`` is true when
    the event was handled (or failed for good) before, so the consumer only
    acknowledges it. ``token`` is the claim's fencing token when held."""

    source: str
    event_id: str
    duplicate: bool
    token: int | None = None
    attempt: int = 0
    previous: str | None = None
    failed_before: bool = False
    settled: bool = False
