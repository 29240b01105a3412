/**
 * Credentials an instance has verified are trusted unread for at most CREDENTIALS_RECHECK_MS: a
 * password or e-mail changed on another instance, or an address locked out there, takes effect
 * within that bound; on the instance that made the change, at once. Two instances on one PostgreSQL
 * database.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { CREDENTIALS_RECHECK_MS } from "../../src/api/authentication.js";
import { createTestDatabase, postgresOnly, type TestDatabase } from "../helpers/databases.js";
import { createUser, startTestService, type TestService } from "../helpers/service.js";

const LIMIT = 3;
/** What a loaded machine adds to the bound: two requests and a scheduling delay. */
const SLACK_MS = 500;

describe("verified credentials over two instances on one PostgreSQL database", postgresOnly, () => {
  let database: TestDatabase;
  const instances: TestService[] = [];

  before(async () => {
    database = await createTestDatabase();
    for (let i = 0; i < 2; i++)
      instances.push(
        await startTestService(
          // Tests stand for clients at other addresses with X-Forwarded-For.
          { databaseUrl: database.url, failedLoginLimit: LIMIT, trustedProxies: "127.0.0.1" },
          { store: "postgres" },
        ),
      );
  });
  after(async () => {
    for (const instance of instances) await instance.close();
    await database?.drop();
  });

  const [first, second] = [() => instances[0] as TestService, () => instances[1] as TestService];
  /** Each test's client has an address of its own: the refused answers count as failed logins. */
  const current = (instance: TestService, auth: [string, string], address: string) =>
    instance.request("GET", "/current", { auth, headers: { "x-forwarded-for": address } });

  /**
   * Asks `instance` for /current with `auth` from `address` until it answers `status`, every answer
   * before 200, within CREDENTIALS_RECHECK_MS of `since` (and the slack).
   */
  async function untilAnswered(
    instance: TestService,
    auth: [string, string],
    address: string,
    status: number,
    since: number,
  ): Promise<void> {
    for (;;) {
      const response = await current(instance, auth, address);
      if (response.status === status) return;
      assert.equal(response.status, 200, response.text);
      assert.ok(performance.now() - since < CREDENTIALS_RECHECK_MS + SLACK_MS, `still ${response.status}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  const changeUser = (id: number, auth: [string, string], xml: string) =>
    first().request("PUT", `/users/${id}`, { auth, body: `<?xml version="1.0"?>\n<user>${xml}</user>` });

  it(`refuses a password changed on another instance within ${CREDENTIALS_RECHECK_MS} ms, and takes the new one at once`, async () => {
    const user = await createUser(first());
    const address = "198.51.100.20";
    assert.equal(
      (await current(second(), user.auth, address)).status,
      200,
      "verified on the second instance",
    );
    const newPassword = "battery staple";
    const changed = await changeUser(
      user.id,
      user.auth,
      `<password>${newPassword}</password><password-confirmation>${newPassword}</password-confirmation>`,
    );
    assert.equal(changed.status, 200, changed.text);
    const changedAt = performance.now();
    assert.equal((await current(first(), user.auth, address)).status, 401, "where it was changed, at once");
    await untilAnswered(second(), user.auth, address, 401, changedAt);
    assert.equal((await current(second(), [user.auth[0], newPassword], address)).status, 200);
  });

  it("opens no console session with a password changed on another instance, even within the trust", async () => {
    const user = await createUser(first());
    const address = "198.51.100.30";
    const signIn = (password: string) =>
      second().request("POST", "/console/session", {
        body: JSON.stringify({ email: user.auth[0], password }),
        headers: {
          "content-type": "application/json",
          accept: "application/json",
          "x-forwarded-for": address,
        },
      });
    assert.equal((await signIn(user.auth[1])).status, 200, "signed in on the second instance");
    const newPassword = "battery staple";
    const changed = await changeUser(
      user.id,
      user.auth,
      `<password>${newPassword}</password><password-confirmation>${newPassword}</password-confirmation>`,
    );
    assert.equal(changed.status, 200, changed.text);
    // At once, not within the second of trust: a session would outlive it.
    assert.equal((await signIn(user.auth[1])).status, 401);
    assert.equal((await signIn(newPassword)).status, 200);
  });

  it(`refuses an e-mail changed on another instance within ${CREDENTIALS_RECHECK_MS} ms`, async () => {
    const user = await createUser(first());
    const address = "198.51.100.21";
    assert.equal(
      (await current(second(), user.auth, address)).status,
      200,
      "verified on the second instance",
    );
    const newEmail = `moved-${user.auth[0]}`;
    const changed = await changeUser(user.id, user.auth, `<email>${newEmail}</email>`);
    assert.equal(changed.status, 200, changed.text);
    const changedAt = performance.now();
    assert.equal((await current(first(), user.auth, address)).status, 401, "where it was changed, at once");
    await untilAnswered(second(), user.auth, address, 401, changedAt);
    assert.equal((await current(second(), [newEmail, user.auth[1]], address)).status, 200);
  });

  it(`refuses the right password from an address locked out on another instance within ${CREDENTIALS_RECHECK_MS} ms`, async () => {
    const user = await createUser(first());
    const address = "198.51.100.22";
    for (const instance of [first(), second()])
      assert.equal((await current(instance, user.auth, address)).status, 200, "verified on both");
    for (let attempt = 0; attempt < LIMIT; attempt++)
      assert.equal((await current(first(), [user.auth[0], "wrong"], address)).status, 401);
    const lockedAt = performance.now();
    assert.equal((await current(first(), user.auth, address)).status, 429, "where it was counted, at once");
    await untilAnswered(second(), user.auth, address, 429, lockedAt);
    assert.equal((await current(second(), user.auth, "198.51.100.23")).status, 200, "another address is not");
  });
});
