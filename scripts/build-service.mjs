/**
 * Builds the service into dist/ (or the directory after --outdir): each module of src/ transpiled
 * on its own to JavaScript with a source map, by esbuild, the way tsx runs them in the tests.
 * Types are checked once, by `npm run typecheck` (tsc -p .); a build that checked them again would
 * be a second full compile of the same sources on every run.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, readdirSync, writeFileSync } from "node:fs";
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

// The commit built, for bridgeline_build_info (src/build-info.ts): "unknown" outside a git checkout.
let commit = "unknown";
try {
  commit = execFileSync("git", ["rev-parse", "HEAD"], {
    cwd: root,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "ignore"],
  }).trim();
} catch {
  // No git, or not a checkout (a release tarball).
}
mkdirSync(outdir, { recursive: true });
writeFileSync(join(outdir, "build-info.json"), `${JSON.stringify({ commit })}\n`);
console.log(`${relative(root, outdir)}: ${entryPoints.length} modules, commit ${commit}`);
