import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { ConfigError, loadConfig } from "../src/config.js";

const PROJECT_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

describe("loadConfig", () => {
  it("has defaults for every setting", () => {
    assert.deepEqual(loadConfig({}), {
      dataDir: path.resolve("./data"),
      databaseUrl: null,
      host: "0.0.0.0",
      httpsPort: 8443,
      httpPort: null,
      trustedProxies: null,
      tlsCertFile: null,
      tlsKeyFile: null,
      logLevel: "info",
      failedLoginLimit: 10,
      signupLimit: 20,
      throttleWindowSeconds: 900,
    });
  });

  it("treats empty variables as unset", () => {
    const empty = Object.fromEntries(
      [
        "BRIDGELINE_DATA_DIR",
        "BRIDGELINE_DATABASE_URL",
        "BRIDGELINE_HOST",
        "BRIDGELINE_HTTPS_PORT",
        "BRIDGELINE_HTTP_PORT",
        "BRIDGELINE_TRUSTED_PROXIES",
        "BRIDGELINE_TLS_CERT",
        "BRIDGELINE_TLS_KEY",
        "BRIDGELINE_LOG_LEVEL",
        "BRIDGELINE_FAILED_LOGIN_LIMIT",
        "BRIDGELINE_SIGNUP_LIMIT",
        "BRIDGELINE_THROTTLE_WINDOW_SECONDS",
      ].map((name) => [name, ""]),
    );
    assert.deepEqual(loadConfig(empty), loadConfig({}));
  });

  it("reads every variable", () => {
    const config = loadConfig({
      BRIDGELINE_DATA_DIR: "/var/lib/bridgeline",
      BRIDGELINE_DATABASE_URL: "postgresql://bridgeline@db.internal:5432/bridgeline",
      BRIDGELINE_HOST: "127.0.0.1",
      BRIDGELINE_HTTPS_PORT: "443",
      BRIDGELINE_HTTP_PORT: "0",
      BRIDGELINE_TRUSTED_PROXIES: "10.0.0.0/8",
      BRIDGELINE_TLS_CERT: "/etc/bridgeline/cert.pem",
      BRIDGELINE_TLS_KEY: "/etc/bridgeline/key.pem",
      BRIDGELINE_LOG_LEVEL: "warn",
      BRIDGELINE_FAILED_LOGIN_LIMIT: "5",
      BRIDGELINE_SIGNUP_LIMIT: "7",
      BRIDGELINE_THROTTLE_WINDOW_SECONDS: "60",
    });
    assert.deepEqual(config, {
      dataDir: "/var/lib/bridgeline",
      databaseUrl: "postgresql://bridgeline@db.internal:5432/bridgeline",
      host: "127.0.0.1",
      httpsPort: 443,
      httpPort: 0,
      trustedProxies: "10.0.0.0/8",
      tlsCertFile: "/etc/bridgeline/cert.pem",
      tlsKeyFile: "/etc/bridgeline/key.pem",
      logLevel: "warn",
      failedLoginLimit: 5,
      signupLimit: 7,
      throttleWindowSeconds: 60,
    });
  });

  const badValues: Array<[Record<string, string>, string]> = [
    [{ BRIDGELINE_HTTPS_PORT: "abc" }, "BRIDGELINE_HTTPS_PORT"],
    [{ BRIDGELINE_HTTPS_PORT: "70000" }, "BRIDGELINE_HTTPS_PORT"],
    [{ BRIDGELINE_HTTPS_PORT: "-1" }, "BRIDGELINE_HTTPS_PORT"],
    [{ BRIDGELINE_HTTPS_PORT: "80.5" }, "BRIDGELINE_HTTPS_PORT"],
    [{ BRIDGELINE_HTTP_PORT: "http" }, "BRIDGELINE_HTTP_PORT"],
    [{ BRIDGELINE_LOG_LEVEL: "loud" }, "BRIDGELINE_LOG_LEVEL"],
    [{ BRIDGELINE_TLS_CERT: "/etc/bridgeline/cert.pem" }, "BRIDGELINE_TLS_KEY"],
    [{ BRIDGELINE_TLS_KEY: "/etc/bridgeline/key.pem" }, "BRIDGELINE_TLS_CERT"],
    [{ BRIDGELINE_FAILED_LOGIN_LIMIT: "0" }, "BRIDGELINE_FAILED_LOGIN_LIMIT"],
    [{ BRIDGELINE_SIGNUP_LIMIT: "many" }, "BRIDGELINE_SIGNUP_LIMIT"],
    [{ BRIDGELINE_THROTTLE_WINDOW_SECONDS: "1.5" }, "BRIDGELINE_THROTTLE_WINDOW_SECONDS"],
    [{ BRIDGELINE_DATABASE_URL: "mysql://db.internal/bridgeline" }, "BRIDGELINE_DATABASE_URL"],
  ];
  for (const [env, variable] of badValues) {
    it(`refuses ${JSON.stringify(env)}, naming ${variable}`, () => {
      assert.throws(
        () => loadConfig(env),
        (error: unknown) =>
          error instanceof ConfigError && error.variable === variable && error.message.includes(variable),
      );
    });
  }

  it("quotes the refused value", () => {
    assert.throws(() => loadConfig({ BRIDGELINE_LOG_LEVEL: "loud" }), /"loud"/);
  });
});

describe("npm start with a bad configuration", () => {
  let dataDir: string;
  before(() => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "bridgeline-config-"));
  });
  after(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  /** Runs `bridgeline start` with the given variables; stops it if it starts after all. */
  function start(env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
    return new Promise((resolve, reject) => {
      const child = spawn(process.execPath, ["bin/bridgeline.js", "start"], {
        cwd: PROJECT_ROOT,
        env: { PATH: process.env.PATH, BRIDGELINE_DATA_DIR: dataDir, BRIDGELINE_HOST: "127.0.0.1", ...env },
        stdio: ["ignore", "ignore", "pipe"],
      });
      let stderr = "";
      child.stderr.on("data", (chunk) => {
        stderr += String(chunk);
      });
      const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
      child.once("error", reject);
      child.once("close", (code) => {
        clearTimeout(timer);
        resolve({ code, stderr });
      });
    });
  }

  for (const [variable, value] of [
    ["BRIDGELINE_HTTPS_PORT", "abc"],
    ["BRIDGELINE_LOG_LEVEL", "loud"],
  ]) {
    it(`exits non-zero naming ${variable}=${value}`, async () => {
      const { code, stderr } = await start({ [variable as string]: value as string });
      assert.notEqual(code, 0);
      assert.notEqual(code, null, "the process had to be killed: it started despite the bad value");
      assert.match(stderr, new RegExp(`${variable}.*"${value}"`));
      assert.doesNotMatch(stderr, /\n\s+at\s/, "a configuration error is a message, not a stack trace");
    });
  }
});
