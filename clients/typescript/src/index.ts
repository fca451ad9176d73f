/**
 * idem-client: run an effect once per intent, on the candidate its first
 * delivery froze, with the key derived from it.
 *
 * Zero runtime dependencies: the platform's `fetch` and `AbortSignal`, so
 * Node 18+, Bun, Deno and edge runtimes all run it. The protocol is the one
 * the Python client speaks (`clients/python`), checked by the same
 * conformance scenarios (`clients/conformance/scenarios.json`).
 *
 * Every call the client makes to idem is safe to repeat (recording is first
 * write wins, a claim names its attempt, settling twice with the same token
 * is accepted), so a call is retried on a broken connection and on
 * 429/502/503/504, with exponential backoff and jitter, `Retry-After`
 * honoured.
 */

import {
  Failed,
  FailedForGood,
  InFlight,
  OutcomeTooLarge,
  ProblemError,
  ReferenceMismatch,
  Uncertain,
  Unavailable,
  problemFrom,
  unexpected,
} from "./errors.js";
import type { components } from "./wire.js";

/**
 * The JSON shapes idem sends and accepts, generated from the committed
 * OpenAPI document (`clients/conformance/openapi.json`) into `wire.ts`:
 * every body this client sends and every answer it reads is typed by them,
 * so a member renamed on the server fails `tsc` here.
 */
export type Wire = components["schemas"];
/** An intent as frozen (`GET /v1/intents/{action}/{reference}`). */
export type IntentView = Wire["IntentView"];
/** `POST /v1/intents`'s answer: the intent, this delivery's verdict and, when asked, the claim. */
export type IntentResponse = Wire["IntentResponse"];
/** An action as stored (`GET /v1/actions/{key}`). */
export type ActionResponse = Wire["ActionResponse"];
/** A claim's answer (`begin`, or the claim of `POST /v1/intents`). */
export type ClaimAnswer = Wire["BeginResponse"];

export {
  Failed,
  FailedForGood,
  IdemError,
  InFlight,
  OutcomeTooLarge,
  PROBLEM_TYPES,
  ProblemError,
  ReferenceMismatch,
  problemFrom,
  StaleToken,
  TenantDisabled,
  Unauthorized,
  Uncertain,
  Unavailable,
  Unprocessable,
} from "./errors.js";

/** A candidate payload: the action's fields, in the sender's names and formats. */
export type Payload = Record<string, unknown>;
/** A payload, or a function that produces one (a model's extraction): run
 *  only while nothing is frozen for the reference. */
export type Candidate = Payload | (() => Payload | Promise<Payload>);
/** What to do while another attempt holds the action. */
export type OnInFlight = "wait" | "raise";

/** The frozen intent an effect acts on. */
export interface Intent {
  /** The derived key: send it to the provider as its idempotency key. */
  readonly key: string;
  readonly action: string;
  readonly reference: string;
  /** The candidate as its first delivery sent it (FROZEN): act on this. */
  readonly payload: Readonly<Payload>;
  /** The normalized fields the key was derived from (`valor` in cents). */
  readonly normalized: Readonly<Record<string, string>>;
  /** This delivery's candidate differed from the frozen one (not stored). */
  readonly diverged: boolean;
  /** This claim's attempt number (1 for the first). */
  attempt: number;
  /** This claim's fencing token. */
  token: number | null;
  /** When the lease ends unless renewed (the client renews while the
   *  effect runs). */
  deadline: Date | null;
  /**
   * The exact decimal text of a frozen payload member, as idem sent it:
   * `"19.99"` for the number 19.99 or the string "19.99". A JSON number
   * read into a `Number` keeps about 16 digits, so money is read from this
   * text, never from `payload` (`9007199254740993.07` becomes
   * 9007199254740994 as a Number); `minorUnits(text, 2)` turns it into
   * exact cents. `field` is a top-level member's name or a JSON Pointer
   * (`/totals/0/amount`); `undefined` when there is no number or string
   * there.
   */
  decimal(field: string): string | undefined;
}

/** What a guarded call returns. */
export interface Outcome<T> {
  /** The effect's value, or the stored one when replayed. */
  readonly response: T;
  /** The effect did not run here: this is the stored outcome. */
  readonly replayed: boolean;
  readonly key: string;
  readonly attempt: number;
  /** The outcome was recorded by a reconciliation. */
  readonly reconciled: boolean;
  readonly intent: Intent;
}

/** What an effect receives besides the intent. */
export interface EffectContext {
  /** Aborted before the claim's lease could be lost (a renewal refused, or
   *  the deadline near without one): stop, the outcome will be uncertain. */
  readonly signal: AbortSignal;
}

export type Effect<T> = (intent: Intent, ctx: EffectContext) => T | Promise<T>;
/** Finds out at the provider what an uncertain attempt did: a value is
 *  recorded as the outcome; `undefined` means it never acted (the effect
 *  then runs under the same key). */
export type Reconcile = (intent: Intent) => unknown;

export interface OnceOptions {
  /** The claim's lease (default 30 000, at most 3 600 000); renewed while the effect runs. */
  leaseMs?: number;
  /** `"wait"` (default): wait for the holder's outcome; `"raise"`: throw `InFlight`. */
  onInFlight?: OnInFlight;
  /** The longest wait for another holder (default 60 000). */
  maxWaitMs?: number;
  /** Settles an uncertain action; without it `Uncertain` is thrown. */
  reconcile?: Reconcile;
}

export interface CallOptions {
  /** The intent's reference: required with a lazy candidate. */
  reference?: string;
}

export interface IdemOptions {
  /** The idem server, e.g. `http://127.0.0.1:3000`. */
  baseUrl: string;
  /** The tenant's API token (`idem tenant create`). */
  token: string;
  /** A `fetch` of your own (default: the platform's). */
  fetch?: typeof fetch;
  /** Retries of each call to idem (default 2). */
  maxRetries?: number;
  /** Each call's time-out (default 30 000 ms): a call to idem with no
   *  answer by then is aborted (within a tenth more) and tried again, then
   *  raised as `Unavailable`. */
  timeoutMs?: number;
}

/** The longest wait one claim asks the server for (its bound is 20 s). */
const MAX_SERVER_WAIT_MS = 20_000;
const RETRY_STATUSES = new Set([429, 502, 503, 504]);
const MAX_BACKOFF_MS = 30_000;
/** A claim's lease when the caller names none, and the longest the server
 *  grants, in ms: the OpenAPI document's `default` and `maximum` for every
 *  `lease_ms` (a test checks both against it). */
export const DEFAULT_LEASE_MS = 30_000;
export const MAX_LEASE_MS = 3_600_000;
const ALLOWED: Record<Kind, ReadonlySet<number>> = {
  record: new Set([200, 201]),
  read: new Set([200]),
  begin: new Set([200, 201, 202]),
  settle: new Set([200]),
  event: new Set([200, 201]),
};
type Kind = "record" | "read" | "begin" | "settle" | "event";
type Doc = Record<string, unknown>;

function isRecord(v: unknown): v is Doc {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Milliseconds before try `attempt + 1` (0-based). */
export function backoffMs(attempt: number, retryAfterMs: number | null): number {
  if (retryAfterMs !== null && retryAfterMs > 0) return Math.min(retryAfterMs, MAX_BACKOFF_MS);
  const base = Math.min(250 * 2 ** attempt, 8_000);
  return base * (0.5 + Math.random() / 2);
}

function retryAfterMs(headers: Headers): number | null {
  const v = headers.get("retry-after");
  if (v === null) return null;
  const n = Number(v);
  return Number.isFinite(n) && n >= 0 ? n * 1000 : null;
}

/** A fresh name for one call's attempt. Random on purpose: it names the
 *  attempt, never the action (the key comes from the frozen intent). */
function newAttemptId(): string {
  // Web Crypto where the runtime has it (Node 19+, Bun, Deno, edge); Node
  // 18 keeps it behind a flag. An attempt id needs to be unique, not secret.
  const c = (globalThis as { crypto?: { randomUUID?: () => string; getRandomValues?: (a: Uint8Array) => Uint8Array } }).crypto;
  let hex: string;
  if (c?.randomUUID) {
    // One native call: formatting random bytes by hand cost more than the
    // rest of the client's bookkeeping per effect.
    hex = c.randomUUID().replace(/-/g, "");
  } else {
    const bytes = new Uint8Array(16);
    if (c?.getRandomValues) c.getRandomValues(bytes);
    else for (let i = 0; i < bytes.length; i++) bytes[i] = Math.floor(Math.random() * 256);
    hex = Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  }
  return "ts-" + Date.now().toString(36) + "-" + hex;
}

function checkOptions(o: Required<Omit<OnceOptions, "reconcile">>): void {
  if (o.onInFlight !== "wait" && o.onInFlight !== "raise") {
    throw new TypeError(`onInFlight must be "wait" or "raise", not ${JSON.stringify(o.onInFlight)}`);
  }
  if (!Number.isInteger(o.leaseMs) || o.leaseMs < 1 || o.leaseMs > MAX_LEASE_MS) {
    throw new TypeError(`leaseMs must be a whole number between 1 and ${MAX_LEASE_MS}`);
  }
  if (!(o.maxWaitMs >= 0)) throw new TypeError("maxWaitMs must be zero or more");
}

function checkCandidate(candidate: unknown, reference: string | undefined): void {
  if (typeof candidate === "function") {
    if (!reference) {
      throw new TypeError("a lazy candidate (a function) needs { reference }: the intent's reference, known before the model runs");
    }
    return;
  }
  if (!isRecord(candidate)) {
    throw new TypeError("the candidate must be an object (the payload) or a function returning one");
  }
}

const enc = encodeURIComponent;

/** Where `call` keeps an answer's JSON text, for the exact digits of its
 *  numbers (`Intent.decimal`). */
const SOURCE = Symbol("idem.source");

/** A member name as one JSON Pointer token (RFC 6901: `~` and `/` escaped). */
function pointerToken(key: string): string {
  return key.replace(/~/g, "~0").replace(/\//g, "~1");
}

/** The source text of every number in a JSON text, by JSON Pointer. The
 *  text has already been parsed by `JSON.parse`, so it is well formed. */
function numberTexts(text: string): Map<string, string> {
  const out = new Map<string, string>();
  let i = 0;
  const space = () => {
    while (i < text.length && " \t\n\r".includes(text[i] as string)) i++;
  };
  const string = (): string => {
    const start = i++;
    while (text[i] !== '"') i += text[i] === "\\" ? 2 : 1;
    i++;
    return JSON.parse(text.slice(start, i)) as string;
  };
  const value = (path: string): void => {
    space();
    const c = text[i];
    if (c === "{" || c === "[") {
      const close = c === "{" ? "}" : "]";
      i++;
      space();
      if (text[i] === close) {
        i++;
        return;
      }
      for (let n = 0; ; n++) {
        space();
        let at = `${path}/${n}`;
        if (c === "{") {
          at = `${path}/${pointerToken(string())}`;
          space();
          i++; // the colon
        }
        value(at);
        space();
        if (text[i++] === close) return;
      }
    }
    if (c === '"') {
      string();
      return;
    }
    const start = i;
    while (i < text.length && /[-+0-9.eE]/.test(text[i] as string)) i++;
    if (i > start) out.set(path, text.slice(start, i));
    else while (i < text.length && /[a-z]/.test(text[i] as string)) i++;
  };
  value("");
  return out;
}

/**
 * Exact minor units (cents for `digits` 2) of a decimal text such as
 * `Intent.decimal` gives: `minorUnits("19.99", 2)` is `1999n`, as a
 * `bigint` so no amount is too large to hold. A text with more decimal
 * places than `digits`, an exponent or anything but a plain decimal
 * throws `RangeError`: it names no whole number of minor units.
 */
export function minorUnits(text: string, digits: number): bigint {
  const m = /^(-?)(\d+)(?:\.(\d+))?$/.exec(text.trim());
  if (!m || !Number.isInteger(digits) || digits < 0) {
    throw new RangeError(`${JSON.stringify(text)} is not a plain decimal number`);
  }
  const frac = m[3] ?? "";
  if (frac.replace(/0+$/, "").length > digits) {
    throw new RangeError(`${JSON.stringify(text)} has more than ${digits} decimal places`);
  }
  return BigInt(`${m[1]}${m[2]}${frac.slice(0, digits).padEnd(digits, "0")}`);
}

function intentOf(doc: IntentView & { diverged?: boolean }): Intent {
  const frozen = doc.frozen;
  if (!isRecord(frozen)) {
    throw new ProblemError(
      200,
      "about:blank",
      "No frozen candidate",
      "this intent was recorded before idem kept the candidate as sent; read intent.normalized instead",
    );
  }
  if (typeof doc.key !== "string" || typeof doc.action !== "string" || typeof doc.reference !== "string" || !isRecord(doc.payload)) {
    throw unexpected("an intent document without its key, action, reference or payload");
  }
  let texts: Map<string, string> | undefined;
  return {
    key: doc.key,
    action: doc.action,
    reference: doc.reference,
    payload: frozen,
    normalized: doc.payload as Record<string, string>,
    diverged: doc.diverged === true,
    attempt: 0,
    token: null,
    deadline: null,
    decimal(field: string): string | undefined {
      const pointer = field.startsWith("/") ? field : `/${pointerToken(field)}`;
      const source = (doc as { [SOURCE]?: string })[SOURCE];
      const exact = source === undefined ? undefined : (texts ??= numberTexts(source)).get(`/frozen${pointer}`);
      if (exact !== undefined) return exact;
      let at: unknown = frozen;
      for (const part of pointer.split("/").slice(1)) {
        const key = part.replace(/~1/g, "/").replace(/~0/g, "~");
        at = isRecord(at) || Array.isArray(at) ? (at as Record<string, unknown>)[key] : undefined;
      }
      return typeof at === "string" ? at : typeof at === "number" ? String(at) : undefined;
    },
  };
}

/** The fencing token of a claim this call holds: settling without one is
 *  a defect in this client, named rather than sent as `null`. */
function heldToken(token: number | null): number {
  if (token === null) throw new TypeError("idem-client: settling a claim it does not hold");
  return token;
}

function hold(intent: Intent, claim: { token: number; attempt: number; lease_until_ms: number }): void {
  const token = claim.token, attempt = claim.attempt, until = claim.lease_until_ms;
  if (typeof token !== "number" || typeof attempt !== "number" || typeof until !== "number") {
    throw unexpected("a claim without its token, attempt or lease");
  }
  intent.token = token;
  intent.attempt = attempt;
  intent.deadline = new Date(until);
}

function inFlightError(claim: Extract<ClaimAnswer, { status: "in_flight" }>): InFlight {
  const e = new InFlight(
    409,
    "urn:idem:problem:action-in-flight",
    "Another attempt holds this action",
    "another holder's lease is running: nothing ran here; call again later",
    claim,
  );
  e.retryAfterMs = Number(claim.retry_after_ms);
  return e;
}

function uncertainError(intent: Intent, claim: Extract<ClaimAnswer, { status: "uncertain" }>): Uncertain {
  const e = new Uncertain(
    202,
    "urn:idem:problem:uncertain",
    "A previous attempt's outcome is unknown",
    `ask the provider about key ${intent.key} and record what it says (reconcile), never retry with a new reference`,
    claim,
  );
  e.key = intent.key;
  e.previous = isRecord(claim.previous) ? (claim.previous as Doc) : {};
  return e;
}

/** What the client uses of `@opentelemetry/api` (an optional peer
 *  dependency): the active context and the registered propagator. */
interface OtelApi {
  context: { active(): unknown };
  propagation: { inject(context: unknown, carrier: Record<string, string>): void };
}

/** The package's name in a variable, so a bundler leaves the optional
 *  import to run time (an edge bundle without it gets no trace context,
 *  never a build error). */
const OTEL_API = "@opentelemetry/api";
let otelApi: Promise<OtelApi | null> | undefined;
/** The loaded module once its import has settled (`null`: not installed),
 *  so every call after the first reads it without waiting. */
let otelLoaded: OtelApi | null | undefined;

/** `@opentelemetry/api` when the application has it, loaded once. */
function loadOtel(): Promise<OtelApi | null> {
  otelApi ??= import(OTEL_API).then(
    (m: unknown) => {
      const api = ((m as { default?: unknown }).default ?? m) as Partial<OtelApi>;
      otelLoaded = typeof api.propagation?.inject === "function" && typeof api.context?.active === "function" ? (api as OtelApi) : null;
      return otelLoaded;
    },
    () => (otelLoaded = null),
  );
  return otelApi;
}

/** `headers` and the caller's current trace context (W3C `traceparent`,
 *  as the application's registered propagator writes it) when
 *  `@opentelemetry/api` is installed and a span is active, so idem's spans
 *  join the caller's trace. Never part of a key: idem reads it from the
 *  headers, never from the payload. */
function withTrace(headers: Record<string, string>): Record<string, string> | Promise<Record<string, string>> {
  if (otelLoaded === undefined) return loadOtel().then(() => withTrace(headers));
  if (otelLoaded === null) return headers;
  const carrier: Record<string, string> = {};
  otelLoaded.propagation.inject(otelLoaded.context.active(), carrier);
  return Object.keys(carrier).length ? { ...headers, ...carrier } : headers;
}

/** A request body already encoded: sent as it is. */
class Encoded {
  constructor(readonly text: string) {}
}

/**
 * Each call's timeout, kept by one timer per client while calls are out
 * rather than a timer per call: on Node 20 an `AbortSignal.timeout` costs
 * about 18 µs and lives on for the whole timeout after its call ended,
 * which was the largest part of the client's own time per effect. The
 * timer ticks every tenth of the timeout (10 ms to 1 s), so a call is
 * aborted between 1 and 1.1 timeouts after it started; it stops after a
 * tick with no call out and never keeps the process alive.
 */
class Deadlines {
  private readonly out = new Set<{ readonly controller: AbortController; readonly at: number }>();
  private timer: ReturnType<typeof setInterval> | undefined;
  private readonly tickMs: number;

  constructor(private readonly timeoutMs: number) {
    this.tickMs = Math.min(1000, Math.max(10, Math.floor(timeoutMs / 10)));
  }

  /** A signal aborted once the call outlives the timeout; `done` when the
   *  call has its answer (body included). */
  start(): { signal: AbortSignal; done: () => void } {
    const entry = { controller: new AbortController(), at: Date.now() + this.timeoutMs };
    this.out.add(entry);
    if (this.timer === undefined) {
      const timer = setInterval(() => this.tick(), this.tickMs);
      (timer as { unref?: () => void }).unref?.();
      this.timer = timer;
    }
    return { signal: entry.controller.signal, done: () => void this.out.delete(entry) };
  }

  private tick(): void {
    if (this.out.size === 0) {
      clearInterval(this.timer);
      this.timer = undefined;
      return;
    }
    const now = Date.now();
    for (const entry of this.out) {
      if (entry.at <= now) {
        this.out.delete(entry);
        entry.controller.abort(new DOMException(`idem did not answer within ${this.timeoutMs} ms`, "TimeoutError"));
      }
    }
  }
}

/** The client. */
export class Idem {
  readonly events: Events;
  readonly maxRetries: number;
  private readonly base: string;
  private readonly headers: Record<string, string>;
  private readonly fetchFn: typeof fetch;
  private readonly timeoutMs: number;
  private readonly deadlines: Deadlines;

  constructor(options: IdemOptions) {
    if (!options || typeof options.baseUrl !== "string" || !options.baseUrl) {
      throw new TypeError("baseUrl is required: the idem server, e.g. http://127.0.0.1:3000");
    }
    if (typeof options.token !== "string" || !options.token) {
      throw new TypeError("token is required: the tenant's API token (idem tenant create)");
    }
    this.base = options.baseUrl.replace(/\/+$/, "");
    this.headers = {
      authorization: `Bearer ${options.token}`,
      accept: "application/json",
      "content-type": "application/json",
    };
    this.fetchFn = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.maxRetries = options.maxRetries ?? 2;
    this.timeoutMs = options.timeoutMs ?? 30_000;
    if (!(Number.isFinite(this.timeoutMs) && this.timeoutMs > 0)) {
      throw new TypeError(`timeoutMs must be a positive number of milliseconds, not ${String(options.timeoutMs)}`);
    }
    this.deadlines = new Deadlines(this.timeoutMs);
    this.events = new Events(this);
  }

  /**
   * Guards `effect`: the returned function records the candidate, claims
   * the frozen intent's action and runs the effect at most once per intent,
   * on the frozen payload, with the derived key.
   */
  once<T>(action: string, effect: Effect<T>, options: OnceOptions = {}): (candidate: Candidate, call?: CallOptions) => Promise<Outcome<T>> {
    const o = onceDefaults(options);
    checkOptions(o);
    return (candidate, call = {}) => this.run(action, effect, candidate, { ...options, ...call });
  }

  /** The explicit form of `once`: one guarded call. */
  async run<T>(action: string, effect: Effect<T>, candidate: Candidate, options: OnceOptions & CallOptions = {}): Promise<Outcome<T>> {
    const o = onceDefaults(options);
    checkOptions(o);
    checkCandidate(candidate, options.reference);
    const giveUp = Date.now() + o.maxWaitMs;
    const waitMs = (): number => (o.onInFlight === "raise" ? 0 : Math.max(0, Math.min(MAX_SERVER_WAIT_MS, giveUp - Date.now())));
    const attemptId = newAttemptId();
    const payload = await this.payloadOf(action, candidate, options.reference);
    const doc = await this.call<IntentResponse>("POST", "/v1/intents", {
      action,
      payload,
      claim: { lease_ms: o.leaseMs, attempt_id: attemptId, wait_ms: waitMs() },
    } satisfies Wire["RecordRequest"], "record");
    const intent = intentOf(doc);
    const first = doc.claim;
    if (!isRecord(first) || typeof first.status !== "string") throw unexpected("POST /v1/intents with a claim answered without one");
    let claim: ClaimAnswer = first;
    try {
      while (claim.status === "in_flight") {
        const w = waitMs();
        if (w === 0) throw inFlightError(claim);
        claim = await this.call<ClaimAnswer>("POST", `/v1/actions/${intent.key}/begin`, {
          action,
          lease_ms: o.leaseMs,
          attempt_id: attemptId,
          wait_ms: w,
        } satisfies Wire["BeginRequest"], "begin", true);
      }
      return await this.settle(intent, claim, effect, o.leaseMs, options.reconcile);
    } catch (e) {
      // Said with the intent it is about (its reference and key).
      if (e instanceof InFlight || e instanceof Uncertain || e instanceof FailedForGood) e.intent = intent;
      throw e;
    }
  }

  private async settle<T>(intent: Intent, claim: ClaimAnswer, effect: Effect<T>, leaseMs: number, reconcile: Reconcile | undefined): Promise<Outcome<T>> {
    const status = claim.status;
    if (status === "completed") {
      return {
        response: claim.response as T,
        replayed: true,
        key: intent.key,
        attempt: Number(claim.attempt),
        reconciled: claim.reconciled === true,
        intent,
      };
    }
    if (status === "failed") {
      const error = String(claim.error);
      const e = new FailedForGood(200, "urn:idem:problem:failed", "The action failed for good", error, claim);
      e.error = error;
      throw e;
    }
    if (claim.status !== "claimed" && claim.status !== "uncertain") throw unexpected(`a claim with status ${JSON.stringify(status)}`);
    hold(intent, claim);
    if (claim.status === "uncertain") {
      if (reconcile === undefined) {
        await this.markUncertain(intent, "uncertain: the client has no reconcile function");
        throw uncertainError(intent, claim);
      }
      let found: unknown;
      try {
        found = await reconcile(intent);
      } catch (e) {
        await this.markUncertain(intent, `reconcile threw: ${String(e)}`);
        throw e;
      }
      if (found !== undefined) {
        const members = { token: heldToken(intent.token), outcome: "completed" } satisfies Omit<Wire["ReconcileRequest"], "response">;
        await this.call("POST", `/v1/actions/${intent.key}/reconcile`, withResponse(members, jsonText(found)), "settle");
        return { response: found as T, replayed: false, key: intent.key, attempt: intent.attempt, reconciled: true, intent };
      }
    }
    return this.execute(intent, effect, leaseMs);
  }

  private async execute<T>(intent: Intent, effect: Effect<T>, leaseMs: number): Promise<Outcome<T>> {
    const lease = new Lease(this, intent, leaseMs);
    let result: T;
    try {
      // The signal is made only for an effect that reads it.
      result = await effect(intent, {
        get signal() {
          return lease.signal;
        },
      });
    } catch (e) {
      lease.stop();
      if (e instanceof Failed) {
        await this.call("POST", `/v1/actions/${intent.key}/fail`, {
          token: heldToken(intent.token),
          error: e.error,
          retryable: e.retryable,
        } satisfies Wire["FailRequest"], "settle");
      } else {
        // Thrown or aborted: whether the provider acted is unknown.
        await this.markUncertain(intent, `the effect threw: ${String(e)}`);
      }
      throw e;
    }
    lease.stop();
    let response: string;
    try {
      response = jsonText(result);
    } catch (e) {
      await this.markUncertain(intent, "the effect's result is not JSON");
      throw new TypeError(`the effect's result must be JSON to be stored: ${String(e)}`);
    }
    const members = { token: heldToken(intent.token) } satisfies Omit<Wire["CompleteRequest"], "response">;
    try {
      await this.call("POST", `/v1/actions/${intent.key}/complete`, withResponse(members, response), "settle");
    } catch (e) {
      // The provider acted; its answer just cannot be kept. Uncertain, so a
      // person settles it; never read as bad input.
      if (e instanceof OutcomeTooLarge && !e.markedUncertain) {
        await this.markUncertain(intent, `the effect's result was over the server's outcome limit (${String(e.limit)} bytes)`);
      }
      throw e;
    }
    return { response: result, replayed: false, key: intent.key, attempt: intent.attempt, reconciled: false, intent };
  }

  /** @internal */
  async markUncertain(intent: Intent, why: string): Promise<void> {
    try {
      await this.call("POST", `/v1/actions/${intent.key}/uncertain`, { token: heldToken(intent.token), error: why.slice(0, 2000) } satisfies Wire["UncertainRequest"], "settle");
    } catch (e) {
      if (!(e instanceof ProblemError)) throw e;
    }
  }

  private async payloadOf(action: string, candidate: Candidate, reference: string | undefined): Promise<Payload> {
    if (typeof candidate !== "function") return candidate;
    const doc = await this.getIntent(action, reference as string);
    if (doc !== null) return intentOf(doc).payload as Payload;
    const fresh = await candidate();
    if (!isRecord(fresh)) throw new TypeError("the lazy candidate returned something other than an object");
    // Recorded alone first (nothing claimed), so a `reference` that is not
    // the one the catalog reads from the payload is said before any effect
    // runs, and not by a model call on every redelivery.
    const recorded = (await this.record(action, fresh)).reference;
    if (typeof recorded === "string" && recorded !== reference) {
      throw new ReferenceMismatch(action, reference as string, recorded);
    }
    return fresh;
  }

  /** `GET /v1/intents/{action}/{reference}`: the frozen intent, or `null`. */
  async getIntent(action: string, reference: string): Promise<IntentView | null> {
    try {
      return await this.call<IntentView>("GET", `/v1/intents/${enc(action)}/${enc(reference)}`, undefined, "read");
    } catch (e) {
      if (e instanceof ProblemError && e.status === 404) return null;
      throw e;
    }
  }

  /** `POST /v1/intents`: records a delivery (first write wins). */
  record(action: string, payload: Payload): Promise<IntentResponse> {
    return this.call<IntentResponse>("POST", "/v1/intents", { action, payload } satisfies Wire["RecordRequest"], "record");
  }

  /** `GET /v1/actions/{key}`. */
  getAction(key: string): Promise<ActionResponse> {
    return this.call<ActionResponse>("GET", `/v1/actions/${enc(key)}`, undefined, "read");
  }

  /** @internal One call to idem, retried while that is safe; its JSON
   *  object, read as the generated type the caller names (its members are
   *  still checked where they are used: an answer is never trusted). */
  async call<A extends object = Doc>(method: string, path: string, body: unknown, kind: Kind, inFlightOk = false): Promise<A> {
    const traced = withTrace(this.headers);
    const headers = traced instanceof Promise ? await traced : traced;
    const sent = body === undefined ? undefined : body instanceof Encoded ? body.text : JSON.stringify(body);
    for (let tries = 0; ; tries++) {
      const mayRetry = tries < this.maxRetries;
      let res: Response;
      let text: string;
      const deadline = this.deadlines.start();
      try {
        res = await this.fetchFn(this.base + path, { method, headers, body: sent, signal: deadline.signal });
        text = await res.text();
      } catch (e) {
        if (!mayRetry) {
          throw new Unavailable(0, "urn:idem:problem:unavailable", "idem could not be reached", String(e));
        }
        await sleep(backoffMs(tries, null));
        continue;
      } finally {
        deadline.done();
      }
      let doc: unknown = null;
      if (text) {
        try {
          doc = JSON.parse(text);
        } catch {
          throw unexpected(`HTTP ${res.status} with a body that is not JSON`, res.status);
        }
      }
      if (ALLOWED[kind].has(res.status)) {
        if (!isRecord(doc)) throw unexpected(`${method} ${path} answered ${res.status} without a JSON object`, res.status);
        // The text stays with the document, unenumerable, for the exact
        // digits of its numbers.
        Object.defineProperty(doc, SOURCE, { value: text });
        return doc as A;
      }
      if (inFlightOk && res.status === 409 && isRecord(doc) && doc.type === "urn:idem:problem:action-in-flight") {
        const inFlight = {
          status: "in_flight",
          lease_until_ms: Number(doc.lease_until_ms ?? 0),
          retry_after_ms: retryAfterMs(res.headers) ?? 0,
        } satisfies ClaimAnswer;
        return inFlight as A;
      }
      if (RETRY_STATUSES.has(res.status) && mayRetry) {
        await sleep(backoffMs(tries, retryAfterMs(res.headers)));
        continue;
      }
      if (res.status >= 200 && res.status < 300) throw unexpected(`${method} ${path} answered ${res.status}`, res.status);
      throw problemFrom(res.status, doc, retryAfterMs(res.headers) ?? 0);
    }
  }
}

function onceDefaults(o: OnceOptions): Required<Omit<OnceOptions, "reconcile">> {
  return { leaseMs: o.leaseMs ?? DEFAULT_LEASE_MS, onInFlight: o.onInFlight ?? "wait", maxWaitMs: o.maxWaitMs ?? 60_000 };
}

/** A settling body: `members` and the effect's result as `response`, its
 *  text spliced in as it was checked, so a result is encoded once. */
function withResponse(members: Record<string, unknown>, response: string): Encoded {
  const head = JSON.stringify(members);
  return new Encoded(`${head.slice(0, -1)},"response":${response}}`);
}

/** `value` as JSON text; throws where `JSON.stringify` would give nothing
 *  (a function, `undefined`, a symbol). */
function jsonText(value: unknown): string {
  const text = JSON.stringify(value) as string | undefined;
  if (text === undefined) throw new TypeError("not JSON");
  return text;
}

/**
 * Renews a claim's lease while its effect runs (every third of the lease),
 * and aborts the effect's signal before the lease could be lost: when a
 * renewal is refused, or when the deadline is a tenth of the lease away
 * without one.
 */
class Lease {
  private controller: AbortController | undefined;
  /** Why the lease was given up before an effect asked for its signal. */
  private reason: Error | undefined;
  private renewTimer: ReturnType<typeof setInterval> | undefined;
  private abortTimer: ReturnType<typeof setTimeout> | undefined;
  private stopped = false;

  constructor(
    private readonly idem: Idem,
    private readonly intent: Intent,
    private readonly leaseMs: number,
  ) {
    this.armAbort();
    this.renewTimer = setInterval(() => void this.renew(), Math.max(leaseMs / 3, 50));
  }

  get signal(): AbortSignal {
    if (this.controller === undefined) {
      this.controller = new AbortController();
      if (this.reason !== undefined) this.controller.abort(this.reason);
    }
    return this.controller.signal;
  }

  private armAbort(): void {
    if (this.abortTimer !== undefined) clearTimeout(this.abortTimer);
    const deadline = this.intent.deadline?.getTime() ?? Date.now() + this.leaseMs;
    const at = deadline - Math.max(this.leaseMs / 10, 20) - Date.now();
    this.abortTimer = setTimeout(() => this.abort("the lease is about to run out without a renewal"), Math.max(at, 0));
  }

  private abort(why: string): void {
    if (this.reason !== undefined) return;
    this.reason = new Error(why);
    this.controller?.abort(this.reason);
  }

  private async renew(): Promise<void> {
    if (this.stopped) return;
    try {
      const doc = await this.idem.call<Wire["RenewResponse"]>("POST", `/v1/actions/${this.intent.key}/renew`, {
        token: heldToken(this.intent.token),
        lease_ms: this.leaseMs,
      } satisfies Wire["RenewRequest"], "settle");
      if (this.stopped) return;
      if (typeof doc.lease_until_ms === "number") {
        this.intent.deadline = new Date(doc.lease_until_ms);
        this.armAbort();
      }
    } catch (e) {
      if (e instanceof ProblemError && !(e instanceof Unavailable)) {
        // Refused: the lease is lost or about to be.
        this.stop();
        this.abort(`the lease could not be renewed: ${e.message}`);
      }
    }
  }

  stop(): void {
    this.stopped = true;
    if (this.renewTimer !== undefined) clearInterval(this.renewTimer);
    if (this.abortTimer !== undefined) clearTimeout(this.abortTimer);
  }
}

const asyncDispose: typeof Symbol.asyncDispose =
  (Symbol as { asyncDispose?: typeof Symbol.asyncDispose }).asyncDispose ?? (Symbol.for("Symbol.asyncDispose") as typeof Symbol.asyncDispose);

/** A claimed message or webhook (`POST /v1/events/{source}/{id}`). */
export class EventClaim {
  /** Handled before (or failed for good): acknowledge it and do nothing. */
  duplicate = false;
  /** It failed for good before. */
  failedBefore = false;
  token: number | null = null;
  attempt = 0;
  /** `"expired"` when a previous consumer's lease ran out (it may have
   *  acted), `"released"` when it gave the event back. */
  previous: string | null = null;
  private settled = false;

  constructor(
    private readonly idem: Idem,
    readonly source: string,
    readonly eventId: string,
  ) {}

  private path(verb: string): string {
    return `/v1/events/${enc(this.source)}/${enc(this.eventId)}/${verb}`;
  }

  /** The work is done: later deliveries are duplicates. */
  async complete(): Promise<void> {
    if (this.duplicate || this.settled) return;
    await this.idem.call("POST", this.path("complete"), { token: heldToken(this.token) } satisfies Wire["CompleteEventRequest"], "settle");
    this.settled = true;
  }

  /** Gives the event back for redelivery (or, `retryable: false`, fails it for good). */
  async release(options: { retryable?: boolean } = {}): Promise<void> {
    if (this.duplicate || this.settled) return;
    await this.idem.call("POST", this.path("fail"), { token: heldToken(this.token), retryable: options.retryable ?? true } satisfies Wire["FailEventRequest"], "settle");
    this.settled = true;
  }

  /** `await using`: a claim not completed by the end of its block is
   *  released for redelivery (the block may have thrown). */
  async [asyncDispose](): Promise<void> {
    await this.release();
  }
}

/** Event claims: deduplicate messages and webhooks with a lease. */
export class Events {
  constructor(private readonly idem: Idem) {}

  /** Claims the event; `duplicate` says it was handled before. Complete it
   *  when the work is done (`await using` releases it otherwise). */
  async claim(source: string, eventId: string, options: { leaseMs?: number } = {}): Promise<EventClaim> {
    const ev = new EventClaim(this.idem, source, eventId);
    const doc = await this.idem.call<Wire["EventResponse"]>("POST", `/v1/events/${enc(source)}/${enc(eventId)}`, { lease_ms: options.leaseMs ?? DEFAULT_LEASE_MS } satisfies Wire["ClaimRequest"], "event");
    if (doc.status === "first") {
      if (typeof doc.token !== "number") throw unexpected("an event claim without its token");
      ev.token = doc.token;
      ev.attempt = Number(doc.attempt);
      ev.previous = typeof doc.previous === "string" ? doc.previous : null;
    } else if (doc.status === "duplicate" || doc.status === "failed") {
      ev.duplicate = true;
      ev.failedBefore = doc.status === "failed";
    } else {
      throw unexpected(`an event claim with status ${JSON.stringify((doc as { status?: unknown }).status)}`);
    }
    return ev;
  }

  /** Runs `work` once per event: completes the claim when it returns,
   *  releases it for redelivery when it throws; skips a duplicate. */
  async run<T>(source: string, eventId: string, work: (ev: EventClaim) => T | Promise<T>, options: { leaseMs?: number } = {}): Promise<{ duplicate: boolean; value?: T }> {
    const ev = await this.claim(source, eventId, options);
    if (ev.duplicate) return { duplicate: true };
    let value: T;
    try {
      value = await work(ev);
    } catch (e) {
      await ev.release();
      throw e;
    }
    await ev.complete();
    return { duplicate: false, value };
  }
}
