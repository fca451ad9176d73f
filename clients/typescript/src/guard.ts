/**
 * Guarded tool calls for agent frameworks, in-process: the same guard
 * declarations the MCP gateway reads from its guard file (`[[guard]]`
 * tables: tool, action, fields as tool arguments or JSON Pointers,
 * key_argument, lease_ms, on_uncertain, errors), given as the same
 * structure in code, and the same steps and answers as the gateway's
 * guarded call: the first call freezes the fields the key covers and the
 * arguments as it sent them, the tool runs only in the call that holds the
 * claim, always with the frozen arguments, and every answer carries the
 * gateway's `_meta.idem` and the sentences a model reads. The framework
 * modules (`idem-client/langchain`, `idem-client/ai-sdk`) turn these into
 * their own message types. Zero runtime dependencies.
 */

import { Failed, FailedForGood, InFlight, OutcomeTooLarge, ProblemError, Uncertain, Unprocessable } from "./errors.js";
import type { Idem, Intent, Outcome } from "./index.js";

/** A guard as written in a guard file's `[[guard]]` table. */
export interface GuardDeclaration {
  tool: string;
  action: string;
  /** catalog field = the argument that carries it: a name, a JSON Pointer
   *  (`/payload/amount`), or `"$turn"` (the conversation's turn). */
  fields: Record<string, string>;
  key_argument?: string;
  lease_ms?: number;
  on_uncertain?: "refuse" | "resend" | "lookup";
  errors?: "retryable" | "final";
  /** The gateway's keys, refused in-process (no MCP `_meta`, no upstream). */
  supersede_failed?: boolean;
  freeze_meta?: string[];
  lookup?: unknown;
}

/** The field source that reads the conversation's turn. */
export const TURN = "$turn";

const GUARD_KEYS = ["tool", "action", "fields", "key_argument", "lease_ms", "on_uncertain", "errors", "supersede_failed", "freeze_meta", "lookup"];
const MAX_LEASE_MS = 3_600_000;
const MAX_GUARDS = 64;
/** The member of the recorded candidate that keeps the tool's arguments
 *  as the first call sent them (never part of the key). */
export const ARGUMENTS_MEMBER = "_tool_arguments";
const MAX_ARGUMENTS_BYTES = 64 * 1024;
const MAX_DEPTH = 64;

/** A guard declaration that cannot be used: `where` names its position. */
export class GuardFileError extends Error {
  readonly where: string;
  readonly detail: string;
  constructor(where: string, detail: string) {
    super(`${where}: ${detail}`);
    this.name = "GuardFileError";
    this.where = where;
    this.detail = detail;
  }
}

/** An argument's place: a top-level name or an RFC 6901 JSON Pointer. */
export class Pointer {
  readonly parts: string[];
  constructor(readonly text: string) {
    this.parts = text.startsWith("/") ? text.slice(1).split("/").map((p) => p.replaceAll("~1", "/").replaceAll("~0", "~")) : [text];
  }
  toString(): string {
    return this.text;
  }
  get(doc: unknown): { ok: boolean; value?: unknown } {
    let cur: unknown = doc;
    for (const part of this.parts) {
      if (isRecord(cur) && Object.hasOwn(cur, part)) cur = cur[part];
      else if (Array.isArray(cur) && /^\d+$/.test(part) && Number(part) < cur.length) cur = cur[Number(part)];
      else return { ok: false };
    }
    return { ok: true, value: cur };
  }
  set(doc: Record<string, unknown>, value: unknown): void {
    let cur: unknown = doc;
    this.parts.forEach((part, i) => {
      const last = i === this.parts.length - 1;
      if (isRecord(cur)) {
        if (last) cur[part] = value;
        else {
          if (!Object.hasOwn(cur, part)) cur[part] = {};
          cur = cur[part];
        }
      } else if (Array.isArray(cur) && /^\d+$/.test(part) && Number(part) < cur.length) {
        if (last) cur[Number(part)] = value;
        else cur = cur[Number(part)];
      } else {
        throw new RangeError(`\`${this.text}\` has no place in these arguments (${this.parts.slice(0, i).join("/") || "the arguments"} is ${typeof cur})`);
      }
    });
  }
  overlaps(other: Pointer): boolean {
    const n = Math.min(this.parts.length, other.parts.length);
    return this.parts.slice(0, n).every((p, i) => p === other.parts[i]);
  }
}

/** A loaded guard. */
export interface Guard {
  readonly tool: string;
  readonly action: string;
  readonly fields: ReadonlyArray<{ readonly name: string; readonly source: string }>;
  readonly keyArgument: string | undefined;
  readonly leaseMs: number;
  readonly onUncertain: "refuse" | "resend" | "lookup";
  readonly errors: "retryable" | "final";
  /** Asks the provider about an unknown outcome (`on_uncertain = "lookup"`):
   *  the tool's result when it was executed, `undefined` when it was not
   *  (the tool runs again, same key); throws when it cannot tell. */
  readonly lookup: ((intent: Intent) => unknown) | undefined;
  /** Where it was declared, for errors: `guards[0]`. */
  readonly where: string;
}

export interface LoadOptions {
  /** `{ tool: fn(intent) }` for guards with `on_uncertain = "lookup"`. */
  lookups?: Record<string, (intent: Intent) => unknown>;
  /** A name for errors (the file the structure was read from). */
  where?: string;
}

function suggest(word: string, options: string[]): string {
  // The closest option by edit distance, when it is close.
  let best = "";
  let bestD = Infinity;
  for (const o of options) {
    const d = distance(word, o);
    if (d < bestD) [best, bestD] = [o, d];
  }
  return best && bestD <= Math.max(2, Math.floor(word.length / 4)) ? ` (did you mean \`${best}\`?)` : "";
}

function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0] as number;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const cur = row[j] as number;
      row[j] = Math.min((row[j] as number) + 1, (row[j - 1] as number) + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = cur;
    }
  }
  return row[b.length] as number;
}

function checkPointer(where: string, src: string, what: string): void {
  if (src.startsWith("/")) {
    if (/~[^01]|~$/.test(src)) throw new GuardFileError(where, `${what}: \`${src}\` is not a JSON Pointer (\`~\` is written \`~0\`, \`/\` inside a name \`~1\`)`);
  } else if (src.includes("/")) {
    throw new GuardFileError(where, `${what}: \`${src}\` holds a \`/\`: a nested argument is a JSON Pointer starting with \`/\`, e.g. \`/${src}\``);
  }
}

/**
 * Reads guard declarations: a list of `[[guard]]` tables, or a parsed guard
 * file (`{ guard: [...] }`, its `[upstream]`, `tenants` and `pass_through`
 * read past). A mistake throws `GuardFileError` naming the guard and the
 * fix.
 */
export function loadGuards(source: GuardDeclaration[] | { guard: GuardDeclaration[] } | Map<string, Guard>, options: LoadOptions = {}): Map<string, Guard> {
  if (source instanceof Map) return source;
  const base = options.where ?? "guards";
  let tables: unknown;
  if (Array.isArray(source)) tables = source;
  else if (isRecord(source)) {
    for (const key of Object.keys(source)) {
      if (!["guard", "upstream", "tenants", "pass_through"].includes(key)) {
        throw new GuardFileError(base, `unknown key \`${key}\`${suggest(key, ["guard", "upstream", "tenants", "pass_through"])}`);
      }
    }
    tables = source.guard;
  }
  if (!Array.isArray(tables) || tables.length === 0) throw new GuardFileError(base, "no [[guard]] table: nothing would be guarded");
  if (tables.length > MAX_GUARDS) throw new GuardFileError(base, `${tables.length} guards; at most ${MAX_GUARDS}`);
  const lookups = options.lookups ?? {};
  const out = new Map<string, Guard>();
  tables.forEach((t: unknown, i: number) => {
    const g = guardOf(`${base}[${i}]`, t, lookups);
    if (out.has(g.tool)) throw new GuardFileError(g.where, `tool \`${g.tool}\` is guarded twice`);
    out.set(g.tool, g);
  });
  for (const tool of Object.keys(lookups)) {
    if (!out.has(tool)) throw new GuardFileError(base, `lookups names tool \`${tool}\`, which no guard guards`);
  }
  return out;
}

function guardOf(where: string, t: unknown, lookups: Record<string, (intent: Intent) => unknown>): Guard {
  if (!isRecord(t)) throw new GuardFileError(where, "a guard is a table (an object)");
  for (const key of Object.keys(t)) {
    if (!GUARD_KEYS.includes(key)) throw new GuardFileError(where, `unknown key \`${key}\` in a [[guard]]${suggest(key, GUARD_KEYS)}`);
  }
  const tool = t.tool;
  if (typeof tool !== "string" || !tool) throw new GuardFileError(where, "`tool` names the tool to guard: a non-empty string");
  const action = t.action;
  if (typeof action !== "string" || !/^[A-Za-z0-9._-]{1,64}$/.test(action)) {
    throw new GuardFileError(where, '`action` names the catalog action whose fields make the key (letters, digits, `.`, `_`, `-`), e.g. "pix.cobranca"');
  }
  if (!isRecord(t.fields) || Object.keys(t.fields).length === 0) {
    throw new GuardFileError(where, '[guard.fields] maps each of the action\'s fields to the argument that carries it, e.g. valor = "amount"');
  }
  const fields: { name: string; source: string }[] = [];
  for (const [name, src] of Object.entries(t.fields)) {
    if (typeof src !== "string" || !src) throw new GuardFileError(where, `field \`${name}\`: the argument is a non-empty string (a name, or a JSON Pointer starting with /)`);
    if (src.startsWith("meta:")) {
      throw new GuardFileError(where, `field \`${name}\` reads \`${src}\`, a request's MCP _meta: a tool run in-process has none. Guard this tool with the MCP gateway (\`idem mcp gateway\`), or map the field to an argument`);
    }
    if (src.startsWith("$") && src !== TURN) throw new GuardFileError(where, `field \`${name}\` reads \`${src}\`; the only source that is not an argument is "${TURN}"`);
    checkPointer(where, src, `field \`${name}\``);
    fields.push({ name, source: src });
  }
  const keyArgument = t.key_argument;
  if (keyArgument !== undefined) {
    if (typeof keyArgument !== "string" || !keyArgument || keyArgument === TURN) {
      throw new GuardFileError(where, "`key_argument` names the argument the key is written into (a name or a JSON Pointer)");
    }
    checkPointer(where, keyArgument, "key_argument");
    for (const f of fields) {
      if (f.source !== TURN && new Pointer(keyArgument).overlaps(new Pointer(f.source))) {
        throw new GuardFileError(where, `key_argument \`${keyArgument}\` overlaps field \`${f.name}\`'s argument \`${f.source}\`: the key would overwrite what it is derived from`);
      }
    }
  }
  const leaseMs = t.lease_ms ?? 30_000;
  if (typeof leaseMs !== "number" || !Number.isInteger(leaseMs) || leaseMs < 1 || leaseMs > MAX_LEASE_MS) {
    throw new GuardFileError(where, `\`lease_ms\` is a whole number of milliseconds from 1 to ${MAX_LEASE_MS}, not ${JSON.stringify(leaseMs)}`);
  }
  const onUncertain = t.on_uncertain ?? "refuse";
  if (onUncertain !== "refuse" && onUncertain !== "resend" && onUncertain !== "lookup") {
    throw new GuardFileError(where, `\`on_uncertain\` is "refuse", "resend" or "lookup", not ${JSON.stringify(onUncertain)}${typeof onUncertain === "string" ? suggest(onUncertain, ["refuse", "resend", "lookup"]) : ""}`);
  }
  const errors = t.errors ?? "retryable";
  if (errors !== "retryable" && errors !== "final") throw new GuardFileError(where, `\`errors\` is "retryable" or "final", not ${JSON.stringify(errors)}`);
  if (t.supersede_failed === true) {
    throw new GuardFileError(where, "`supersede_failed` is the gateway's; in-process, supersede a failed intent with POST /v1/intents/{action}/{reference}/supersede or on /live");
  }
  if (Array.isArray(t.freeze_meta) && t.freeze_meta.length > 0) throw new GuardFileError(where, "`freeze_meta` freezes MCP _meta entries: a tool run in-process has none");
  if (t.lookup !== undefined) {
    throw new GuardFileError(where, `[guard.lookup] names an upstream MCP tool, which an in-process guard does not call: pass the function that asks the provider instead, { lookups: { ${tool}: fn } }`);
  }
  const lookup = lookups[tool];
  if (onUncertain === "lookup" && lookup === undefined) throw new GuardFileError(where, `on_uncertain = "lookup" needs the function that asks the provider: { lookups: { ${tool}: fn } }`);
  if (lookup !== undefined && onUncertain !== "lookup") throw new GuardFileError(where, `lookups has a function for \`${tool}\`, whose guard says on_uncertain = "${onUncertain}", not "lookup"`);
  return { tool, action, fields, keyArgument, leaseMs, onUncertain, errors, lookup, where };
}

/** A JSON Schema document. */
export type Schema = Record<string, unknown>;

/** A tool's argument schema as JSON Schema: a zod 4 schema (its
 *  `toJSONSchema()`), an AI SDK `jsonSchema(...)` (its `jsonSchema`), or
 *  JSON Schema as given; `undefined` when it cannot be read (the checks
 *  then wait for the tool's first call, or are skipped). */
export function jsonSchemaOf(schema: unknown): Schema | undefined {
  if (typeof schema !== "object" || schema === null) return undefined;
  const s = schema as { toJSONSchema?: () => unknown; jsonSchema?: unknown; "~standard"?: unknown; type?: unknown; properties?: unknown };
  if (typeof s.toJSONSchema === "function") {
    try {
      const out = s.toJSONSchema();
      return isRecord(out) ? out : undefined;
    } catch {
      return undefined;
    }
  }
  if (isRecord(s.jsonSchema)) return s.jsonSchema;
  if (s["~standard"] !== undefined) return undefined;
  return s.type !== undefined || s.properties !== undefined ? (schema as Schema) : undefined;
}

function resolve(schema: Schema, root: Schema, depth = 0): Schema[] {
  if (depth > 32) return [];
  const ref = schema.$ref;
  if (typeof ref === "string" && ref.startsWith("#/")) {
    const { ok, value } = new Pointer(ref.slice(1)).get(root);
    return ok && isRecord(value) ? resolve(value, root, depth + 1) : [];
  }
  const out = [schema];
  for (const k of ["anyOf", "oneOf", "allOf"]) {
    const branches = schema[k];
    if (Array.isArray(branches)) for (const b of branches) if (isRecord(b)) out.push(...resolve(b, root, depth + 1));
  }
  return out;
}

function schemaLacks(root: Schema, pointer: Pointer): string | undefined {
  let current: Schema[] = [root];
  for (const [depth, part] of pointer.parts.entries()) {
    const next: Schema[] = [];
    let free = false;
    for (const s of current) {
      for (const r of resolve(s, root)) {
        const props = r.properties;
        const items = r.items;
        if (isRecord(props) && Object.hasOwn(props, part)) next.push(isRecord(props[part]) ? (props[part] as Schema) : {});
        else if (/^\d+$/.test(part) && isRecord(items)) next.push(items);
        else if (depth > 0 && ((r.additionalProperties !== undefined && r.additionalProperties !== false) || (!isRecord(props) && items === undefined))) free = true;
      }
    }
    if (free && next.length === 0) return undefined;
    if (next.length === 0) return `${pointer.parts.slice(0, depth).join("/") || "the arguments"} has no member \`${part}\``;
    current = next;
  }
  return undefined;
}

function topProperties(schema: Schema): string[] {
  return resolve(schema, schema).flatMap((r) => (isRecord(r.properties) ? Object.keys(r.properties) : []));
}

/**
 * The start-up checks against the agent's tools (name -> JSON Schema of its
 * arguments, `undefined` when it has none): a guard naming a tool the agent
 * lacks, or an argument the tool's schema does not declare, throws
 * `GuardFileError`.
 */
export function checkTools(guards: Map<string, Guard>, schemas: Record<string, Schema | undefined>): void {
  for (const g of guards.values()) {
    if (!Object.hasOwn(schemas, g.tool)) {
      throw new GuardFileError(g.where, `guards tool \`${g.tool}\`, which the agent does not have${suggest(g.tool, Object.keys(schemas))} (its tools: ${Object.keys(schemas).sort().join(", ") || "none"})`);
    }
    const schema = schemas[g.tool];
    if (schema === undefined) continue;
    const named: [string, string][] = g.fields.filter((f) => f.source !== TURN).map((f) => [f.source, `field \`${f.name}\``]);
    if (g.keyArgument !== undefined) named.push([g.keyArgument, "key_argument"]);
    for (const [source, label] of named) {
      const p = new Pointer(source);
      const why = schemaLacks(schema, p);
      if (why !== undefined) {
        throw new GuardFileError(
          g.where,
          `${label} reads \`${source}\`, which tool \`${g.tool}\` does not declare: ${why}${suggest(p.parts[0] ?? "", topProperties(schema))} (a tool never receives an argument its schema lacks, and a key it never receives protects nothing)`,
        );
      }
    }
  }
}

// -- one guarded call ----------------------------------------------------------

/** What a tool answered, as stored for replay. `native` is the framework's
 *  own object, handed back unchanged by the call that ran the tool. */
export interface ToolResult {
  content: unknown;
  isError: boolean;
  extra?: Record<string, unknown>;
  native?: unknown;
}

/** The gateway's `_meta.idem` (clients/conformance/mcp-meta.schema.json). */
export interface IdemMeta {
  key: string | null;
  replayed: boolean;
  diverged: boolean;
  attempt: number;
  reconciled: boolean;
  diverged_meta: string[];
  source?: "idem" | "upstream";
  lookup?: "executed" | "not_executed" | "unknown";
}

/** What the framework hands the model. */
export interface Answer {
  result: ToolResult;
  idem: IdemMeta;
  /** Sentences appended for the model. */
  notes: string[];
  /** This call ran the tool: `result.native` is the framework's answer. */
  executed: boolean;
}

/** The tool threw: whether it acted is unknown. The action is uncertain
 *  (retrying the same call is safe: same key); thrown with the tool's
 *  error as its `cause`. */
export class OutcomeUnknown extends Error {
  readonly idem: IdemMeta;
  constructor(message: string, idem: IdemMeta, cause: unknown) {
    super(message, { cause });
    this.name = "OutcomeUnknown";
    this.idem = idem;
  }
}

function meta(key: string | null, attempt = 0, more: Partial<IdemMeta> = {}): IdemMeta {
  return { key, replayed: false, diverged: false, attempt, reconciled: false, diverged_meta: [], ...more };
}

function refused(message: string): Answer {
  return { result: { content: message, isError: true }, idem: meta(null, 0, { source: "idem" }), notes: [], executed: false };
}

function dumps(v: unknown): string {
  return JSON.stringify(v) ?? "null";
}

function plain(v: unknown): string {
  return typeof v === "string" ? v : dumps(v);
}

function depthOf(v: unknown, d = 0): number {
  if (d > MAX_DEPTH) return d;
  if (Array.isArray(v)) return Math.max(d + 1, ...v.map((x) => depthOf(x, d + 1)));
  if (isRecord(v)) return Math.max(d + 1, ...Object.values(v).map((x) => depthOf(x, d + 1)));
  return d;
}

function holdsNul(v: unknown): boolean {
  if (typeof v === "string") return v.includes("\0");
  if (Array.isArray(v)) return v.some(holdsNul);
  if (isRecord(v)) return Object.entries(v).some(([k, x]) => k.includes("\0") || holdsNul(x));
  return false;
}

class Refused extends Error {}

function prepare(guard: Guard, args: Record<string, unknown>, turn: string | undefined): Record<string, unknown> {
  let sent: string;
  try {
    sent = JSON.stringify(args);
  } catch (e) {
    throw new Refused(`the arguments are not JSON (${String(e)}); nothing was recorded or executed`);
  }
  const bytes = new TextEncoder().encode(sent).length;
  if (bytes > MAX_ARGUMENTS_BYTES) throw new Refused(`the arguments are ${bytes} bytes; a guarded call takes at most ${MAX_ARGUMENTS_BYTES}`);
  if (depthOf(args) > MAX_DEPTH) throw new Refused(`the arguments nest deeper than ${MAX_DEPTH} levels; nothing was recorded or executed`);
  const bad = Object.entries(args).find(([, v]) => holdsNul(v));
  if (bad) throw new Refused(`argument \`${bad[0]}\` holds a NUL character (\\u0000), which idem cannot store; nothing was recorded or executed`);
  if (guard.keyArgument !== undefined) {
    try {
      new Pointer(guard.keyArgument).set(structuredClone(args), null);
    } catch (e) {
      throw new Refused(`key_argument ${(e as Error).message}; nothing was recorded or executed`);
    }
  }
  const candidate: Record<string, unknown> = {};
  for (const f of guard.fields) {
    if (f.source === TURN) {
      if (!turn) {
        throw new Refused(
          `${guard.tool} reads idem's field \`${f.name}\` from the conversation's turn, and this run has none (no thread id, or no id on the user's message); nothing was recorded or executed`,
        );
      }
      candidate[f.name] = turn;
      continue;
    }
    const { ok, value } = new Pointer(f.source).get(args);
    if (!ok) throw new Refused(`missing argument \`${f.source}\`: ${guard.tool} needs it (idem's field \`${f.name}\`) to tell this charge from others; nothing was recorded or executed`);
    candidate[f.name] = value;
  }
  candidate[ARGUMENTS_MEMBER] = args;
  return candidate;
}

function frozenArguments(guard: Guard, intent: Intent, args: Record<string, unknown>): Record<string, unknown> {
  const frozen = intent.payload[ARGUMENTS_MEMBER];
  if (isRecord(frozen)) return structuredClone(frozen);
  const out = structuredClone(args);
  for (const f of guard.fields) {
    if (f.source !== TURN && Object.hasOwn(intent.payload, f.name)) {
      try {
        new Pointer(f.source).set(out, structuredClone(intent.payload[f.name]));
      } catch {
        // An argument the shape cannot take stays as sent.
      }
    }
  }
  return out;
}

function divergence(guard: Guard, intent: Intent, args: Record<string, unknown>): string | undefined {
  const frozen = frozenArguments(guard, intent, args);
  const diffs: [string, unknown, unknown][] = [];
  for (const f of guard.fields) {
    if (f.source === TURN) continue;
    const p = new Pointer(f.source);
    const a = p.get(args);
    const b = p.get(frozen);
    if (a.ok && b.ok && dumps(a.value) !== dumps(b.value)) diffs.push([f.source, a.value, b.value]);
  }
  if (diffs.length === 0) return undefined;
  const verb = intent.diverged ? "differs from" : "is written differently from (the same value as)";
  const said = diffs.map(([arg, now, first]) => `the ${arg} you sent, ${plain(now)}, ${verb} the frozen intent's ${plain(first)}`).join("; ");
  return `idem: ${said}; the frozen intent was used, as the first call for ${intent.reference} sent it.`;
}

function replayNote(guard: Guard, reference: string, updatedMs: number | undefined): string {
  const at = updatedMs === undefined ? "" : ` at ${new Date(Math.floor(updatedMs / 1000) * 1000).toISOString().replace(".000Z", "Z")}`;
  return `idem: ${guard.tool} was already executed for ${reference}${at}; the stored result is returned and nothing was executed or charged again.`;
}

function unknownSentence(guard: Guard, reference: string, key: string, why: string): string {
  return (
    `${guard.tool} for ${reference} was sent, and its answer never came (${why}): whether it was executed is unknown. ` +
    `Do not retry with a new reference; retrying this same call is safe (same key). Key ${key}.`
  );
}

function refuseSentence(guard: Guard, reference: string, key: string): string {
  return (
    `the outcome of an earlier ${guard.tool} for ${reference} is unknown: it may have been executed. ` +
    "Do not retry it with a new reference (that would be a new charge); " +
    `it is in idem's work queue (/live), where a person settles it. Key ${key}.`
  );
}

function stored(r: ToolResult): Record<string, unknown> {
  const doc: Record<string, unknown> = { content: r.content, is_error: r.isError };
  if (r.extra && Object.keys(r.extra).length > 0) doc.extra = r.extra;
  return doc;
}

function fromStored(doc: unknown): ToolResult {
  if (isRecord(doc) && Object.hasOwn(doc, "content")) {
    return { content: doc.content, isError: doc.is_error === true, extra: isRecord(doc.extra) ? doc.extra : {} };
  }
  return { content: typeof doc === "string" ? doc : dumps(doc), isError: false };
}

/** A resend (`on_uncertain = "resend"`) answered with an error: the first
 *  send's outcome is still unknown, so it is never recorded as the
 *  reconciliation (a provider that refuses a replayed payment answers so
 *  even when the first one settled). */
class ResendRefused extends Error {
  constructor(readonly result: ToolResult) {
    const text = typeof result.content === "string" ? result.content : dumps(result.content);
    super(`the resend was answered with an error, so the first send's outcome is still unknown: ${text.slice(0, 500)}`);
  }
}

/** Thrown inside the effect when the framework answered with an error it
 *  made of an exception: the outcome is unknown (marked uncertain). */
class ErrorResult extends Error {
  constructor(readonly result: ToolResult) {
    super("the tool answered with an error (an exception the framework caught)");
  }
}

export interface CallOptions {
  /** The conversation's turn, for a field written `"$turn"`. */
  turn?: string | undefined;
  /** Errors meaning the tool stopped before acting (a LangGraph interrupt):
   *  the claim is given back and the error goes on. */
  pauses?: (e: unknown) => boolean;
}

/**
 * One guarded call: `execute` runs the tool with the arguments it is given
 * (the frozen ones, the key in `key_argument`). Never runs the tool
 * unguarded: when idem cannot record the call, the answer is an error
 * saying nothing was executed.
 */
export async function guardedCall(
  idem: Idem,
  guard: Guard,
  args: Record<string, unknown>,
  execute: (frozen: Record<string, unknown>) => Promise<ToolResult>,
  options: CallOptions = {},
): Promise<Answer> {
  let candidate: Record<string, unknown>;
  try {
    candidate = prepare(guard, args, options.turn);
  } catch (e) {
    if (e instanceof Refused) return refused(e.message);
    throw e;
  }
  let seen: Intent | undefined;
  let result: ToolResult | undefined;
  let raised: { e: unknown } | undefined;
  let paused: { e: unknown } | undefined;
  let lookupRaised: { e: unknown } | undefined;
  let resent = false;
  let lookupSaid: "executed" | "not_executed" | undefined;
  const effect = async (intent: Intent): Promise<Record<string, unknown>> => {
    seen = intent;
    const frozen = frozenArguments(guard, intent, args);
    if (guard.keyArgument !== undefined) new Pointer(guard.keyArgument).set(frozen, intent.key);
    let r: ToolResult;
    try {
      r = await execute(frozen);
    } catch (e) {
      if (options.pauses?.(e)) {
        paused = { e };
        throw new Failed(`the tool paused (${(e as Error)?.name ?? "error"}) before an outcome; it runs again when resumed`, { retryable: true });
      }
      raised = { e };
      throw e;
    }
    result = r;
    if (r.isError && resent) throw new ResendRefused(r);
    if (r.isError && guard.errors !== "final") throw new ErrorResult(r);
    return stored(r);
  };
  let reconcile: ((intent: Intent) => unknown) | undefined;
  if (guard.onUncertain === "resend") {
    // The tool again under the same key, its answer recorded as the
    // reconciliation (as the gateway's resend).
    reconcile = (intent) => {
      seen = intent;
      resent = true;
      return effect(intent);
    };
  } else if (guard.onUncertain === "lookup" && guard.lookup !== undefined) {
    const lookup = guard.lookup;
    reconcile = async (intent) => {
      seen = intent;
      let found: unknown;
      try {
        found = await lookup(intent);
      } catch (e) {
        lookupRaised = { e };
        throw e;
      }
      if (found === undefined || found === null) {
        // Not executed: the tool runs again, same key.
        lookupSaid = "not_executed";
        return undefined;
      }
      lookupSaid = "executed";
      return stored({ content: typeof found === "string" ? found : dumps(found), isError: false });
    };
  }
  let out: Outcome<Record<string, unknown>>;
  try {
    out = await idem.run(guard.action, effect, candidate, { leaseMs: guard.leaseMs, onInFlight: "wait", maxWaitMs: guard.leaseMs + 1000, reconcile });
  } catch (e) {
    return failed(guard, args, e, { seen, result, raised, paused, lookupRaised, resent });
  }
  const intent = out.intent;
  const note = divergence(guard, intent, args);
  const notes = note ? [note] : [];
  const reconciled = out.reconciled || resent;
  if (out.replayed) {
    const r = fromStored(out.response);
    let updated: number | undefined;
    try {
      updated = Number((await idem.getAction(out.key)).updated_ms);
    } catch {
      updated = undefined;
    }
    return {
      result: r,
      idem: meta(out.key, out.attempt, { replayed: true, diverged: intent.diverged, reconciled, ...(r.isError ? { source: "upstream" } : {}) }),
      notes: [...notes, replayNote(guard, intent.reference, updated)],
      executed: false,
    };
  }
  if (result !== undefined && (!out.reconciled || resent)) {
    const r: ToolResult = result;
    const more: Partial<IdemMeta> = { ...(r.isError ? { source: "upstream" as const } : {}), ...(lookupSaid ? { lookup: lookupSaid } : {}) };
    return { result: r, idem: meta(out.key, out.attempt, { diverged: intent.diverged, reconciled, ...more }), notes, executed: true };
  }
  return { result: fromStored(out.response), idem: meta(out.key, out.attempt, { diverged: intent.diverged, reconciled: true, lookup: "executed" }), notes, executed: false };
}

interface Seen {
  seen: Intent | undefined;
  result: ToolResult | undefined;
  raised: { e: unknown } | undefined;
  paused: { e: unknown } | undefined;
  lookupRaised: { e: unknown } | undefined;
  resent: boolean;
}

function failed(guard: Guard, args: Record<string, unknown>, e: unknown, s: Seen): Answer {
  const intent = s.seen ?? ((e as { intent?: Intent }).intent);
  const key = intent?.key ?? "";
  const ref = intent?.reference ?? "this call";
  const attempt = intent?.attempt ?? 0;
  const diverged = intent?.diverged ?? false;
  const withNote = (a: Answer): Answer => {
    const note = intent ? divergence(guard, intent, args) : undefined;
    if (note) a.notes.unshift(note);
    return a;
  };
  if (s.lookupRaised && e === s.lookupRaised.e) {
    const text =
      `the outcome of ${guard.tool} for ${ref} is unknown, and asking the provider did not tell: ${String(e)}. ` +
      "Do not retry it with a new reference (that would be a new charge); " +
      `it is in idem's work queue (/live), where a person settles it. Key ${key}.`;
    return { result: { content: text, isError: true }, idem: meta(key, attempt, { diverged, source: "idem", lookup: "unknown" }), notes: [], executed: false };
  }
  if (e instanceof Failed && s.resent && s.raised && e === s.raised.e) {
    // The tool refused the resend: the client left the action uncertain (a
    // resend's refusal says nothing about the first send).
    e = new ResendRefused({ content: e.error, isError: true });
  }
  if (e instanceof ResendRefused) {
    const note =
      `idem: an earlier ${guard.tool} for ${ref} may have been executed, and resending it under the same key was answered with the error above ` +
      "(a provider that refuses a replayed payment answers so even when the first one settled). Whether it was executed is unknown: " +
      `do not retry it with a new reference or a new payment; it is in idem's work queue (/live), where a person settles it. Key ${key}.`;
    return { result: e.result, idem: meta(key, attempt, { diverged, source: "upstream" }), notes: [note], executed: true };
  }
  if (s.paused) throw s.paused.e;
  if (e instanceof Failed && s.raised && e === s.raised.e) {
    return withNote({ result: { content: e.error, isError: true }, idem: meta(key, attempt, { diverged, reconciled: s.resent, source: "upstream" }), notes: [], executed: false });
  }
  if (e instanceof ErrorResult) {
    const why = "the tool answered with an error the framework made of an exception";
    return withNote({ result: e.result, idem: meta(key, attempt, { diverged, source: "upstream" }), notes: [unknownSentence(guard, ref, key, why)], executed: true });
  }
  if (s.raised && e === s.raised.e) {
    const why = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
    throw new OutcomeUnknown(unknownSentence(guard, ref, key, why), meta(key, attempt, { diverged, source: "idem" }), e);
  }
  if (s.result !== undefined) {
    // The tool answered; its answer goes back even though it could not be
    // recorded (the lease ends, and the action is uncertain then).
    const note =
      e instanceof OutcomeTooLarge
        ? `idem: the result was over idem's outcome limit and was not stored; ${guard.tool} was executed once.`
        : `idem: the result could not be recorded (${String(e)}); ${guard.tool} was executed once.`;
    const r = s.result;
    return { result: r, idem: meta(key || null, attempt, r.isError ? { source: "upstream" } : {}), notes: [note], executed: true };
  }
  if (e instanceof InFlight) {
    const waitS = Math.floor(e.retryAfterMs / 1000) + 1;
    return withNote({
      result: { content: `${guard.tool} for ${ref} is still running in another call; nothing was executed by this one. Retry the same call in ${waitS} s to get its result.`, isError: true },
      idem: meta(key || null, 0, { diverged, source: "idem" }),
      notes: [],
      executed: false,
    });
  }
  if (e instanceof Uncertain) {
    const claimAttempt = Number((e.body as { attempt?: unknown }).attempt ?? 0);
    return withNote({ result: { content: refuseSentence(guard, ref, key), isError: true }, idem: meta(key, claimAttempt, { diverged, source: "idem" }), notes: [], executed: false });
  }
  if (e instanceof FailedForGood) {
    return withNote({ result: { content: `${guard.tool} for ${ref} failed for good earlier and will not run again: ${e.error}`, isError: true }, idem: meta(key, 0, { diverged, source: "idem" }), notes: [], executed: false });
  }
  if (e instanceof Unprocessable) {
    const detail = e.detail || e.message;
    const f = guard.fields.find((f) => detail.includes(`\`${f.name}\``) || detail.includes(` ${f.name}`));
    const where = f ? (f.source === TURN ? "the conversation's turn" : `argument \`${f.source}\``) : "";
    return refused(f ? `${where}: ${detail} (idem's field \`${f.name}\`); nothing was recorded or executed` : `${detail}; nothing was recorded or executed`);
  }
  if (e instanceof ProblemError) {
    return refused(`idem could not record this call (${e.message}); nothing was executed. Retry the same call later.`);
  }
  throw e;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
