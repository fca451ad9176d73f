#!/usr/bin/env node
// The TypeScript client's own CPU per guarded effect with `fetch` stubbed
// (canned answers, no server, no socket), against the same two calls by
// hand through the same stub, interleaved: what the client itself costs,
// without the network's or the server's noise.
//
//   npm --prefix clients/typescript run build
//   node bench/typescript-client-stub.mjs [N, 20000] [DIST, clients/typescript/dist]
import path from "node:path";
import { performance } from "node:perf_hooks";
import { pathToFileURL } from "node:url";

const n = Number(process.argv[2] || 20000);
const dist = path.resolve(process.argv[3] || new URL("../clients/typescript/dist", import.meta.url).pathname);
const { Idem } = await import(pathToFileURL(path.join(dist, "esm/index.js")).href);
const key = "a".repeat(64);
const frozen = { referencia_intencao: "r1", valor: "180.00", cliente_id: "c-1", chave_pix_destino: "fulano@example.com" };
const claimed = () =>
  JSON.stringify({
    key, action: "pix.cobranca", reference: "r1", payload: frozen, frozen, normalized: frozen, rules_version: 1,
    created_ms: 1, diverged: false, claim: { status: "claimed", token: 7, attempt: 1, lease_until_ms: Date.now() + 30000 },
  });
const completed = JSON.stringify({ key, status: "completed", attempt: 1, token: 7, response: { ok: true } });
const stub = async (url, init) => {
  if (init.body) JSON.parse(init.body);
  return new Response(url.endsWith("/complete") ? completed : claimed(), { status: 200, headers: { "content-type": "application/json" } });
};
const idem = new Idem({ baseUrl: "http://idem.invalid", token: "t", fetch: stub });
const headers = { authorization: "Bearer t", "content-type": "application/json" };
const post = async (p, body) => (await stub("http://idem.invalid" + p, { method: "POST", headers, body: JSON.stringify(body) })).json();
const effect = () => ({ ok: true });
const ways = {
  client: (ref) => idem.run("pix.cobranca", effect, { ...frozen, referencia_intencao: ref }),
  hand: async (ref) => {
    const doc = await post("/v1/intents", { action: "pix.cobranca", payload: { ...frozen, referencia_intencao: ref }, claim: { lease_ms: 30000, attempt_id: ref } });
    if (doc.claim.status !== "claimed") throw new Error("not claimed");
    await post(`/v1/actions/${doc.key}/complete`, { token: doc.claim.token, response: effect() });
  },
};
const times = { client: [], hand: [] };
for (let i = 0; i < 2000; i++) for (const w in ways) await ways[w](`warm-${i}`);
for (let i = 0; i < n; i++) {
  for (const w of i % 2 ? ["client", "hand"] : ["hand", "client"]) {
    const t = performance.now();
    await ways[w](`b-${i}`);
    times[w].push(performance.now() - t);
  }
}
const q = (xs, p) => [...xs].sort((a, b) => a - b)[Math.floor(p * xs.length)];
for (const w in times) console.log(`${w.padEnd(6)} p50 ${(q(times[w], 0.5) * 1000).toFixed(1)} µs`);
console.log(`client's own time per effect (p50 over by hand): ${((q(times.client, 0.5) - q(times.hand, 0.5)) * 1000).toFixed(1)} µs`);
