// An uncertain charge settled by asking again with the same key.
import { Idem, Uncertain, type Intent } from "idem-client";

const URL = process.env.IDEM_URL!;
const TOKEN = process.env.IDEM_TOKEN!;
const idem = new Idem({ baseUrl: URL, token: TOKEN });
const message = { cliente_id: "c-3", valor: "50.00", chave_pix_destino: "bia@example.com", referencia_intencao: "FAT-3" };

async function psp(intent: Intent) {
  const res = await fetch(URL + "/v1/demo/charges", {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "idempotency-key": intent.key, "content-type": "application/json" },
    body: JSON.stringify({ amount_cents: 5000, currency: "BRL", customer: intent.payload.cliente_id }),
  });
  return (await res.json()) as { id: string };
}

// A first attempt charges, then dies before it can say so (here: it throws).
const crashing = idem.once("pix.cobranca", async (intent) => {
  await psp(intent);
  throw new Error("the worker lost its connection");
});
await crashing(message).catch(() => undefined);

// ANCHOR: reconcile
// Without reconcile, the next call refuses to guess.
const plain = idem.once("pix.cobranca", psp);
try {
  await plain(message);
} catch (e) {
  if (!(e instanceof Uncertain)) throw e;
  console.log("uncertain:", e.key.slice(0, 12));
}
// With it: the provider deduplicates by key, so asking again is safe.
const careful = idem.once("pix.cobranca", psp, { reconcile: (intent) => psp(intent) });
const out = await careful(message);
// ANCHOR_END: reconcile
console.log("reconciled:", out.reconciled, "charge:", out.response.id.slice(0, 3));
