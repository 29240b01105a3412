/**
 * Installs that keep working on a newer npm: every dependency whose install script must run (a
 * native module compiled by node-gyp, esbuild's binary check) is approved in package.json's
 * `allowScripts`. npm 11.16 and later print a warning for each one that is not, and npm 12 skips
 * their scripts, which would leave better-sqlite3 with no compiled module.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

test("no installed dependency has an install script that allowScripts does not cover", () => {
  // The read-only listing of what `npm install` warns about.
  const pending = execFileSync("npm", ["approve-scripts", "--allow-scripts-pending"], {
    cwd: ROOT,
    encoding: "utf8",
  });
  assert.match(pending, /No packages with unreviewed install scripts/, pending);
});
