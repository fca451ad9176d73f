// An uncertain charge settled by asking again with the same key.
// ANCHOR: reconcile
import { Idem, Uncertain, minorUnits, type Intent } from "idem-client";

const URL = process.env.IDEM_URL!;
const TOKEN = process.env.IDEM_TOKEN!;
const idem = new Idem({ baseUrl: URL, token: TOKEN });
const message = { cliente_id: "c-3", valor: "50.00", chave_pix_destino: "bia@example.com", referencia_intencao: "FAT-3" };

/** The provider's call, as on the first page: the demo provider stands in
 *  for a PSP, and deduplicates by the key it is given. */
async function psp(intent: Intent, signal?: AbortSignal): Promise<{ id: string }> {
  const res = await fetch(URL + "/v1/demo/charges", {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "idempotency-key": intent.key, "content-type": "application/json" },
    body: JSON.stringify({
      amount_cents: Number(minorUnits(intent.decimal("valor")!, 2)),
      currency: "BRL",
      customer: intent.payload.cliente_id,
    }),
    signal,
  });
  if (!res.ok) throw new Error(`the provider answered ${res.status}`);
  return (await res.json()) as { id: string };
}

// A first attempt charges, then dies before it can say so (here: it throws).
const crashing = idem.once("pix.cobranca", async (intent, { signal }) => {
  await psp(intent, signal);
  throw new Error("the worker lost its connection");
});
await crashing(message).catch(() => undefined);

// Without reconcile, the next call refuses to guess.
const plain = idem.once("pix.cobranca", (intent, { signal }) => psp(intent, signal));
try {
  await plain(message);
} catch (e) {
  if (!(e instanceof Uncertain)) throw e;
  console.log("uncertain:", e.key.slice(0, 12));
}
// With it: the provider deduplicates by key, so asking again is safe.
const careful = idem.once("pix.cobranca", (intent, { signal }) => psp(intent, signal), {
  reconcile: (intent) => psp(intent),
});
const out = await careful(message);
console.log("reconciled:", out.reconciled, "charge:", out.response.id.slice(0, 3));
// ANCHOR_END: reconcile
