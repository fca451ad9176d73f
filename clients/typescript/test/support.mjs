// What the tests share: a real `idem serve` (IDEM_BIN, else target/debug or
// target/release under the repository), a tenant per scenario, the demo
// provider as the PSP, and a fault-injecting proxy.
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import http from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";

const ROOT = path.resolve(new URL("../../..", import.meta.url).pathname);

export function binary() {
  for (const b of [process.env.IDEM_BIN, path.join(ROOT, "target/debug/idem"), path.join(ROOT, "target/release/idem")]) {
    if (b && existsSync(b)) return b;
  }
  throw new Error("no idem binary: set IDEM_BIN or build target/debug/idem");
}

function env(databaseUrl) {
  const e = { ...process.env, RUST_LOG: process.env.RUST_LOG ?? "info" };
  if (databaseUrl?.startsWith("postgres") && !e.IDEMPOTENCY_HMAC_KEY) {
    e.IDEMPOTENCY_HMAC_KEY = "idem-client-tests-only-secret-0123456789";
  }
  return e;
}

/** The backends to run on: SQLite always, PostgreSQL when IDEM_TEST_POSTGRES_URL is set. */
export function backends() {
  const out = [{ name: "sqlite", url: null }];
  if (process.env.IDEM_TEST_POSTGRES_URL) out.push({ name: "postgres", url: process.env.IDEM_TEST_POSTGRES_URL });
  return out;
}

/** Starts `idem serve --demo` on a free port; `{ url, newTenant, stop }`. */
export async function serve(backend) {
  const exe = binary();
  const dataDir = mkdtempSync(path.join(tmpdir(), "idem-ts-"));
  let databaseUrl = null;
  let schema = null;
  if (backend.url) {
    schema = "tsclient_" + Math.random().toString(16).slice(2, 14);
    execFileSync("psql", [backend.url, "-qc", `create schema ${schema}`]);
    const sep = backend.url.includes("?") ? "&" : "?";
    databaseUrl = `${backend.url}${sep}options=-c%20search_path%3D${schema}`;
  }
  const db = databaseUrl ? ["--database-url", databaseUrl] : [];
  const newTenant = (name) =>
    execFileSync(exe, ["tenant", "create", name, "--data-dir", dataDir, ...db], { env: env(databaseUrl), stdio: ["ignore", "pipe", "ignore"] }).toString().trim();
  newTenant("ts-setup");
  const proc = spawn(exe, ["serve", "--addr", "127.0.0.1:0", "--data-dir", dataDir, "--demo", ...db], {
    env: env(databaseUrl),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let log = "";
  const url = await new Promise((resolve, reject) => {
    const seen = (chunk) => {
      log += chunk.toString();
      const m = /listening on (http:\/\/[0-9.:]+)/.exec(log);
      if (m) resolve(m[1]);
    };
    proc.stdout.on("data", seen);
    proc.stderr.on("data", seen);
    proc.on("exit", (code) => reject(new Error(`idem serve exited (${code}):\n${log.slice(-4000)}`)));
    setTimeout(() => reject(new Error(`idem serve did not start:\n${log.slice(-4000)}`)), 30_000);
  });
  return {
    url,
    newTenant,
    async stop() {
      proc.kill("SIGTERM");
      await new Promise((r) => proc.once("exit", r));
      rmSync(dataDir, { recursive: true, force: true });
      if (schema) execFileSync("psql", [backend.url, "-qc", `drop schema ${schema} cascade`], { stdio: "ignore" });
    },
  };
}

/** The PSP call a worker makes: the frozen amount, the frozen key. */
export async function pspCharge(url, token, payload, key) {
  const cents = Math.round(Number(payload.valor) * 100);
  const res = await fetch(url + "/v1/demo/charges", {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "idempotency-key": key, "content-type": "application/json" },
    body: JSON.stringify({ amount_cents: cents, currency: "BRL", customer: payload.cliente_id }),
  });
  if (!res.ok) throw new Error(`the PSP answered ${res.status}: ${await res.text()}`);
  return res.json();
}

/** The amounts the PSP charged for the tenant, in cents. */
export async function ledger(url, token) {
  const res = await fetch(url + "/v1/demo/ledger", { headers: { authorization: `Bearer ${token}` } });
  return (await res.json()).charges.map((c) => c.amount_cents);
}

export function pix(reference, valor = "180.00") {
  return { cliente_id: "c-1", valor, chave_pix_destino: "fulano@example.com", referencia_intencao: reference };
}

/**
 * A fault-injecting proxy in front of idem: it forwards every request, and
 * for those a rule names it loses the answer after the server acted (the
 * connection is destroyed) or answers 503 instead of forwarding.
 */
export async function faultProxy(upstream) {
  const rules = [];
  const server = http.createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const body = Buffer.concat(chunks);
    const rule = rules.find((r) => r.times > 0 && r.method === req.method && new RegExp(r.path).test(req.url));
    if (rule) rule.times -= 1;
    if (rule?.fault === "503") {
      res.writeHead(503, { "content-type": "application/problem+json", "retry-after": "0" });
      res.end('{"type":"urn:idem:problem:unavailable","title":"injected","status":503}');
      return;
    }
    const headers = { ...req.headers };
    delete headers.host;
    delete headers["content-length"];
    delete headers.connection;
    const up = await fetch(upstream + req.url, { method: req.method, headers, body: req.method === "GET" ? undefined : body });
    const text = Buffer.from(await up.arrayBuffer());
    if (rule?.fault === "lose_answer") {
      req.socket.destroy();
      return;
    }
    const out = { "content-type": up.headers.get("content-type") ?? "application/json" };
    if (up.headers.get("retry-after")) out["retry-after"] = up.headers.get("retry-after");
    res.writeHead(up.status, out);
    res.end(text);
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    add(rule) {
      rules.push({ times: 1, ...rule });
    },
    close: () => new Promise((r) => { server.closeAllConnections?.(); server.close(r); }),
  };
}
