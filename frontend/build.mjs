// Bundle the designer's editors into ../static/js/editor.bundle.js (or the path given as
// the first argument, which CI uses to compare a fresh build with the committed file).
import { build } from "esbuild";
import { readFileSync } from "node:fs";

const out = process.argv[2] || "../static/js/editor.bundle.js";
const lock = JSON.parse(readFileSync(new URL("./package-lock.json", import.meta.url)));
const versions = Object.entries(lock.packages)
  .filter(([path]) => path.startsWith("node_modules/@codemirror/") || path.startsWith("node_modules/@lezer/"))
  .map(([path, info]) => `${path.slice("node_modules/".length)}@${info.version}`)
  .sort()
  .join(", ");

await build({
  entryPoints: [new URL("./src/editor.js", import.meta.url).pathname],
  outfile: out,
  bundle: true,
  minify: true,
  format: "iife",
  target: ["es2020"],
  legalComments: "none",
  // CodeMirror's styles as a constructed style sheet, which the CSP allows (see the file).
  alias: { "style-mod": new URL("./src/vendor/style-mod.js", import.meta.url).pathname },
  charset: "utf8",
  banner: {
    js: `/* Statecraft editor bundle — built by frontend/build.mjs (make assets) from frontend/src and\n   package-lock.json; do not edit. CodeMirror 6 (MIT): ${versions} */`,
  },
});
