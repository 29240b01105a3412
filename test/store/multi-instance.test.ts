import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { createTestDatabase, postgresOnly, type TestDatabase } from "../helpers/databases.js";
import { createUser, startTestService, type TestService } from "../helpers/service.js";

/*
 * Several instances share one PostgreSQL database (SQLite is the single-instance store, so this
 * file tests PostgreSQL alone).
 */
describe("two instances on one PostgreSQL database", postgresOnly, () => {
  let database: TestDatabase;
  let first: TestService;
  let second: TestService;
  let user: Awaited<ReturnType<typeof createUser>>;

  before(async () => {
    database = await createTestDatabase();
    first = await startTestService({ databaseUrl: database.url });
    second = await startTestService({ databaseUrl: database.url });
    user = await createUser(
      first,
      '<phone-numbers type="array"><phone-number><subscriber-number>604-555-0100</subscriber-number></phone-number></phone-numbers>',
    );
  });
  after(async () => {
    await first?.close();
    await second?.close();
    await database?.drop();
  });

  it("answers every request consistently from either instance", async () => {
    const created = await second.request("POST", `/users/${user.id}/conferences`, {
      auth: user.auth,
      body: "<conference><name>Shared</name><scheduled-to-start-at>2030-01-01T10:00:00Z</scheduled-to-start-at></conference>",
    });
    assert.equal(created.status, 201);
    const location = created.headers.location as string;
    const [fromFirst, fromSecond] = await Promise.all([
      first.request("GET", location, { auth: user.auth }),
      second.request("GET", location, { auth: user.auth }),
    ]);
    assert.equal(fromFirst.status, 200);
    assert.equal(fromFirst.text, fromSecond.text);
    const userFromSecond = await second.request("GET", `/users/${user.id}`, { auth: user.auth });
    assert.equal(userFromSecond.text, user.response.text);
  });

  it("lets exactly one of two concurrent PUTs with the same lock-version win", async () => {
    for (let round = 0; round < 10; round++) {
      const shown = await first.request("GET", `/users/${user.id}`, { auth: user.auth });
      const lockVersion = (shown.xml.user as Record<string, { "#text": string }>)["lock-version"]?.["#text"];
      const body = (name: string) =>
        `<user><name>${name}</name><lock-version>${lockVersion}</lock-version></user>`;
      const results = await Promise.all([
        first.request("PUT", `/users/${user.id}`, { auth: user.auth, body: body(`First ${round}`) }),
        second.request("PUT", `/users/${user.id}`, { auth: user.auth, body: body(`Second ${round}`) }),
      ]);
      const statuses = results.map((r) => r.status).sort();
      assert.deepEqual(statuses, [200, 409], `round ${round}: ${results.map((r) => r.text).join("\n")}`);
      const winner = results.find((r) => r.status === 200);
      const after = await second.request("GET", `/users/${user.id}`, { auth: user.auth });
      assert.match(
        after.text,
        new RegExp(`<lock-version type="integer">${Number(lockVersion) + 1}</lock-version>`),
      );
      assert.match(
        after.text,
        new RegExp(`<name>${winner === results[0] ? "First" : "Second"} ${round}</name>`),
      );
    }
  });

  it("admits only one moderator when two instances add one at the same moment", async () => {
    const created = await first.request("POST", `/users/${user.id}/conferences`, {
      auth: user.auth,
      body: "<conference><name>Race</name><scheduled-to-start-at>2030-01-01T10:00:00Z</scheduled-to-start-at><no-moderator>true</no-moderator></conference>",
    });
    const attendees = `${created.headers.location as string}/attendees`;
    const body = (n: number) =>
      `<attendee><phone-number>604-555-01${n}</phone-number><moderator>true</moderator></attendee>`;
    const results = await Promise.all([
      first.request("POST", attendees, { auth: user.auth, body: body(11) }),
      second.request("POST", attendees, { auth: user.auth, body: body(12) }),
    ]);
    assert.deepEqual(results.map((r) => r.status).sort(), [201, 422]);
    const list = await first.request("GET", `${attendees}?moderator=true`, { auth: user.auth });
    assert.equal((list.text.match(/<attendee>/g) ?? []).length, 1);
  });

  it("writes a user and its parts as one transaction: a failing part leaves nothing changed", async () => {
    const before = await first.request("GET", `/users/${user.id}`, { auth: user.auth });
    const failing = await second.request("PUT", `/users/${user.id}`, {
      auth: user.auth,
      body: `<user><name>Half Written</name><address><street-address>1 Main St</street-address><location>Vancouver</location><subdivision>BC</subdivision><country>CA</country><postal-code>V6B 1A1</postal-code></address>
        <phone-numbers type="array"><phone-number><id>999999</id><subscriber-number>604-555-0100</subscriber-number></phone-number></phone-numbers></user>`,
    });
    assert.equal(failing.status, 422);
    const afterFailure = await first.request("GET", `/users/${user.id}`, { auth: user.auth });
    assert.equal(afterFailure.text, before.text);
  });
});
