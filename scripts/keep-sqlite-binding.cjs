/**
 * better-sqlite3 finds no prebuilt binding this machine can download (GitHub's releases are out of
 * reach), so `npm install` compiles SQLite, about a minute on two cores. This keeps the binding it
 * compiled where prebuild-install looks before downloading (its cache in npm's, under the name the
 * download would have), so the next install on this machine, a clean clone's included, unpacks it
 * instead. A binding for another Node ABI or better-sqlite3 version has another name; an unusable
 * one makes prebuild-install fail and the install compile again, as on a fresh machine.
 */
const { execFileSync } = require("node:child_process");
const fs = require("node:fs");
const { createRequire } = require("node:module");
const path = require("node:path");

const pkgDir = path.dirname(require.resolve("better-sqlite3/package.json"));
const binding = path.join(pkgDir, "build", "Release", "better_sqlite3.node");
const fromPackage = createRequire(path.join(pkgDir, "package.json"));
const pkg = fromPackage("./package.json");
const util = fromPackage("prebuild-install/util");
const options = { ...fromPackage("prebuild-install/rc")(pkg), pkg };
const cached = util.cachedPrebuild(util.getDownloadUrl(options));

if (!fs.existsSync(cached) && fs.existsSync(binding)) {
  fs.mkdirSync(path.dirname(cached), { recursive: true });
  const making = `${cached}.${process.pid}.tmp`;
  execFileSync("tar", ["czf", making, "-C", pkgDir, "build/Release/better_sqlite3.node"]);
  fs.renameSync(making, cached);
  console.log(`kept the compiled SQLite binding for the next install: ${cached}`);
}
