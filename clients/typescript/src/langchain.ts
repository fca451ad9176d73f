/**
 * LangChain JS v1 / LangGraph: `idemMiddleware` runs each guarded tool once
 * per intent, whatever retries it (`toolRetryMiddleware`, a resumed thread,
 * another process).
 *
 *     import { createAgent, toolRetryMiddleware } from "langchain";
 *     import { idemMiddleware } from "idem-client/langchain";
 *
 *     const idem = idemMiddleware(client, guards, { tools: [chargePix] });
 *     const agent = createAgent({ model, tools: [chargePix], middleware: [toolRetryMiddleware(), idem] });
 *
 * List it after the retry middleware (the first listed is the outermost),
 * so every retry passes through the guard. Peer dependencies: `langchain`
 * and `@langchain/core`.
 */

import { ToolMessage } from "@langchain/core/messages";
import { createMiddleware } from "langchain";

import type { Idem, Intent } from "./index.js";
import { type Answer, type Guard, type GuardDeclaration, type Schema, type ToolResult, Pointer, TURN, checkTools, guardedCall, jsonSchemaOf, loadGuards } from "./guard.js";

export { GuardFileError, OutcomeUnknown } from "./guard.js";
export type { GuardDeclaration, IdemMeta } from "./guard.js";

export interface MiddlewareOptions {
  /** The agent's tools: the guards are checked against their schemas now
   *  (otherwise at each guarded tool's first call). */
  tools?: ReadonlyArray<{ name: string; schema?: unknown }>;
  /** `{ tool: fn(intent) }` for guards with `on_uncertain = "lookup"`. */
  lookups?: Record<string, (intent: Intent) => unknown>;
}

interface Request {
  toolCall: { name: string; args: Record<string, unknown>; id?: string };
  tool?: { name: string; schema?: unknown } | undefined;
  state?: unknown;
  runtime?: { configurable?: { thread_id?: string } } | undefined;
}

function schemas(tools: ReadonlyArray<{ name: string; schema?: unknown }>): Record<string, Schema | undefined> {
  return Object.fromEntries(tools.map((t) => [t.name, jsonSchemaOf(t.schema)]));
}

/** Whether the tool's schema refuses these arguments (the key filled in,
 *  as it will be): such a call passes through unrecorded, so a malformed
 *  first call never freezes an intent. */
function refusedBySchema(guard: Guard, tool: Request["tool"], args: Record<string, unknown>): boolean {
  const schema = tool?.schema as { safeParse?: (v: unknown) => { success: boolean } } | undefined;
  if (typeof schema?.safeParse !== "function") return tool === undefined;
  const filled = structuredClone(args);
  if (guard.keyArgument !== undefined) {
    try {
      new Pointer(guard.keyArgument).set(filled, "0".repeat(64));
    } catch {
      // No place for it: the guard refuses the call before recording.
    }
  }
  return !schema.safeParse(filled).success;
}

/** `$turn`: the thread id and the id of the latest user message. */
function turnOf(request: Request): string | undefined {
  const thread = request.runtime?.configurable?.thread_id;
  const messages = (request.state as { messages?: unknown[] } | undefined)?.messages ?? [];
  let human: string | undefined;
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i] as { getType?: () => string; _getType?: () => string; id?: string } | undefined;
    const type = m?.getType?.() ?? m?._getType?.();
    if (type === "human") {
      human = m?.id;
      break;
    }
  }
  return thread !== undefined && human ? `${thread}/${human}` : undefined;
}

function resultOf(out: unknown): ToolResult {
  if (ToolMessage.isInstance(out)) {
    const extra: Record<string, unknown> = {};
    if (out.artifact !== undefined) {
      try {
        JSON.stringify(out.artifact);
        extra.artifact = out.artifact;
      } catch {
        // Not JSON: not stored.
      }
    }
    return { content: out.content, isError: out.status === "error", extra, native: out };
  }
  // A Command updates the graph's state; only the fact that it ran is kept.
  return { content: "executed; its result was a LangGraph Command, which is not stored", isError: false, native: out };
}

function withNotes(content: unknown, notes: string[]): unknown {
  if (notes.length === 0) return content;
  if (typeof content === "string") return content ? [content, ...notes].join("\n\n") : notes.join("\n\n");
  return [...(Array.isArray(content) ? content : []), ...notes.map((text) => ({ type: "text", text }))];
}

function message(answer: Answer, request: Request): unknown {
  const native = answer.result.native;
  if (answer.executed && native !== undefined && !ToolMessage.isInstance(native) && answer.notes.length === 0) return native;
  const r = answer.result;
  const base = answer.executed && ToolMessage.isInstance(native) ? native : undefined;
  return new ToolMessage({
    content: withNotes(base ? base.content : r.content, answer.notes) as string,
    // Under THIS call's id, as providers require of every tool result.
    tool_call_id: request.toolCall.id ?? base?.tool_call_id ?? "",
    name: request.toolCall.name,
    status: r.isError ? "error" : "success",
    artifact: base ? base.artifact : r.extra?.artifact,
    response_metadata: { ...(base?.response_metadata ?? {}), idem: answer.idem },
  });
}

/**
 * The middleware: guards the tools its guards name; other tools pass
 * untouched. `guards`: the same declarations as a guard file's `[[guard]]`
 * tables (or the parsed file).
 */
export function idemMiddleware(idem: Idem, guards: GuardDeclaration[] | { guard: GuardDeclaration[] }, options: MiddlewareOptions = {}) {
  const loaded = loadGuards(guards, options.lookups ? { lookups: options.lookups } : {});
  const checked = new Set<string>();
  if (options.tools !== undefined) {
    checkTools(loaded, schemas(options.tools));
    for (const g of loaded.values()) checked.add(g.tool);
  }
  return createMiddleware({
    name: "IdemMiddleware",
    wrapToolCall: async (request, handler) => {
      const req = request as unknown as Request;
      const guard = loaded.get(req.toolCall.name);
      if (guard === undefined) return handler(request);
      if (!checked.has(guard.tool) && req.tool !== undefined) {
        checkTools(new Map([[guard.tool, guard]]), schemas([req.tool]));
        checked.add(guard.tool);
      }
      const args = req.toolCall.args;
      if (refusedBySchema(guard, req.tool, args)) return handler(request);
      const turn = guard.fields.some((f) => f.source === TURN) ? turnOf(req) : undefined;
      const answer = await guardedCall(
        idem,
        guard,
        args,
        async (frozen) => resultOf(await handler({ ...request, toolCall: { ...request.toolCall, args: frozen } })),
        { turn, pauses: (e) => (e as { name?: string })?.name === "GraphInterrupt" || (e as { name?: string })?.name === "Interrupt" },
      );
      return message(answer, req) as Awaited<ReturnType<typeof handler>>;
    },
  });
}
