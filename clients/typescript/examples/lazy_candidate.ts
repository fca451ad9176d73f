// The model runs only while nothing is frozen for the reference.
// ANCHOR: lazy
import { Idem } from "idem-client";

const idem = new Idem({ baseUrl: process.env.IDEM_URL!, token: process.env.IDEM_TOKEN! });
let modelCalls = 0;

/** Stands in for a model's extraction from a WhatsApp message. */
async function extract(message: string) {
  modelCalls += 1;
  const valor = /R\$ ?([\d.,]+)/.exec(message)?.[1]?.replace(".", "").replace(",", ".") ?? "0";
  return { cliente_id: "c-9", valor, chave_pix_destino: "ana@example.com", referencia_intencao: "FAT-9" };
}

const charge = idem.once("pix.cobranca", (intent) => ({ charged: intent.payload.valor, key: intent.key }));
const msg = "Pode cobrar R$ 1.234,50 da Ana";
const first = await charge(() => extract(msg), { reference: "FAT-9" });
const again = await charge(() => extract(msg), { reference: "FAT-9" }); // redelivered: no model call
console.log("model calls:", modelCalls, "charged:", first.response.charged, "replayed:", again.replayed);
// ANCHOR_END: lazy
