/**
 * Compiles the TypeScript once for a run of the suite: a copy of the tree in .test-build/tree (the files
 * the tests read by path, fixtures, the console and dist/ included; node_modules linked) with each
 * module of src/, test/, bench/ and scripts/ transpiled by esbuild beside its source, so that every
 * test process runs plain JavaScript instead of loading tsx and transpiling again (about a second
 * of CPU per test file that loads the service). Types are checked once, by `npm run typecheck`.
 */
import { cpSync, existsSync, mkdirSync, readdirSync, rmSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = fileURLToPath(new URL("..", import.meta.url));
const BUILD_DIR = ".test-build";
const out = join(root, BUILD_DIR, "tree");
const LEFT_OUT = new Set([".git", "node_modules", BUILD_DIR, "data", ".tmp"]);

rmSync(join(root, BUILD_DIR), { recursive: true, force: true });
mkdirSync(out, { recursive: true });
// The tests read the shared RFC 4475 corpus beside the project (../shared): beside the copy too.
const shared = join(root, "..", "shared");
if (existsSync(shared)) symlinkSync(shared, join(root, BUILD_DIR, "shared"), "dir");
for (const entry of readdirSync(root)) {
  if (!LEFT_OUT.has(entry))
    cpSync(join(root, entry), join(out, entry), { recursive: true, preserveTimestamps: true });
}
symlinkSync(join(root, "node_modules"), join(out, "node_modules"), "dir");

const entryPoints = ["src", "test", "bench", "scripts"].flatMap((dir) =>
  readdirSync(join(root, dir), { recursive: true, encoding: "utf8" })
    .filter((file) => file.endsWith(".ts") && !file.endsWith(".d.ts"))
    .map((file) => join(root, dir, file)),
);
await build({
  entryPoints,
  outdir: out,
  outbase: root,
  format: "esm",
  platform: "node",
  target: "node20",
  sourcemap: "inline",
  tsconfig: join(root, "tsconfig.json"),
  logLevel: "warning",
});
console.log(`${BUILD_DIR}/tree: ${entryPoints.length} modules`);
