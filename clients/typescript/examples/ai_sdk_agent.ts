// An AI SDK agent whose payment tool runs once per invoice, whatever the
// model asks again. The model is the AI SDK's own mock, so this runs
// offline: it asks for the charge, then again with a re-extracted amount.
// With a real model, pass it (openai("gpt-5")) as `model`.

// ANCHOR: ai_sdk
import { generateText, stepCountIs, tool } from "ai";
import { MockLanguageModelV4 } from "ai/test";
import { Idem } from "idem-client";
import { idemGuards, idemTool } from "idem-client/ai-sdk";
import { z } from "zod";

const URL = process.env.IDEM_URL!;
const TOKEN = process.env.IDEM_TOKEN!;

// The guard file's [[guard]] table, as the same structure in code.
const guards = idemGuards(new Idem({ baseUrl: URL, token: TOKEN }), [{
  tool: "charge_pix", action: "pix.cobranca", key_argument: "idempotency_key", on_uncertain: "resend",
  fields: { cliente_id: "customer_id", valor: "amount", chave_pix_destino: "pix_key", referencia_intencao: "invoice_ref" },
}]);

const chargePix = idemTool(tool({
  description: 'Charges a Pix payment of `amount` (reais, e.g. "180.00") for an invoice.',
  inputSchema: z.object({ customer_id: z.string(), amount: z.string(), pix_key: z.string(), invoice_ref: z.string(), idempotency_key: z.string().optional() }),
  execute: async ({ customer_id, amount, idempotency_key }) => {
    const r = await fetch(`${URL}/v1/demo/charges`, { // the demo provider stands in for a PSP
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "idempotency-key": idempotency_key || crypto.randomUUID(), "content-type": "application/json" },
      body: JSON.stringify({ amount_cents: Math.round(Number(amount) * 100), currency: "BRL", customer: customer_id }),
    });
    const charge = (await r.json()) as { id: string; amount_cents: number };
    return `charged ${charge.amount_cents} cents, charge ${charge.id}`;
  },
}), guards.charge_pix);

const amounts = ["180.00", "1800.00"];
const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } };
const model = new MockLanguageModelV4({ // stands in for a real model
  doGenerate: async () => {
    const amount = amounts.shift();
    if (amount === undefined) return { content: [{ type: "text", text: "Paid." }], finishReason: { unified: "stop", raw: undefined }, usage, warnings: [] };
    const input = JSON.stringify({ customer_id: "c-1", amount, pix_key: "fulano@example.com", invoice_ref: "FAT-1" });
    return { content: [{ type: "tool-call", toolCallId: `call_${2 - amounts.length}`, toolName: "charge_pix", input }], finishReason: { unified: "tool-calls", raw: undefined }, usage, warnings: [] };
  },
});

const result = await generateText({ model, tools: { charge_pix: chargePix }, prompt: "pay invoice FAT-1", stopWhen: stepCountIs(5) });
for (const step of result.steps) {
  for (const part of step.toolResults) console.log(part.toolCallId, /already executed/.test(String(part.output)), String(part.output).split("\n")[0]);
}
// ANCHOR_END: ai_sdk
