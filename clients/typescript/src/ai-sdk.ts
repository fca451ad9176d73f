/**
 * The Vercel AI SDK: `idemTool(tool({...}), guard)` runs the tool's
 * `execute` once per intent, whatever asks for it again (a model that
 * calls again, a re-extraction, another request of the same conversation).
 *
 *     import { tool } from "ai";
 *     import { Idem } from "idem-client";
 *     import { idemGuards, idemTool } from "idem-client/ai-sdk";
 *
 *     const guards = idemGuards(idem, [{ tool: "charge_pix", action: "pix.cobranca", ... }]);
 *     const tools = { charge_pix: idemTool(tool({ inputSchema, execute }), guards.charge_pix) };
 *
 * The SDK validates a call's input against the tool's `inputSchema` before
 * `execute` runs, so a call it refuses is never recorded. No runtime
 * dependency: the tool is wrapped by its shape (`execute(input, { toolCallId
 * })`).
 */

import type { Idem, Intent } from "./index.js";
import { type Answer, type Guard, type GuardDeclaration, type IdemMeta, type ToolResult, GuardFileError, TURN, checkTools, guardedCall, jsonSchemaOf, loadGuards } from "./guard.js";

export { GuardFileError, OutcomeUnknown } from "./guard.js";
export type { GuardDeclaration, IdemMeta } from "./guard.js";

/** What `execute` receives besides the input (the AI SDK's tool call options). */
export interface ToolCallOptions {
  toolCallId: string;
  messages?: unknown;
  abortSignal?: AbortSignal;
  experimental_context?: unknown;
}

/** One tool's guard, bound to a client. */
export interface ToolGuard {
  readonly idem: Idem;
  readonly guard: Guard;
  readonly turn: ((options: ToolCallOptions) => string | undefined) | undefined;
  readonly onAnswer: ((toolCallId: string, idem: IdemMeta) => void) | undefined;
}

export interface GuardsOptions {
  /** `{ tool: fn(intent) }` for guards with `on_uncertain = "lookup"`. */
  lookups?: Record<string, (intent: Intent) => unknown>;
  /** The conversation's turn for a field written `"$turn"`, from the call's
   *  options (`experimental_context`: your chat and message ids). */
  turn?: (options: ToolCallOptions) => string | undefined;
  /** Each guarded answer's `_meta.idem` equivalent, by tool call id. */
  onAnswer?: (toolCallId: string, idem: IdemMeta) => void;
}

/** The guards, by tool name, each bound to `idem`: the same declarations
 *  as a guard file's `[[guard]]` tables (or the parsed file). */
export function idemGuards(idem: Idem, declarations: GuardDeclaration[] | { guard: GuardDeclaration[] }, options: GuardsOptions = {}): Record<string, ToolGuard> {
  const guards = loadGuards(declarations, options.lookups ? { lookups: options.lookups } : {});
  const out: Record<string, ToolGuard> = {};
  for (const g of guards.values()) {
    if (options.turn === undefined) {
      const f = g.fields.find((f) => f.source === TURN);
      if (f) throw new GuardFileError(g.where, `field \`${f.name}\` reads "${TURN}": pass idemGuards(idem, guards, { turn: (options) => ... }), or map it to an argument`);
    }
    out[g.tool] = { idem, guard: g, turn: options.turn, onAnswer: options.onAnswer };
  }
  return out;
}

/** An error the model reads as the tool's (`tool-error`): idem refused, or
 *  the call is still running elsewhere, or its outcome is unknown. */
export class IdemToolError extends Error {
  readonly idem: IdemMeta;
  constructor(message: string, idem: IdemMeta) {
    super(message);
    this.name = "IdemToolError";
    this.idem = idem;
  }
}

/**
 * The tool with its `execute` guarded (a guard naming an argument the
 * tool's `inputSchema` does not declare throws `GuardFileError` here): the first call records the intent
 * from the input and runs `execute` once; a repeated or re-extracted call
 * gets the stored output under its own `toolCallId` (a string output with
 * idem's sentences appended, an object output with them in `_idem`);
 * idem's refusals and an unknown outcome are thrown, so the model reads
 * them as the tool's error.
 */
export function idemTool<T extends object>(tool: T, guard: ToolGuard | undefined): T {
  if (guard === undefined) throw new TypeError("idemTool: no guard for this tool (idemGuards(...)[name] is undefined: is the tool's name in the guard declarations?)");
  // Read by its shape: the AI SDK's tool types change between majors, its
  // `execute(input, { toolCallId, abortSignal })` does not.
  const run = (tool as { execute?: unknown }).execute;
  if (typeof run !== "function") throw new TypeError(`idemTool: tool ${guard.guard.tool} has no execute to guard`);
  // The start-up check against the tool's input schema, when it can be read.
  const schema = jsonSchemaOf((tool as { inputSchema?: unknown }).inputSchema);
  if (schema !== undefined) checkTools(new Map([[guard.guard.tool, guard.guard]]), { [guard.guard.tool]: schema });
  const execute = async (input: Record<string, unknown>, options: ToolCallOptions): Promise<unknown> => {
    const answer = await guardedCall(
      guard.idem,
      guard.guard,
      input,
      async (frozen): Promise<ToolResult> => {
        const out = await (run as (i: unknown, o: ToolCallOptions) => unknown)(frozen, options);
        return { content: out === undefined ? null : out, isError: false, native: out };
      },
      { turn: guard.turn?.(options) },
    );
    guard.onAnswer?.(options.toolCallId, answer.idem);
    return output(answer);
  };
  return { ...tool, execute } as T;
}

function output(answer: Answer): unknown {
  const r = answer.result;
  if (r.isError) throw new IdemToolError([typeof r.content === "string" ? r.content : JSON.stringify(r.content), ...answer.notes].join("\n\n"), answer.idem);
  const value = answer.executed ? r.native : r.content;
  if (answer.notes.length === 0) return value;
  if (typeof value === "string") return [value, ...answer.notes].join("\n\n");
  if (typeof value === "object" && value !== null && !Array.isArray(value)) return { ...value, _idem: { ...answer.idem, notes: answer.notes } };
  return { result: value, _idem: { ...answer.idem, notes: answer.notes } };
}
