// `npm install ./clients/typescript` (the README's line) links this folder
// into the project and runs `prepare` in it, but without the package's dev
// dependencies, so the compiler is not there: fetch them from the lock file
// first (npm ci, no scripts), then build dist. In the package's own
// checkout (`npm ci` here, the tests) the compiler is already installed.
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";

const root = new URL("..", import.meta.url).pathname;
if (!existsSync(new URL("../node_modules/.bin/tsc", import.meta.url))) {
  // The outer install's npm_* settings (its prefix, its global flag) are
  // not this install's.
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.toLowerCase().startsWith("npm_")),
  );
  execFileSync("npm", ["ci", "--ignore-scripts", "--no-audit", "--no-fund"], {
    cwd: root,
    env,
    stdio: ["ignore", "inherit", "inherit"],
  });
}
process.chdir(root);
await import("./build.mjs");
