// The caller's OpenTelemetry trace context goes with every call to idem
// (`@opentelemetry/api`, an optional peer dependency, registered here the
// way an application does with the Node SDK), and never into the key: two
// attempts in two traces charge once. Without an active span, no header.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { trace } from "@opentelemetry/api";
import { NodeTracerProvider } from "@opentelemetry/sdk-trace-node";
import { Idem } from "idem-client";
import { backends, ledger, pix, pspCharge, serve } from "./support.mjs";

const [sqlite] = backends();
let server;
let token;

before(async () => {
  // The W3C trace-context propagator and an async-local context manager.
  new NodeTracerProvider().register();
  server = await serve(sqlite);
  token = server.newTenant("tstrace");
});
after(async () => {
  await server?.stop();
});

test("every call carries the active span's traceparent; two traces, one charge", async () => {
  const seen = [];
  const recording = (url, init) => {
    seen.push(new Headers(init.headers).get("traceparent"));
    return fetch(url, init);
  };
  const idem = new Idem({ baseUrl: server.url, token, fetch: recording });
  const charge = idem.once("pix.cobranca", (intent) => pspCharge(server.url, token, intent.payload, intent.key));
  const reference = `traced-${Math.random().toString(16).slice(2, 12)}`;
  const tracer = trace.getTracer("checkout");
  for (const attempt of [1, 2]) {
    await tracer.startActiveSpan(`attempt ${attempt}`, async (span) => {
      const { traceId, spanId } = span.spanContext();
      const from = seen.length;
      await charge(pix(reference));
      span.end();
      const sent = seen.slice(from);
      assert.ok(sent.length > 0);
      for (const t of sent) assert.match(t ?? "", new RegExp(`^00-${traceId}-${spanId}-0[0-9a-f]$`));
    });
  }
  assert.equal((await ledger(server.url, token)).length, 1, "the trace context is never part of the key");
  const from = seen.length;
  await charge(pix(`untraced-${Math.random().toString(16).slice(2, 12)}`));
  assert.deepEqual(seen.slice(from).filter((t) => t !== null), [], "no active span: no header");
});
