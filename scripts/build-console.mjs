/**
 * Builds the moderator console into console/dist: console.js (Preact app, bundled and minified),
 * console.css and index.html, which the service serves at /console; and the join page (join.js,
 * join.css, join.html), which it serves at /join. Run by `npm install` (prepare).
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
const app = {
  ...common,
  format: "esm",
  target: ["es2020", "chrome90", "firefox90", "safari15"],
  jsx: "automatic",
  jsxImportSource: "preact",
};
await build({ ...app, entryPoints: [join(root, "src/main.tsx")], outfile: join(dist, "console.js") });
await build({ ...common, entryPoints: [join(root, "src/console.css")], outfile: join(dist, "console.css") });
writeFileSync(join(dist, "index.html"), readFileSync(join(root, "index.html")));
await build({ ...app, entryPoints: [join(root, "src/join.tsx")], outfile: join(dist, "join.js") });
await build({ ...common, entryPoints: [join(root, "src/join.css")], outfile: join(dist, "join.css") });
writeFileSync(join(dist, "join.html"), readFileSync(join(root, "join.html")));

/** The console's script may not pass this gzipped (docs/console.md): the build fails above it. */
const CONSOLE_JS_BUDGET = 40 * 1024;
const gzipped = {};
for (const file of ["index.html", "console.js", "console.css", "join.html", "join.js", "join.css"]) {
  const bytes = readFileSync(join(dist, file));
  gzipped[file] = gzipSync(bytes, { level: 9 }).length;
  console.log(`console/dist/${file}: ${bytes.length} bytes, ${gzipped[file]} gzipped`);
}
if (gzipped["console.js"] > CONSOLE_JS_BUDGET) {
  console.error(
    `console/dist/console.js is ${gzipped["console.js"]} bytes gzipped, over its budget of ${CONSOLE_JS_BUDGET}`,
  );
  process.exit(1);
}
