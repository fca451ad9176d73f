// The client's API beyond the shared scenarios: bad input refused before
// any effect, answers outside the protocol named, event claims, and the
// effect's signal aborted before a lease could be lost.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { createServer } from "node:http";
import { Idem, OutcomeTooLarge, ProblemError, Uncertain, Unavailable, Unprocessable, minorUnits } from "idem-client";
import { backends, faultProxy, ledger, pix, serve } from "./support.mjs";

const [sqlite] = backends();
let server;
let token;
const ref = (name) => `${name}-${Math.random().toString(16).slice(2, 12)}`;

before(async () => {
  server = await serve(sqlite);
  token = server.newTenant("tsclient");
});
after(async () => {
  await server?.stop();
});

describe("money never passes through a Number", () => {
  test("an amount's exact decimal text, and its exact minor units", async () => {
    const idem = new Idem({ baseUrl: server.url, token });
    const reference = ref("decimal");
    // 2^53 + 1 and change: a Number reads 9007199254740994. Recorded as
    // JSON text with the number literal, as a producer in another language
    // would send it.
    const body = `{"action":"pix.cobranca","payload":{"cliente_id":"c-1","valor":9007199254740993.07,"chave_pix_destino":"fulano@example.com","referencia_intencao":"${reference}"}}`;
    const r = await fetch(`${server.url}/v1/intents`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body,
    });
    assert.equal(r.status, 201, await r.text());
    const seen = [];
    const out = await idem.run(
      "pix.cobranca",
      (intent) => {
        seen.push(intent.decimal("valor"), intent.decimal("/valor"), intent.decimal("cliente_id"), intent.decimal("nothing"));
        assert.notEqual(String(intent.payload.valor), "9007199254740993.07", "a Number cannot hold it");
        return { cents: String(minorUnits(intent.decimal("valor"), 2)) };
      },
      async () => {
        throw new Error("frozen already: the model is not called");
      },
      { reference },
    );
    assert.deepEqual(seen, ["9007199254740993.07", "9007199254740993.07", "c-1", undefined]);
    assert.equal(out.response.cents, "900719925474099307");
  });

  test("minorUnits is exact, and refuses what is not a whole number of minor units", () => {
    assert.equal(minorUnits("19.99", 2), 1999n);
    assert.equal(minorUnits("180", 2), 18000n);
    assert.equal(minorUnits("2.750", 3), 2750n);
    assert.equal(minorUnits("1.00", 0), 1n, "zeros past the minor unit name no fraction");
    assert.throws(() => minorUnits("1.50", 0), RangeError);
    assert.equal(minorUnits("95", 0), 95n);
    assert.equal(minorUnits("-0.10", 2), -10n);
    assert.throws(() => minorUnits("19.999", 2), RangeError);
    assert.throws(() => minorUnits("1e3", 2), RangeError);
    assert.throws(() => minorUnits("R$ 1,20", 2), RangeError);
  });
});

describe("bad input", () => {
  test("the constructor names what is missing", () => {
    assert.throws(() => new Idem({ baseUrl: "", token: "t" }), /baseUrl is required/);
    assert.throws(() => new Idem({ baseUrl: "http://x", token: "" }), /token is required/);
  });

  test("a wrong candidate or a missing reference throws before any effect", async () => {
    const idem = new Idem({ baseUrl: server.url, token });
    let ran = 0;
    const charge = idem.once("pix.cobranca", () => (ran += 1));
    await assert.rejects(charge("not an object"), TypeError);
    await assert.rejects(charge([1, 2]), TypeError);
    await assert.rejects(charge(() => pix("x")), /needs \{ reference \}/);
    assert.throws(() => idem.once("pix.cobranca", () => 1, { leaseMs: 0 }), /leaseMs/);
    assert.throws(() => idem.once("pix.cobranca", () => 1, { onInFlight: "later" }), /onInFlight/);
    assert.equal(ran, 0);
    assert.deepEqual(await ledger(server.url, token), []);
  });

  test("timeoutMs that is not a positive number is refused naming it", () => {
    for (const timeoutMs of [0, -1, Number.NaN, Infinity, "30000"]) {
      assert.throws(() => new Idem({ baseUrl: server.url, token, timeoutMs }), /timeoutMs must be a positive number/);
    }
  });

  test("a server that never answers: each try ends at timeoutMs, Unavailable, nothing ran", async () => {
    // Accepts the connection and reads the request, never answers.
    const held = [];
    const mute = createServer((req) => held.push(req));
    await new Promise((ok) => mute.listen(0, "127.0.0.1", ok));
    try {
      const idem = new Idem({ baseUrl: `http://127.0.0.1:${mute.address().port}`, token, timeoutMs: 200, maxRetries: 1 });
      let ran = 0;
      const started = Date.now();
      await assert.rejects(idem.run("pix.cobranca", () => (ran += 1), pix(ref("mute"))), (e) => {
        assert.ok(e instanceof Unavailable, String(e));
        assert.match(e.detail, /did not answer within 200 ms/);
        return true;
      });
      const took = Date.now() - started;
      // Two tries of 200 ms (a tick of 20 ms late at most) and one backoff.
      assert.ok(took >= 400 && took < 2500, `took ${took} ms`);
      assert.equal(held.length, 2);
      assert.equal(ran, 0);
    } finally {
      mute.closeAllConnections();
      await new Promise((ok) => mute.close(ok));
    }
  });

  test("an answer outside the protocol is named, never read as a success", async () => {
    const fake = async () => new Response("<html>proxy error</html>", { status: 200 });
    const idem = new Idem({ baseUrl: server.url, token, fetch: fake });
    let ran = 0;
    await assert.rejects(idem.run("pix.cobranca", () => (ran += 1), pix(ref("odd"))), (e) => {
      assert.ok(e instanceof ProblemError);
      assert.match(e.detail, /not JSON/);
      return true;
    });
    assert.equal(ran, 0);
  });
});

describe("outcomes over the server's limit", () => {
  for (const extra of [16, 200_000]) {
    test(`a result ${extra} bytes over 1 MiB is uncertain, never bad input`, async () => {
      const idem = new Idem({ baseUrl: server.url, token });
      const payload = pix(ref(`huge-${extra}`));
      const charge = () => ({ receipt: "r".repeat(2 ** 20 + extra) });
      await assert.rejects(idem.run("pix.cobranca", charge, payload), (e) => {
        assert.ok(e instanceof OutcomeTooLarge, String(e));
        assert.ok(!(e instanceof Unprocessable));
        assert.equal(e.status, 413);
        assert.equal(e.limit, 2 ** 20);
        // Just over and far over: the server read the token and marked it.
        assert.equal(e.markedUncertain, true);
        return true;
      });
      await assert.rejects(idem.run("pix.cobranca", charge, payload), Uncertain);
    });
  }
});

describe("event claims", () => {
  test("a second delivery is a duplicate; a failed block releases the event", async () => {
    const idem = new Idem({ baseUrl: server.url, token });
    const id = ref("evt");
    const first = await idem.events.claim("rabbitmq", id, { leaseMs: 30_000 });
    assert.equal(first.duplicate, false);
    await first.complete();
    assert.equal((await idem.events.claim("rabbitmq", id)).duplicate, true);

    const other = ref("evt");
    await assert.rejects(idem.events.run("rabbitmq", other, () => {
      throw new Error("the work failed");
    }), /the work failed/);
    const again = await idem.events.claim("rabbitmq", other);
    assert.equal(again.duplicate, false, "released for redelivery");
    assert.equal(again.previous, "released");
    // `await using` calls this at the end of its block: not completed, so released.
    await again[Symbol.asyncDispose]();
    const third = await idem.events.run("rabbitmq", other, () => "done");
    assert.deepEqual(third, { duplicate: false, value: "done" });
    assert.deepEqual(await idem.events.run("rabbitmq", other, () => "twice"), { duplicate: true });
  });
});

describe("the lease", () => {
  test("the effect's signal aborts before the lease can be lost, and the action is uncertain", async () => {
    const proxy = await faultProxy(server.url);
    proxy.add({ method: "POST", path: "/renew$", fault: "503", times: 1000 });
    try {
      const idem = new Idem({ baseUrl: proxy.url, token, maxRetries: 0 });
      const reference = ref("abort");
      let abortedAt = 0;
      let deadline = 0;
      await assert.rejects(
        idem.run("pix.cobranca", (intent, { signal }) => {
          deadline = intent.deadline.getTime();
          return new Promise((_, reject) => {
            signal.addEventListener("abort", () => {
              abortedAt = Date.now();
              reject(signal.reason);
            });
          });
        }, pix(reference), { leaseMs: 600 }),
        /lease/,
      );
      assert.ok(abortedAt > 0 && abortedAt < deadline, `aborted at ${abortedAt}, deadline ${deadline}`);
      const plain = new Idem({ baseUrl: server.url, token });
      await assert.rejects(plain.run("pix.cobranca", () => 1, pix(reference), { onInFlight: "raise" }), Uncertain);
    } finally {
      await proxy.close();
    }
  });
});
