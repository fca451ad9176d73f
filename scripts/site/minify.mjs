// Minifies the release site's JS and CSS as cargo-leptos does in a release
// build: swc with compress, mangle and module for wasm-bindgen's JS glue;
// Lightning CSS for the stylesheet, for the browsers of the "defaults"
// browserslist query (Cargo.toml's browserquery).
// Usage: node minify.mjs js|css IN OUT
import { readFile, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const [kind, input, output] = process.argv.slice(2);
if (!["js", "css"].includes(kind) || !input || !output) {
  console.error("usage: node minify.mjs js|css IN OUT");
  process.exit(2);
}

if (kind === "js") {
  const { minify } = require("@swc/core");
  const { code } = await minify(await readFile(input, "utf8"), {
    compress: true,
    mangle: true,
    module: true,
  });
  await writeFile(output, code);
} else {
  const { transform, browserslistToTargets } = require("lightningcss");
  const browserslist = require("browserslist");
  const { code } = transform({
    filename: input,
    code: await readFile(input),
    minify: true,
    targets: browserslistToTargets(browserslist("defaults")),
  });
  await writeFile(output, code);
}
