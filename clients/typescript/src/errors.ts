/**
 * Typed errors: one class per problem `type` URN idem answers with.
 *
 * Every error idem's API sends is an RFC 9457 problem document; the client
 * throws the subclass its `type` names, so callers catch what they can act
 * on (`InFlight`: ask again later; `Uncertain`: reconcile) and let the rest
 * propagate.
 */

import type { components } from "./wire.js";

/** The root of every error this package throws on its own account. */
export class IdemError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/**
 * idem answered with a problem document, or with an answer the protocol
 * does not allow (`type` `about:blank`): `status` is the HTTP status,
 * `type` the problem's URN, `title` and `detail` its human text.
 */
export class ProblemError extends IdemError {
  readonly status: number;
  readonly type: string;
  readonly title: string;
  readonly detail: string;
  readonly body: Readonly<Record<string, unknown>>;
  /** The frozen intent, when the error came after it was recorded
   *  (`InFlight`, `Uncertain` and `FailedForGood` from `run`). */
  intent?: unknown;

  constructor(status: number, type: string, title: string, detail = "", body: Record<string, unknown> = {}) {
    super(detail ? `${status} ${title}: ${detail}` : `${status} ${title}`);
    this.status = status;
    this.type = type;
    this.title = title;
    this.detail = detail;
    this.body = body;
  }
}

/** 401: the token is missing, wrong, rotated or expired. */
export class Unauthorized extends ProblemError {}

/** The token's tenant is disabled (`idem tenant disable`). */
export class TenantDisabled extends ProblemError {}

/** Another attempt holds the claim; the effect did not run in this call.
 *  `retryAfterMs`: until its lease ends. */
export class InFlight extends ProblemError {
  retryAfterMs = 0;
}

/**
 * A previous attempt started and its outcome is unknown (the worker died,
 * or its effect threw). Nothing ran in this call. `key` is the action's key,
 * `previous` the attempt whose outcome is unknown. Find out at the provider
 * (by `key`) and record it, or pass `reconcile` to `once`. Never retry with
 * a new reference: that would be a new charge.
 */
export class Uncertain extends ProblemError {
  key = "";
  previous: Readonly<Record<string, unknown>> = {};
}

/** The action failed for good before; it will not run again. */
export class FailedForGood extends ProblemError {
  error = "";
}

/** 409: this call's claim is no longer the current one (its lease ran out
 *  and another attempt took over, or it was settled). Nothing was recorded. */
export class StaleToken extends ProblemError {}

/** 422: well formed, but it cannot be honoured (an unknown action, a
 *  missing or invalid field, a text over its limit, an option out of range). */
export class Unprocessable extends ProblemError {}

/**
 * 413: the provider ACTED, but its outcome (the effect's result, or a
 * failure's error) is over the server's `--max-outcome-bytes`, so it could
 * not be kept. Never bad input: do not acknowledge the message as one. The
 * action is uncertain now (the client marks it itself when the server could
 * not read the token); settle it on `/live` or with `reconcile`. `size` is
 * the outcome's length in bytes (`null` when the body was too large to
 * read), `limit` the server's limit.
 */
export class OutcomeTooLarge extends ProblemError {
  get size(): number | null {
    return typeof this.body.size === "number" ? this.body.size : null;
  }
  get limit(): number | null {
    return typeof this.body.limit === "number" ? this.body.limit : null;
  }
  get markedUncertain(): boolean {
    return this.body.marked_uncertain === true;
  }
}

/** 503, or a connection that failed, after the client's retries. */
export class Unavailable extends ProblemError {
  retryAfterMs = 0;
}

/**
 * Thrown BY THE EFFECT when the provider answered that it did not act (card
 * declined, validation refused): the outcome is known, so the action is
 * recorded as failed instead of uncertain. `retryable: true` lets a later
 * call run the effect again under the same key.
 */
export class Failed extends IdemError {
  readonly error: string;
  readonly retryable: boolean;

  constructor(error: string, options: { retryable?: boolean } = {}) {
    super(error);
    this.error = error;
    this.retryable = options.retryable ?? false;
  }
}

/**
 * Not from the server: a lazy candidate's intent was recorded under another
 * reference than the `reference` it was called with. A redelivery looks the
 * intent up by `reference`, would find nothing and call the model again,
 * every time: the effect does not run and nothing is claimed. Pass the
 * reference the action's catalog reads from the payload.
 */
export class ReferenceMismatch extends IdemError {
  readonly action: string;
  readonly expected: string;
  readonly recorded: string;

  constructor(action: string, expected: string, recorded: string) {
    super(
      `${action}: the lazy candidate was recorded under reference ${JSON.stringify(recorded)}, not ` +
        `reference ${JSON.stringify(expected)}; a redelivery would look up ${JSON.stringify(expected)}, find nothing ` +
        `and call the model again: pass the reference the catalog reads from the payload`,
    );
    this.action = action;
    this.expected = expected;
    this.recorded = recorded;
  }
}

type ProblemClass = new (status: number, type: string, title: string, detail?: string, body?: Record<string, unknown>) => ProblemError;

/** Every problem type the server's OpenAPI document lists (generated). */
export type ProblemType = components["schemas"]["ProblemDoc"]["type"];

// Keyed by the generated union: a type the document adds, or one it drops,
// fails tsc here until this table says how the client answers it.
const BY_TYPE: Record<ProblemType, ProblemClass> = {
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
  // Requests this client never sends as built: a defect to read, not to retry.
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
};

/** Every problem type the server sends, as this client maps it: exactly the
 *  OpenAPI document's list (tsc checks it through `ProblemType`). A type a
 *  newer server adds reads by status: `Unauthorized`, `Unprocessable`,
 *  `Unavailable`, else `ProblemError`. */
export const PROBLEM_TYPES: readonly ProblemType[] = Object.freeze(Object.keys(BY_TYPE) as ProblemType[]);

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** The typed error for a problem answer (`status`, its parsed body and its
 *  `Retry-After` in ms), as the client raises it; a body that is not a
 *  problem document is named as such, never guessed at. */
export function problemFrom(status: number, body: unknown, retryAfterMs: number): ProblemError {
  if (!isRecord(body) || typeof body.type !== "string") {
    return new ProblemError(status, "about:blank", "Unexpected answer", `HTTP ${status} without a problem document`);
  }
  const type = body.type;
  const title = String(body.title ?? "");
  const detail = String(body.detail ?? "");
  let cls = (BY_TYPE as Record<string, ProblemClass | undefined>)[type];
  if (cls === undefined) {
    cls = status === 401 ? Unauthorized : status === 422 ? Unprocessable : status === 503 ? Unavailable : ProblemError;
  }
  const e = new cls(status, type, title, detail, body);
  if (e instanceof InFlight || e instanceof Unavailable) e.retryAfterMs = retryAfterMs;
  return e;
}

/** An answer the protocol does not allow: named, never guessed around. */
export function unexpected(what: string, status = 200): ProblemError {
  return new ProblemError(status, "about:blank", "Unexpected answer from idem", what);
}
