// The TypeScript integrations' own time per tool call, against the same
// agent with the undecorated tool, in one interleaved run (bench, not a
// test: run by hand, `node test/bench-frameworks.mjs [rounds]`; the file
// name keeps it out of `node --test test/*.test.mjs`).
import { AIMessage, HumanMessage } from "@langchain/core/messages";
import { generateText, stepCountIs, tool as aiTool } from "ai";
import { MockLanguageModelV4 } from "ai/test";
import { Idem } from "idem-client";
import { idemGuards, idemTool } from "idem-client/ai-sdk";
import { idemMiddleware } from "idem-client/langchain";
import { createAgent, tool as lcTool } from "langchain";
import { z } from "zod";
import { Scripted } from "./lc_support.mjs";
import { backends, serve } from "./support.mjs";

const rounds = Number(process.argv[2] ?? 300);
const GUARD = { tool: "charge_pix", action: "pix.cobranca", key_argument: "idempotency_key", fields: { cliente_id: "customer_id", valor: "amount", chave_pix_destino: "pix_key", referencia_intencao: "invoice_ref" } };
const ARGS = z.object({ customer_id: z.string(), amount: z.string(), pix_key: z.string(), invoice_ref: z.string(), idempotency_key: z.string().optional() });
const args = (r) => ({ customer_id: "c-1", amount: "180.00", pix_key: "fulano@example.com", invoice_ref: r });

const server = await serve(backends()[0]);
const token = server.newTenant("bench");
const idem = new Idem({ baseUrl: server.url, token });
const lc = lcTool(async () => "ok", { name: "charge_pix", description: "Charges.", schema: ARGS });
const mw = idemMiddleware(idem, [GUARD], { tools: [lc] });
const guards = idemGuards(idem, [GUARD]);
const ai = aiTool({ inputSchema: ARGS, execute: async () => "ok" });
const aiGuarded = idemTool(ai, guards.charge_pix);
const usage = { inputTokens: { total: 1 }, outputTokens: { total: 1 } };

const cases = {
  langchain: (guarded) => async (r) => {
    const call = new AIMessage({ content: "", tool_calls: [{ name: "charge_pix", args: args(r), id: "c1", type: "tool_call" }] });
    await createAgent({ model: new Scripted([call]), tools: [lc], middleware: guarded ? [mw] : [] }).invoke({ messages: [new HumanMessage("pay")] });
  },
  "ai-sdk": (guarded) => async (r) => {
    let said = false;
    const model = new MockLanguageModelV4({
      doGenerate: async () => {
        if (said) return { content: [{ type: "text", text: "done" }], finishReason: { unified: "stop", raw: undefined }, usage, warnings: [] };
        said = true;
        return { content: [{ type: "tool-call", toolCallId: "c1", toolName: "charge_pix", input: JSON.stringify(args(r)) }], finishReason: { unified: "tool-calls", raw: undefined }, usage, warnings: [] };
      },
    });
    await generateText({ model, tools: { charge_pix: guarded ? aiGuarded : ai }, prompt: "pay", stopWhen: stepCountIs(3) });
  },
};

const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.round(p * (xs.length - 1)))];
console.log(`framework      bare p50  bare p99  idem p50  idem p99  own p50   (ms per agent turn with one tool call, ${rounds} rounds)`);
for (const [name, make] of Object.entries(cases)) {
  const run = { false: make(false), true: make(true) };
  for (let i = 0; i < 20; i++) for (const g of [false, true]) await run[g](`w-${name}-${i}-${g}-${Date.now()}`);
  const t = { false: [], true: [] };
  for (let i = 0; i < rounds; i++) {
    for (const g of i % 2 === 0 ? [false, true] : [true, false]) {
      const t0 = performance.now();
      await run[g](`b-${name}-${i}-${g}-${Date.now()}`);
      t[g].push(performance.now() - t0);
    }
  }
  const [b50, b99, g50, g99] = [pct(t.false, 0.5), pct(t.false, 0.99), pct(t.true, 0.5), pct(t.true, 0.99)];
  console.log(`${name.padEnd(14)} ${b50.toFixed(2).padStart(8)} ${b99.toFixed(2).padStart(9)} ${g50.toFixed(2).padStart(9)} ${g99.toFixed(2).padStart(9)} ${(g50 - b50).toFixed(2).padStart(8)}`);
}
await server.stop();
