// A LangChain JS agent whose payment tool runs once per invoice, whatever
// toolRetryMiddleware, a re-extraction or a resumed thread does. The model
// is scripted (a BaseChatModel answering with each message in turn), so
// this runs offline: it asks for the charge, then again with a
// re-extracted amount. With a real model, put "openai:gpt-5" (or your
// ChatModel) in its place.

// ANCHOR: langchain
import { AIMessage, HumanMessage, ToolMessage } from "@langchain/core/messages";
import { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { Idem } from "idem-client";
import { type IdemMeta, idemMiddleware } from "idem-client/langchain";
import { createAgent, tool, toolRetryMiddleware } from "langchain";
import { z } from "zod";

const URL = process.env.IDEM_URL!;
const TOKEN = process.env.IDEM_TOKEN!;

const chargePix = tool(
  async ({ customer_id, amount, idempotency_key }) => {
    const r = await fetch(`${URL}/v1/demo/charges`, { // the demo provider stands in for a PSP
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "idempotency-key": idempotency_key || crypto.randomUUID(), "content-type": "application/json" },
      body: JSON.stringify({ amount_cents: Math.round(Number(amount) * 100), currency: "BRL", customer: customer_id }),
    });
    const charge = (await r.json()) as { id: string; amount_cents: number };
    return `charged ${charge.amount_cents} cents, charge ${charge.id}`;
  },
  {
    name: "charge_pix",
    description: 'Charges a Pix payment of `amount` (reais, e.g. "180.00") for an invoice.',
    schema: z.object({ customer_id: z.string(), amount: z.string(), pix_key: z.string(), invoice_ref: z.string(), idempotency_key: z.string().optional() }),
  },
);

// The guard file's [[guard]] table, as the same structure in code.
const guards = [{
  tool: "charge_pix", action: "pix.cobranca", key_argument: "idempotency_key", on_uncertain: "resend" as const,
  fields: { cliente_id: "customer_id", valor: "amount", chave_pix_destino: "pix_key", referencia_intencao: "invoice_ref" },
}];
const idem = idemMiddleware(new Idem({ baseUrl: URL, token: TOKEN }), guards, { tools: [chargePix] });

const call = (amount: string, id: string) =>
  new AIMessage({ content: "", tool_calls: [{ name: "charge_pix", id, args: { customer_id: "c-1", amount, pix_key: "fulano@example.com", invoice_ref: "FAT-1" } }] });
class Scripted extends BaseChatModel { // stands in for a real model
  constructor(private replies: AIMessage[]) { super({}); }
  _llmType() { return "scripted"; }
  override bindTools() { return this; }
  async _generate() { return { generations: [{ text: "", message: this.replies.shift() ?? new AIMessage("Paid.") }] }; }
}
const model = new Scripted([call("180.00", "call_1"), call("1800.00", "call_2")]);

const agent = createAgent({ model, tools: [chargePix], middleware: [toolRetryMiddleware(), idem] }); // idem after the retry
const out = await agent.invoke({ messages: [new HumanMessage("pay invoice FAT-1")] });
for (const m of out.messages) {
  if (ToolMessage.isInstance(m)) console.log(m.tool_call_id, (m.response_metadata.idem as IdemMeta).replayed, String(m.content).split("\n")[0]);
}
// ANCHOR_END: langchain
