/**
 * PostgreSQL slow or silent. Slow: a statement past the database timeout is cancelled by the server
 * and taken for the database unavailable, its connection serving on, while a migration may take
 * longer. Silent: a proxy between the service and the database stops forwarding and keeps every
 * connection open, as a partition does. Requests made meanwhile (more of them than the pool has
 * connections) are answered 503 with Retry-After within the database timeout plus its grace, never
 * left hanging; once the proxy forwards again, the connections left hanging are given up and the
 * API answers 200 with new ones.
 */
import assert from "node:assert/strict";
import { describe, type TestContext, test } from "node:test";
import { sql } from "kysely";
import pg from "pg";
import { openPostgresStore, unreachableReason } from "../../src/store/database.js";
import { createTestDatabase, postgresOnly } from "../helpers/databases.js";
import { databaseBehindProxy } from "../helpers/freezable-proxy.js";
import { createUser, startTestService, type TestResponse } from "../helpers/service.js";
import { until } from "../helpers/until.js";
import { errorMessages } from "../helpers/xml.js";

/** The shortest database timeout: a statement or a wait for a connection, 1 s. */
const TIMEOUT_SECONDS = 1;
/** What a request may take while the database is silent: the timeout, the driver's grace, slack. */
const ANSWER_WITHIN_MS = 3_500;
/** The advisory lock Kysely's migrator takes on PostgreSQL (kysely's postgres-adapter). */
const KYSELY_MIGRATION_LOCK = "3853314791062309107";
/** More requests at once than the pool's 10 connections. */
const CONCURRENT_REQUESTS = 15;

/**
 * What a test set up, undone in reverse order once it ends (passed or failed): each test's own, so
 * that the tests, which run at once, undo theirs at once too (dropping a database takes a second).
 */
function cleanupsOf(t: TestContext): Array<() => Promise<unknown>> {
  const cleanups: Array<() => Promise<unknown>> = [];
  t.after(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  });
  return cleanups;
}

/** The response, or a failure saying it did not come within `ms`. */
async function answerWithin(ms: number, response: Promise<TestResponse>): Promise<TestResponse> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([response, late]);
  } finally {
    clearTimeout(timer);
  }
}

// Each on a database of its own, and each mostly waiting for a timeout to pass: they run at once.
describe("PostgreSQL slow or silent", { concurrency: true }, () => {
  describe("PostgreSQL slower than the database timeout", postgresOnly, () => {
    test("the server cancels the statement, taken for the database unavailable; the connection serves on", async (t) => {
      const cleanups = cleanupsOf(t);
      const database = await createTestDatabase();
      cleanups.push(() => database.drop());
      const store = await openPostgresStore(database.url, { timeoutSeconds: TIMEOUT_SECONDS, poolSize: 1 });
      cleanups.push(() => store.close());
      const failure = await sql`select pg_sleep(${TIMEOUT_SECONDS * 3})`.execute(store.db).then(
        () => assert.fail("the statement ran past the timeout"),
        (error: unknown) => error,
      );
      assert.equal((failure as { code?: string }).code, "57014", String(failure));
      assert.equal(unreachableReason(failure), "no answer in time");
      assert.equal((await sql<{ one: number }>`select 1 as one`.execute(store.db)).rows[0]?.one, 1);
    });
  });

  describe("a migration longer than the database timeout", postgresOnly, () => {
    test("is not bounded by it: start-up waits for another instance's migration to finish", async (t) => {
      const cleanups = cleanupsOf(t);
      const database = await createTestDatabase();
      cleanups.push(() => database.drop());
      // Another instance migrating: it holds the migrator's lock (Kysely's, on PostgreSQL) past the
      // statement and query timeouts.
      const other = new pg.Client({ connectionString: database.url });
      await other.connect();
      cleanups.push(() => other.end());
      await other.query(`select pg_advisory_lock(${KYSELY_MIGRATION_LOCK})`);
      let opened = false;
      const opening = openPostgresStore(database.url, { timeoutSeconds: TIMEOUT_SECONDS }).then((store) => {
        opened = true;
        cleanups.push(() => store.close());
        return store;
      });
      await new Promise((resolve) => setTimeout(resolve, TIMEOUT_SECONDS * 1000 + 1_500));
      assert.equal(opened, false, "the store opened while the other migration held the lock");
      await other.query(`select pg_advisory_unlock(${KYSELY_MIGRATION_LOCK})`);
      const store = await opening;
      assert.equal((await sql<{ one: number }>`select 1 as one`.execute(store.db)).rows[0]?.one, 1);
    });
  });

  describe("PostgreSQL silent behind a frozen proxy", postgresOnly, () => {
    test("requests are answered 503 with Retry-After in bounded time; the pool recovers once it answers", async (t) => {
      const cleanups = cleanupsOf(t);
      const { url, proxy, close } = await databaseBehindProxy();
      cleanups.push(close);
      const api = await startTestService({
        databaseUrl: url,
        databaseTimeoutSeconds: TIMEOUT_SECONDS,
      });
      cleanups.push(() => api.close());
      const owner = await createUser(api);
      assert.equal((await api.request("GET", "/current", { auth: owner.auth })).status, 200);

      proxy.freeze();
      const startedAt = Date.now();
      const answers = await Promise.all(
        Array.from({ length: CONCURRENT_REQUESTS }, () =>
          answerWithin(ANSWER_WITHIN_MS, api.request("GET", "/current", { auth: owner.auth })),
        ),
      );
      const tookMs = Date.now() - startedAt;
      for (const answer of answers) {
        assert.equal(answer.status, 503, answer.text);
        assert.equal(answer.headers["retry-after"], "5");
        assert.match(errorMessages(answer).join(), /^The database is unavailable \(.+\); try again shortly$/);
      }
      assert.ok(tookMs >= TIMEOUT_SECONDS * 1000, `answered in ${tookMs} ms, before the timeout`);

      proxy.thaw();
      await until(
        "the API answering 200 again",
        async () =>
          (await api.request("GET", "/current", { auth: owner.auth })).status === 200 ? true : undefined,
        { timeoutMs: ANSWER_WITHIN_MS },
      );
      assert.ok(proxy.closedWhileSilent > 0, "the connections left hanging were closed");
      assert.ok(
        !api.logs.some((line) => line.includes('"statusCode":500')),
        "no request was answered 500 while the database was silent",
      );
    });
  });
});
