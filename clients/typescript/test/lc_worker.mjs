// The LangGraph.js process the kill test runs (not a test itself).
// `start`: an agent whose checkpointer is LangGraph's MemorySaver kept in a
// file after every write charges, writes LC_MARKER, then hangs in the tool
// until the test SIGKILLs it. `resume`: the same thread resumed from that
// file (`invoke(null, config)`), which runs the tools node again; prints
// the tool message as one JSON line. LC_GUARDED=1 puts idemMiddleware in
// front of the tool.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { AIMessage, HumanMessage, ToolMessage } from "@langchain/core/messages";
import { MemorySaver } from "@langchain/langgraph";
import { Idem } from "idem-client";
import { idemMiddleware } from "idem-client/langchain";
import { createAgent, tool } from "langchain";
import { z } from "zod";
import { Scripted } from "./lc_support.mjs";

const [mode] = process.argv.slice(2);
const { IDEM_URL: url, IDEM_TOKEN: token, LC_CHECKPOINTS: file, LC_MARKER: marker, LC_REF: reference, LC_GUARDED: guarded } = process.env;

/** MemorySaver, written to a file after each write and read back at start:
 *  what survives the SIGKILL is what a durable checkpointer would hold. */
class FileSaver extends MemorySaver {
  constructor() {
    super();
    if (existsSync(file)) {
      const doc = JSON.parse(readFileSync(file, "utf8"), (_, v) => (v && v.$bytes !== undefined ? Uint8Array.from(Buffer.from(v.$bytes, "base64")) : v));
      Object.assign(this.storage, doc.storage);
      Object.assign(this.writes, doc.writes);
    }
  }
  save() {
    const json = JSON.stringify({ storage: this.storage, writes: this.writes }, (_, v) => (v instanceof Uint8Array ? { $bytes: Buffer.from(v).toString("base64") } : v));
    writeFileSync(file, json);
  }
  async put(...a) {
    const out = await super.put(...a);
    this.save();
    return out;
  }
  async putWrites(...a) {
    const out = await super.putWrites(...a);
    this.save();
    return out;
  }
}

const chargePix = tool(
  async ({ customer_id, amount, idempotency_key }) => {
    const r = await fetch(`${url}/v1/demo/charges`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "idempotency-key": idempotency_key || crypto.randomUUID(), "content-type": "application/json" },
      body: JSON.stringify({ amount_cents: Math.round(Number(amount) * 100), currency: "BRL", customer: customer_id }),
    });
    const charge = await r.json();
    if (mode === "start") {
      writeFileSync(marker, "charged");
      await new Promise(() => {}); // killed here, after the provider charged
    }
    return `charged ${charge.amount_cents} cents, charge ${charge.id}`;
  },
  { name: "charge_pix", description: "Charges.", schema: z.object({ customer_id: z.string(), amount: z.string(), pix_key: z.string(), invoice_ref: z.string(), idempotency_key: z.string().optional() }) },
);

const GUARD = {
  tool: "charge_pix", action: "pix.cobranca", key_argument: "idempotency_key", lease_ms: 3000, on_uncertain: "resend",
  fields: { cliente_id: "customer_id", valor: "amount", chave_pix_destino: "pix_key", referencia_intencao: "invoice_ref" },
};
const middleware = guarded ? [idemMiddleware(new Idem({ baseUrl: url, token }), [GUARD], { tools: [chargePix] })] : [];
const call = new AIMessage({ content: "", tool_calls: [{ name: "charge_pix", id: "call_1", args: { customer_id: "c-1", amount: "180.00", pix_key: "fulano@example.com", invoice_ref: reference } }] });
// Resumed, the model has already asked for the charge: it only answers.
const model = new Scripted(mode === "start" ? [call] : []);
const agent = createAgent({ model, tools: [chargePix], middleware, checkpointer: new FileSaver() });
const config = { configurable: { thread_id: "chat-killed" } };
if (mode === "start") {
  await agent.invoke({ messages: [new HumanMessage({ content: "pay my invoice", id: "wamid.K" })] }, config);
  console.error("the tool returned: the test should have killed this process");
  process.exit(1);
}
const out = await agent.invoke(null, config);
const [m] = out.messages.filter((x) => ToolMessage.isInstance(x));
console.log(JSON.stringify({ status: m.status, tool_call_id: m.tool_call_id, content: m.content, idem: m.response_metadata?.idem ?? null }));
