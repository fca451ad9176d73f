// Writes ../src/wire.ts from the committed OpenAPI document, or with
// --check fails when the committed file differs from what it would write.
// The client's runtime is hand-written; its types for what idem sends and
// accepts come from here, so a field renamed on the server is a tsc error
// in the client, never a default read at run time.
import { readFileSync, writeFileSync } from "node:fs";
import openapiTS, { astToString } from "openapi-typescript";

// --document and --out let the drift test generate from an altered copy.
const arg = (name) => {
  const i = process.argv.indexOf(name);
  return i < 0 ? undefined : process.argv[i + 1];
};
const document = arg("--document") ?? new URL("../../conformance/openapi.json", import.meta.url);
const target = arg("--out") ?? new URL("../src/wire.ts", import.meta.url);

const HEADER = `// Generated from clients/conformance/openapi.json by clients/typescript/codegen
// (npm ci && npm run generate there). Do not edit: scripts/test-typescript-client
// fails when this file differs from what the generator writes.

`;

const ast = await openapiTS(JSON.parse(readFileSync(document, "utf8")), {
  // `Object` members (a payload, a stored response) hold any JSON object.
  emptyObjectsUnknown: true,
});
const text = HEADER + astToString(ast);

if (process.argv.includes("--check")) {
  let committed = "";
  try {
    committed = readFileSync(target, "utf8");
  } catch {
    // missing: reported below
  }
  if (committed !== text) {
    console.error("clients/typescript/src/wire.ts is stale: run `npm ci && npm run generate` in clients/typescript/codegen");
    process.exit(1);
  }
  console.log("src/wire.ts matches clients/conformance/openapi.json");
} else {
  writeFileSync(target, text);
  console.log(`wrote ${target}`);
}
