/**
 * The compiled build (issue 18): the service and the CLI run from the JavaScript that
 * scripts/build-service.mjs makes of src/, with plain node and no TypeScript loader in the process.
 *
 * The test compiles the current sources into an install of its own in a temporary directory: the
 * build (dist/), bin/, assets/, the console's build and package.json, with node_modules holding
 * only the production dependencies of package-lock.json (hard links to this checkout's copies), so
 * neither tsx nor TypeScript is installed there and none could be loaded, as after
 * `npm ci && npm prune --omit=dev`. It then starts that install's `bin/bridgeline.js start` and
 * talks to it over HTTPS.
 */
import assert from "node:assert/strict";
import { type ChildProcess, execFileSync, spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import https from "node:https";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";
import { until } from "../helpers/until.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

interface LockedPackage {
  dev?: boolean;
  engines?: { node?: unknown };
}

function lockedPackages(): Record<string, LockedPackage> {
  const lock = JSON.parse(fs.readFileSync(path.join(ROOT, "package-lock.json"), "utf8")) as {
    packages: Record<string, LockedPackage>;
  };
  return lock.packages;
}

/** Hard-links (or, across file systems, copies) a file tree. */
function linkTree(from: string, to: string): void {
  fs.mkdirSync(path.dirname(to), { recursive: true });
  try {
    execFileSync("cp", ["-al", from, to]);
  } catch {
    fs.rmSync(to, { recursive: true, force: true });
    execFileSync("cp", ["-a", from, to]);
  }
}

/** node_modules with the production dependencies only, as package-lock.json lists them. */
function installProductionDependencies(app: string): void {
  for (const [location, locked] of Object.entries(lockedPackages())) {
    // Top-level packages only: nested ones come with the package they are nested in.
    if (!/^node_modules\/(@[^/]+\/)?[^/]+$/.test(location) || locked.dev) continue;
    // An optional dependency for another platform is listed but not installed.
    if (fs.existsSync(path.join(ROOT, location)))
      linkTree(path.join(ROOT, location), path.join(app, location));
  }
}

function get(port: number, route: string): Promise<{ status: number; type: string; body: string }> {
  return new Promise((resolve, reject) => {
    https
      .get({ host: "127.0.0.1", port, path: route, rejectUnauthorized: false }, (response) => {
        let body = "";
        response.setEncoding("utf8");
        response.on("data", (chunk) => {
          body += chunk;
        });
        response.once("end", () =>
          resolve({ status: response.statusCode ?? 0, type: String(response.headers["content-type"]), body }),
        );
      })
      .once("error", reject);
  });
}

describe("the compiled build", () => {
  let dir: string;
  let app: string;

  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "bridgeline-compiled-"));
    app = path.join(dir, "app");
    execFileSync(
      process.execPath,
      [path.join(ROOT, "scripts/build-service.mjs"), "--outdir", path.join(app, "dist")],
      { cwd: ROOT, stdio: ["ignore", "inherit", "inherit"] },
    );
    for (const part of ["bin", "assets", "console/dist", "package.json"]) {
      if (fs.existsSync(path.join(ROOT, part))) linkTree(path.join(ROOT, part), path.join(app, part));
    }
    installProductionDependencies(app);
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it("is installed without tsx or TypeScript, which nothing there can load", () => {
    assert.ok(fs.existsSync(path.join(app, "dist/cli.js")));
    assert.ok(fs.existsSync(path.join(app, "node_modules/fastify")));
    for (const loader of ["tsx", "typescript"]) {
      assert.ok(!fs.existsSync(path.join(app, "node_modules", loader)), `${loader} is installed`);
      const attempt = spawnSync(
        process.execPath,
        ["--input-type=module", "-e", `await import("${loader}")`],
        {
          cwd: app,
          env: { PATH: process.env.PATH },
          encoding: "utf8",
        },
      );
      assert.notEqual(attempt.status, 0);
      assert.match(attempt.stderr, /ERR_MODULE_NOT_FOUND/);
    }
  });

  it("runs the CLI", () => {
    const run = spawnSync(
      process.execPath,
      ["bin/bridgeline.js", "parse-time", "tomorrow at noon", "--now", "2024-01-01T00:00:00Z"],
      { cwd: app, env: { PATH: process.env.PATH }, encoding: "utf8" },
    );
    assert.equal(run.stderr, "");
    assert.equal(run.stdout, "2024-01-02T12:00:00Z\n");
    assert.equal(run.status, 0);
  });

  it("finds the voice prompts from the compiled modules", async () => {
    const { prompt } = (await import(
      pathToFileURL(path.join(app, "dist/telephony/media/prompts.js")).href
    )) as {
      prompt(name: string): Int16Array;
    };
    // assets/prompts/ is read relative to the module: from dist/ as from src/.
    assert.ok(prompt("goodbye").length > 0);
  });

  describe("bridgeline start", () => {
    let child: ChildProcess;
    let stdout = "";
    let stderr = "";
    let port: number;

    before(async () => {
      child = spawn(process.execPath, ["bin/bridgeline.js", "start"], {
        cwd: app,
        // Nothing but the settings: no NODE_OPTIONS that could bring a loader in.
        env: {
          PATH: process.env.PATH,
          BRIDGELINE_DATA_DIR: path.join(dir, "data"),
          BRIDGELINE_HOST: "127.0.0.1",
          BRIDGELINE_HTTPS_PORT: "0",
          BRIDGELINE_SIP_ADDRESS: "127.0.0.1",
          BRIDGELINE_SIP_PORT: "0",
          BRIDGELINE_MEDIA_THREADS: "1",
        },
        stdio: ["ignore", "pipe", "pipe"],
      });
      child.stdout?.on("data", (chunk) => {
        stdout += String(chunk);
      });
      child.stderr?.on("data", (chunk) => {
        stderr += String(chunk);
      });
      const started = await until(
        "the compiled service to start",
        async () => {
          if (child.exitCode !== null) throw new Error(`exited with ${child.exitCode}\n${stderr}`);
          return stdout.split("\n").find((line) => line.includes('"bridgeline started"'));
        },
        { timeoutMs: 60_000, detail: () => `${stdout}\n${stderr}` },
      );
      port = (JSON.parse(started) as { httpsPort: number }).httpsPort;
    });
    after(() => {
      if (child.exitCode === null) child.kill("SIGKILL");
    });

    it("runs plain node on bin/bridgeline.js, with no loader", () => {
      const commandLine = fs.readFileSync(`/proc/${child.pid}/cmdline`, "utf8").split("\0").filter(Boolean);
      assert.deepEqual(commandLine, [process.execPath, "bin/bridgeline.js", "start"]);
      const environment = fs.readFileSync(`/proc/${child.pid}/environ`, "utf8").split("\0");
      assert.ok(!environment.some((variable) => variable.startsWith("NODE_OPTIONS=")));
    });

    it("answers GET /billing-packages over HTTPS", async () => {
      const response = await get(port, "/billing-packages");
      assert.equal(response.status, 200);
      assert.match(response.type, /^application\/xml/);
      assert.match(response.body, /<billing-packages/);
    });

    it("is ready: database, SIP sockets and a media thread (a compiled worker) all answer", async () => {
      const response = await get(port, "/health/ready");
      assert.equal(response.status, 200, response.body);
    });

    it("serves the moderator console from its build", async () => {
      const response = await get(port, "/console");
      assert.equal(response.status, 200);
      assert.match(response.body, /<html/i);
    });

    it("reads its certificates again on SIGHUP, and goes on serving", async () => {
      child.kill("SIGHUP");
      await until("the reload logged", async () =>
        stdout.includes('"certificates reloaded: new connections get them"') ? true : undefined,
      );
      assert.equal(child.exitCode, null);
      assert.equal((await get(port, "/health/ready")).status, 200);
    });

    it("stops on SIGTERM", async () => {
      const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      assert.equal(await exited, 0, stderr);
      assert.match(stdout, /"bridgeline stopped"/);
    });
  });

  it("without a build, says how to make one", () => {
    const bare = path.join(dir, "bare");
    linkTree(path.join(ROOT, "bin"), path.join(bare, "bin"));
    const run = spawnSync(process.execPath, ["bin/bridgeline.js", "start"], {
      cwd: bare,
      env: { PATH: process.env.PATH },
      encoding: "utf8",
    });
    assert.equal(run.status, 1);
    assert.match(run.stderr, /dist\/cli\.js is missing: build the service with `npm run build`/);
  });
});

describe("the production dependencies", () => {
  it("each supports every Node.js version package.json promises (its engines field)", () => {
    // semver is there for fastify, which checks its plugins' versions with it.
    const semver = createRequire(import.meta.url)("semver") as {
      minVersion(range: string): { version: string } | null;
      satisfies(version: string, range: string): boolean;
    };
    const promised = (
      JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8")) as {
        engines: { node: string };
      }
    ).engines.node;
    const oldest = semver.minVersion(promised)?.version;
    assert.ok(oldest, promised);
    const refusing = Object.entries(lockedPackages())
      .filter(
        ([location, locked]) => location !== "" && !locked.dev && typeof locked.engines?.node === "string",
      )
      .filter(([, locked]) => !semver.satisfies(oldest, locked.engines?.node as string))
      .map(([location, locked]) => `${location} wants Node ${locked.engines?.node}`);
    assert.deepEqual(refusing, [], `package.json promises Node ${promised}`);
  });
});
