"""Typed errors: one class per problem ``type`` URN idem answers with.

Every error idem's API sends is an RFC 9457 problem document; the client
raises the subclass its ``type`` names, so callers catch what they can act
on (``InFlight``: ask again later; ``Uncertain``: reconcile) and let the
rest propagate.
"""

from __future__ import annotations

from typing import Any, Mapping


class IdemError(Exception):
    """The root of every error this package raises on its own account."""


class ProblemError(IdemError):
    """idem answered with a problem document (or an answer the protocol does
    not allow, with ``type`` ``about:blank``).

    ``status`` is the HTTP status, ``type`` the problem's URN, ``title`` and
    ``detail`` its human text. ``intent`` is the frozen intent when the
    error came after it was recorded (``InFlight``, ``Uncertain`` and
    ``FailedForGood`` from ``run``), else ``None``.
    """

    intent: Any = None

    def __init__(
        self,
        status: int,
        type: str,
        title: str,
        detail: str = "",
        body: Mapping[str, Any] | None = None,
    ) -> None:
        self.status = status
        self.type = type
        self.title = title
        self.detail = detail
        self.body: Mapping[str, Any] = dict(body or {})
        super().__init__(f"{status} {title}: {detail}" if detail else f"{status} {title}")


class Unauthorized(ProblemError):
    """401: the token is missing, wrong, rotated or expired."""


class TenantDisabled(ProblemError):
    """The token's tenant is disabled (`idem tenant disable`)."""


class InFlight(ProblemError):
    """Another attempt holds the claim. ``retry_after`` is how many seconds
    until its lease ends; the effect did not run in this call."""

    def __init__(self, *args: Any, retry_after: float = 0.0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.retry_after = retry_after


class Uncertain(ProblemError):
    """A previous attempt started and its outcome is unknown (the worker died,
    or its effect raised). Nothing ran in this call. ``key`` is the action's
    key, ``previous`` the attempt whose outcome is unknown. Find out at the
    provider (by ``key``) and record it, or pass ``reconcile=`` to ``once``.
    Never retry with a new reference: that would be a new charge."""

    def __init__(
        self,
        *args: Any,
        key: str = "",
        previous: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.key = key
        self.previous: Mapping[str, Any] = dict(previous or {})


class FailedForGood(ProblemError):
    """The action failed for good before; it will not run again. ``error`` is
    the stored failure."""

    def __init__(self, *args: Any, error: str = "", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.error = error


class StaleToken(ProblemError):
    """409: this call's claim is no longer the current one (its lease ran
    out and another attempt took it over, or it was settled). Nothing was
    recorded; the current holder settles the action."""


class Unprocessable(ProblemError):
    """422: the request is well formed but cannot be honoured (an unknown
    action, a missing or invalid field, an option out of range)."""


class OutcomeTooLarge(ProblemError):
    """413: the provider ACTED, but its outcome (the effect's result, or a
    failure's error) is over the server's ``--max-outcome-bytes``, so it
    could not be kept. Never bad input: do not acknowledge the message as
    one. The action is uncertain now (the client marks it itself when the
    server could not read the token); settle it on ``/live`` or with
    ``reconcile``. ``size`` is the outcome's length in bytes (``None`` when
    the body was too large to read), ``limit`` the server's limit."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        size = self.body.get("size")
        limit = self.body.get("limit")
        self.size: int | None = size if isinstance(size, int) else None
        self.limit: int | None = limit if isinstance(limit, int) else None
        self.marked_uncertain = self.body.get("marked_uncertain") is True


class Unavailable(ProblemError):
    """503 (or a connection that failed) after the client's retries:
    ``retry_after`` is the server's advice in seconds."""

    def __init__(self, *args: Any, retry_after: float = 0.0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.retry_after = retry_after


class ReferenceMismatch(IdemError):
    """A lazy candidate's intent was recorded under another reference than
    the ``reference=`` it was called with. A redelivery looks the intent up
    by ``reference=``, would find nothing and call the model again, every
    time: the effect does not run and nothing is claimed. Pass the reference
    the action's catalog reads from the payload."""

    def __init__(self, action: str, expected: str, recorded: str) -> None:
        super().__init__(
            f"{action}: the lazy candidate was recorded under reference {recorded!r}, "
            f"not reference={expected!r}; a redelivery would look up {expected!r}, find nothing "
            f"and call the model again: pass the reference the catalog reads from the payload"
        )
        self.action = action
        self.expected = expected
        self.recorded = recorded


class Failed(IdemError):
    """Raised BY THE EFFECT when the provider answered that it did not act
    (card declined, validation refused): the outcome is known, so the action
    is recorded as failed instead of uncertain. ``retryable=True`` lets a
    later call run the effect again under the same key."""

    def __init__(self, error: str, retryable: bool = False) -> None:
        super().__init__(error)
        self.error = error
        self.retryable = retryable


#: Every problem type the server's OpenAPI document lists, as this client
#: answers it; a test checks it is exactly the document's list. A type a
#: newer server adds reads by status.
_BY_TYPE: dict[str, type[ProblemError]] = {
    "urn:idem:problem:unauthorized": Unauthorized,
    "urn:idem:problem:tenant-disabled": TenantDisabled,
    "urn:idem:problem:action-in-flight": InFlight,
    "urn:idem:problem:event-in-flight": InFlight,
    "urn:idem:problem:stale-token": StaleToken,
    "urn:idem:problem:unprocessable": Unprocessable,
    "urn:idem:problem:too-deep": Unprocessable,
    "urn:idem:problem:unstorable-text": Unprocessable,
    "urn:idem:problem:duplicate-member": Unprocessable,
    "urn:idem:problem:too-large": Unprocessable,
    "urn:idem:problem:reserved-member": Unprocessable,
    "urn:idem:problem:outcome-too-large": OutcomeTooLarge,
    "urn:idem:problem:unavailable": Unavailable,
    "urn:idem:problem:outcome-unknown": Unavailable,
    "urn:idem:problem:timeout": Unavailable,
    "urn:idem:problem:exports-busy": Unavailable,
    "urn:idem:problem:feeds-full": Unavailable,
    "urn:idem:problem:rate-limited": Unavailable,
    # Requests this client never sends as built: a defect to read, not to retry.
    "urn:idem:problem:bad-body": ProblemError,
    "urn:idem:problem:bad-request": ProblemError,
    "urn:idem:problem:body-too-large": ProblemError,
    "urn:idem:problem:conflict": ProblemError,
    "urn:idem:problem:cross-site": ProblemError,
    "urn:idem:problem:headers-too-large": ProblemError,
    "urn:idem:problem:internal": ProblemError,
    "urn:idem:problem:key-reused": ProblemError,
    "urn:idem:problem:length-required": ProblemError,
    "urn:idem:problem:method-not-allowed": ProblemError,
    "urn:idem:problem:misdirected": ProblemError,
    "urn:idem:problem:no-route": ProblemError,
    "urn:idem:problem:not-found": ProblemError,
    "urn:idem:problem:open-monitor-forwarded": ProblemError,
    "urn:idem:problem:other-tenant": ProblemError,
    "urn:idem:problem:request-in-progress": ProblemError,
    "urn:idem:problem:unsupported-media-type": ProblemError,
}


def problem_from(status: int, body: Any, retry_after: float) -> ProblemError:
    """The typed error for a problem answer; a body that is not a problem
    document is named as such, never guessed at."""
    if not isinstance(body, dict) or not isinstance(body.get("type"), str):  # pyright: ignore[reportUnknownMemberType]
        return ProblemError(status, "about:blank", "Unexpected answer", f"HTTP {status} without a problem document")
    doc: dict[str, Any] = body  # pyright: ignore[reportUnknownVariableType]
    kind = str(doc["type"])
    title = str(doc.get("title", ""))
    detail = str(doc.get("detail", ""))
    cls = _BY_TYPE.get(kind)
    if cls is None:
        if status == 401:
            cls = Unauthorized
        elif status == 422:
            cls = Unprocessable
        elif status == 503:
            cls = Unavailable
        else:
            cls = ProblemError
    if cls is InFlight:
        return InFlight(status, kind, title, detail, doc, retry_after=retry_after)
    if cls is Unavailable:
        return Unavailable(status, kind, title, detail, doc, retry_after=retry_after)
    return cls(status, kind, title, detail, doc)
