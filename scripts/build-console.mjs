/**
 * Builds the moderator console into console/dist: console.js (Preact app, bundled and minified),
 * console.css and index.html, which the service serves at /console; and the join page (join.js,
 * join.css, join.html), which it serves at /join; and the API reference (docs/: index.html, Redoc's
 * standalone bundle, docs.js), which it serves at /docs. Run by `npm install` (prepare).
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
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

// Redoc's standalone bundle, copied as it ships but for what would reach another host: the logo
// of its menu's "API docs by Redocly" link is an image on Redocly's CDN (an empty src loads
// nothing, and the bundle drops the image when it fails), and the source-map comment names a map
// this build does not ship. Both are checked for, so that a Redoc whose bundle changed fails here.
const docsDist = join(dist, "docs");
mkdirSync(docsDist, { recursive: true });
const REDOC_LOGO = 'src:"https://cdn.redoc.ly/redoc/logo-mini.svg"';
const SOURCE_MAP_COMMENT = "\n//# sourceMappingURL=redoc.standalone.js.map";
const redoc = readFileSync(
  createRequire(import.meta.url).resolve("redoc/bundles/redoc.standalone.js"),
  "utf8",
);
if (redoc.split(REDOC_LOGO).length !== 2 || !redoc.endsWith(SOURCE_MAP_COMMENT))
  throw new Error("redoc.standalone.js has changed: check what it loads from other hosts");
writeFileSync(
  join(docsDist, "redoc.standalone.js"),
  redoc.replace(REDOC_LOGO, 'src:""').slice(0, -SOURCE_MAP_COMMENT.length),
);
await build({
  ...common,
  format: "iife",
  target: app.target,
  entryPoints: [join(root, "src/docs.ts")],
  outfile: join(docsDist, "docs.js"),
});
writeFileSync(join(docsDist, "index.html"), readFileSync(join(root, "docs.html")));

/** The console's script may not pass this gzipped (docs/console.md): the build fails above it. */
const CONSOLE_JS_BUDGET = 40 * 1024;
const gzipped = {};
// Scripts and styles are also written gzipped (file.gz), which the service sends to browsers that
// take gzip (src/api/routes/console.ts, sendFile).
for (const file of ["index.html", "console.js", "console.css", "join.html", "join.js", "join.css"]) {
  const bytes = readFileSync(join(dist, file));
  const compressed = gzipSync(bytes, { level: 9 });
  if (!file.endsWith(".html")) writeFileSync(join(dist, `${file}.gz`), compressed);
  gzipped[file] = compressed.length;
  console.log(`console/dist/${file}: ${bytes.length} bytes, ${gzipped[file]} gzipped`);
}
if (gzipped["console.js"] > CONSOLE_JS_BUDGET) {
  console.error(
    `console/dist/console.js is ${gzipped["console.js"]} bytes gzipped, over its budget of ${CONSOLE_JS_BUDGET}`,
  );
  process.exit(1);
}
for (const file of ["index.html", "redoc.standalone.js", "docs.js"]) {
  const bytes = readFileSync(join(docsDist, file));
  const compressed = gzipSync(bytes, { level: 9 });
  if (!file.endsWith(".html")) writeFileSync(join(docsDist, `${file}.gz`), compressed);
  console.log(`console/dist/docs/${file}: ${bytes.length} bytes, ${compressed.length} gzipped`);
}
