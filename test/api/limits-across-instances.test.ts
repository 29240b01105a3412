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
import { createTestDatabase, postgresOnly, type TestDatabase } from "../helpers/databases.js";
import { murmur, sippCaller } from "../helpers/dial-in-caller.js";
import {
  createUser,
  signupXml,
  startTestService,
  type TestResponse,
  type TestService,
} from "../helpers/service.js";
import { conferenceSettings, loopbackSip } from "../helpers/service-settings.js";
import { Sipp, skipWithout } from "../helpers/sipp.js";

const ACCESS_NUMBER = "+16045550199";
const LIMIT = 3;
const WRONG_PIN_LIMIT = 2;

// SQLite is one instance: only PostgreSQL is shared.
describe("limits over two instances on one PostgreSQL database", postgresOnly, () => {
  let database: TestDatabase;
  const instances: TestService[] = [];
  const dir = mkdtempSync(join(tmpdir(), "bridgeline-limits-"));
  const cleanups: Array<() => Promise<unknown>> = [];

  before(async () => {
    database = await createTestDatabase();
    for (let i = 0; i < 2; i++) {
      instances.push(
        await startTestService(
          {
            databaseUrl: database.url,
            failedLoginLimit: LIMIT,
            signupLimit: LIMIT,
            // Tests stand for clients at other addresses with X-Forwarded-For.
            trustedProxies: "127.0.0.1",
            sip: loopbackSip({ accessNumbers: [ACCESS_NUMBER] }),
            conferences: conferenceSettings({ wrongPinLimit: WRONG_PIN_LIMIT }),
          },
          { store: "postgres" },
        ),
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

  it(`checks only ${LIMIT} of 40 wrong passwords sent together to both instances from one address`, async () => {
    const user = await createUser(instance(0));
    const headers = { "x-forwarded-for": "198.51.100.7" };
    const responses = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        instance(i).request("GET", "/current", { auth: [user.auth[0], "guess"], headers }),
      ),
    );
    const statuses = responses.map((response) => response.status);
    assert.equal(statuses.filter((status) => status === 401).length, LIMIT, statuses.join(" "));
    assert.equal(statuses.filter((status) => status === 429).length, 40 - LIMIT);
    const other = await instance(1).request("GET", "/current", {
      auth: user.auth,
      headers: { "x-forwarded-for": "198.51.100.8" },
    });
    assert.equal(other.status, 200, "another address is not locked out");
  });

  it(`refuses the sign-up after ${LIMIT} from one address, wherever each was made`, async () => {
    const headers = { "x-forwarded-for": "198.51.100.9" };
    const signUp = (index: number, body: string) =>
      instance(index).request("POST", "/users", { body, headers });
    assert.equal((await signUp(1, signupXml("first@example.com"))).status, 201);
    assert.equal(
      (await signUp(0, "<user><name>No e-mail</name></user>")).status,
      422,
      "refused ones count too",
    );
    assert.equal((await signUp(1, signupXml("third@example.com"))).status, 201);
    assertThrottled(await signUp(0, signupXml("late@example.com")), "first instance");
    assertThrottled(await signUp(1, signupXml("later@example.com")), "second instance");
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
