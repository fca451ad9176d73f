// Every example in examples/ (compiled by `npm run build:examples`, strict,
// against the package's own types) runs as the book shows it, against a
// real idem serve, each on a tenant of its own.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { after, before, test } from "node:test";
import { promisify } from "node:util";
import { backends, serve } from "./support.mjs";

const run = promisify(execFile);
const OUT = new URL("../target/examples/", import.meta.url);
let server;

before(async () => {
  server = await serve(backends()[0]);
});
after(async () => {
  await server?.stop();
});

const cases = {
  "charge_once.js": /^ch_\w+ charged 18000 cents; replayed: true$/,
  "lazy_candidate.js": /^model calls: 1 charged: 1234.50 replayed: true$/,
  "reconcile.js": /^uncertain: [0-9a-f]{12}\nreconciled: true charge: ch_$/,
  "events.js": /^handled: m-1$/,
  // The agent frameworks: the model asks twice, the provider charges once.
  "langchain_agent.js": /^call_1 false charged 18000 cents, charge (ch_\w+)\ncall_2 true charged 18000 cents, charge \1$/,
  "ai_sdk_agent.js": /^call_1 false charged 18000 cents, charge (ch_\w+)\ncall_2 true charged 18000 cents, charge \1$/,
};

for (const [file, want] of Object.entries(cases)) {
  test(`examples/${file.replace(/\.js$/, ".ts")}`, async () => {
    const path = new URL(file, OUT).pathname;
    assert.ok(existsSync(path), `${path} is not built: npm run build:examples`);
    const token = server.newTenant(`ex${Math.random().toString(16).slice(2, 12)}`);
    const { stdout } = await run(process.execPath, [path], { env: { ...process.env, IDEM_URL: server.url, IDEM_TOKEN: token } });
    assert.match(stdout.trim(), want);
  });
}

test("the README's example is the tested file's", () => {
  const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");
  const source = readFileSync(new URL("../examples/charge_once.ts", import.meta.url), "utf8");
  const anchored = source.split("// ANCHOR: once\n")[1].split("// ANCHOR_END: once")[0];
  assert.ok(readme.includes(anchored.trim()), "README.md's block differs from examples/charge_once.ts");
});

test("every snippet the book shows is a whole program: imports, constructor, all", () => {
  for (const file of Object.keys(cases)) {
    const source = readFileSync(new URL(`../examples/${file.replace(/\.js$/, ".ts")}`, import.meta.url), "utf8");
    const [, name] = /^\/\/ ANCHOR: (\w+)$/m.exec(source) ?? [];
    assert.ok(name, `${file}: no anchor`);
    const block = source.split(`// ANCHOR: ${name}\n`)[1].split(`// ANCHOR_END: ${name}`)[0];
    assert.match(block, /^import /, file);
    assert.match(block, /^import \{[^}]*\bIdem\b[^}]*\} from "idem-client";$/m, file);
    assert.match(block, /new Idem\(\{ baseUrl: /, file);
  }
});
