/**
 * The failed-login, sign-up and wrong-PIN limits hold across instances: two instances on one
 * PostgreSQL database, attempts spread over both, and the limit is reached at the limit, not at twice
 * it (each instance alone would still be under it). Wrong PINs are typed by real SIPp callers.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { loadConfig } from "../../src/config.js";
import { createTestDatabase, TEST_STORE, type TestDatabase } from "../helpers/databases.js";
import { murmur, sippCaller } from "../helpers/dial-in-caller.js";
import {
  createUser,
  signupXml,
  startTestService,
  type TestResponse,
  type TestService,
} from "../helpers/service.js";
import { rtpPortRange, Sipp, skipWithout } from "../helpers/sipp.js";

const ACCESS_NUMBER = "+16045550199";
const LIMIT = 3;
const WRONG_PIN_LIMIT = 2;

describe("limits over two instances on one PostgreSQL database", {
  skip: TEST_STORE !== "postgres" && "needs PostgreSQL (SQLite is one instance)",
}, () => {
  let database: TestDatabase;
  const instances: TestService[] = [];
  const dir = mkdtempSync(join(tmpdir(), "bridgeline-limits-"));
  const cleanups: Array<() => Promise<unknown>> = [];

  before(async () => {
    database = await createTestDatabase();
    for (let i = 0; i < 2; i++) {
      instances.push(
        await startTestService({
          databaseUrl: database.url,
          failedLoginLimit: LIMIT,
          signupLimit: LIMIT,
          sip: {
            ...loadConfig({}).sip,
            bindAddress: "127.0.0.1",
            port: 0,
            rtpPorts: rtpPortRange(),
            accessNumbers: [ACCESS_NUMBER],
          },
          conferences: { ...loadConfig({}).conferences, wrongPinLimit: WRONG_PIN_LIMIT },
        }),
      );
    }
  });
  after(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
    for (const instance of instances) await instance.close();
    await database?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  const instance = (index: number) => instances[index % 2] as TestService;
  const assertThrottled = (response: TestResponse, what: string) => {
    assert.equal(response.status, 429, `${what}: ${response.text}`);
    assert.match(response.text, /<errors>\s*<error>Too many attempts/);
    assert.ok(Number(response.headers["retry-after"]) > 0, `${what}: Retry-After`);
    assert.equal(response.headers["x-ratelimit-limit"], undefined, "no headers beyond what clients had");
  };

  it(`locks an address out after ${LIMIT} failed logins, wherever each was made`, async () => {
    const user = await createUser(instance(0));
    const wrong: [string, string] = [user.auth[0], "wrong password"];
    for (let attempt = 0; attempt < LIMIT; attempt++) {
      const response = await instance(attempt).request("GET", "/current", { auth: wrong });
      assert.equal(response.status, 401, `failure ${attempt + 1}, on instance ${attempt % 2}`);
    }
    // Each instance saw at most two failures: only a shared count has reached three.
    assertThrottled(await instance(0).request("GET", "/current", { auth: user.auth }), "first instance");
    assertThrottled(await instance(1).request("GET", "/current", { auth: user.auth }), "second instance");
  });

  it(`refuses the sign-up after ${LIMIT} from one address, wherever each was made`, async () => {
    // The first test's createUser was the first sign-up.
    const made = await instance(1).request("POST", "/users", { body: signupXml("second@example.com") });
    assert.equal(made.status, 201, made.text);
    const refused = await instance(0).request("POST", "/users", {
      body: "<user><name>No e-mail</name></user>",
    });
    assert.equal(refused.status, 422, "a refused sign-up counts too");
    assertThrottled(
      await instance(1).request("POST", "/users", { body: signupXml("late@example.com") }),
      "second instance",
    );
    assertThrottled(
      await instance(0).request("POST", "/users", { body: signupXml("later@example.com") }),
      "first instance",
    );
  });

  it(`refuses a caller's calls after ${WRONG_PIN_LIMIT} wrong PINs typed to different instances`, {
    skip: skipWithout("sipp"),
  }, async () => {
    const guesser = "+16045550177";
    for (const [index, guess] of ["000001#", "000002#"].entries()) {
      const call = await sippCaller({
        sipPort: instance(index).service.sipPort,
        accessNumber: ACCESS_NUMBER,
        from: guesser,
        dir,
        segments: [{ audio: murmur(0.5) }, { events: guess }, { audio: murmur(1) }],
      });
      cleanups.push(() => call.stop());
      await call.expectSuccess();
    }
    for (const [index, service] of instances.entries()) {
      const wrong = service.logs.filter((line) => line.includes('"msg":"dial-in: wrong PIN"'));
      assert.equal(wrong.length, 1, `instance ${index} heard one wrong PIN`);
    }
    for (const [index, service] of instances.entries()) {
      const refused = await Sipp.start({
        scenario: "uac-refused.xml",
        remote: `127.0.0.1:${service.service.sipPort}`,
        keys: { caller: guesser },
        args: ["-s", ACCESS_NUMBER],
      });
      cleanups.push(() => refused.stop());
      await refused.expectSuccess();
      assert.ok(
        service.logs.some((line) =>
          line.includes("dial-in: call refused, too many wrong PINs from this caller"),
        ),
        `instance ${index} refused the caller`,
      );
    }
  });
});
