// Builds dist/esm (ES modules) and dist/cjs (CommonJS, marked by a
// package.json of its own), both with their declarations.
import { execFileSync } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";

const tsc = new URL("../node_modules/.bin/tsc", import.meta.url).pathname;
rmSync("dist", { recursive: true, force: true });
execFileSync(tsc, ["-p", "tsconfig.json"], { stdio: "inherit" });
execFileSync(tsc, ["-p", "tsconfig.cjs.json"], { stdio: "inherit" });
mkdirSync("dist/cjs", { recursive: true });
writeFileSync("dist/cjs/package.json", JSON.stringify({ type: "commonjs" }) + "\n");
