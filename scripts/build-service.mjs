/**
 * Builds the service into dist/ (or the directory after --outdir): each module of src/ transpiled
 * on its own to JavaScript with a source map, by esbuild, the way tsx runs them in the tests.
 * Types are checked once, by `npm run typecheck` (tsc -p .); a build that checked them again would
 * be a second full compile of the same sources on every run.
 */
import { readdirSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = fileURLToPath(new URL("..", import.meta.url));
const src = join(root, "src");
const at = process.argv.indexOf("--outdir");
const outdir = at === -1 ? join(root, "dist") : process.argv[at + 1];

const entryPoints = readdirSync(src, { recursive: true, encoding: "utf8" })
  .filter((file) => file.endsWith(".ts") && !file.endsWith(".d.ts"))
  .map((file) => join(src, file));

await build({
  entryPoints,
  outdir,
  outbase: src,
  format: "esm",
  platform: "node",
  target: "node20",
  sourcemap: true,
  tsconfig: join(root, "tsconfig.build.json"),
  logLevel: "warning",
});
console.log(`${relative(root, outdir)}: ${entryPoints.length} modules`);
