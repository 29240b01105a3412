/**
 * Builds the moderator console into console/dist: console.js (Preact app, bundled and minified),
 * console.css and index.html, which the service serves at /console. Run by `npm install` (prepare).
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { build } from "esbuild";

const root = fileURLToPath(new URL("../console/", import.meta.url));
const dist = join(root, "dist");
mkdirSync(dist, { recursive: true });

const common = { bundle: true, minify: true, legalComments: "none", logLevel: "warning" };
await build({
  ...common,
  entryPoints: [join(root, "src/main.tsx")],
  outfile: join(dist, "console.js"),
  format: "esm",
  target: ["es2020", "chrome90", "firefox90", "safari15"],
  jsx: "automatic",
  jsxImportSource: "preact",
});
await build({ ...common, entryPoints: [join(root, "src/console.css")], outfile: join(dist, "console.css") });
writeFileSync(join(dist, "index.html"), readFileSync(join(root, "index.html")));

for (const file of ["index.html", "console.js", "console.css"]) {
  const bytes = readFileSync(join(dist, file));
  console.log(`console/dist/${file}: ${bytes.length} bytes, ${gzipSync(bytes, { level: 9 }).length} gzipped`);
}
