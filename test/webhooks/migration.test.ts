/**
 * The webhooks migration on a database that already holds notifications: queued messages survive the
 * change (SQLite rebuilds the table), and a message about no conference can then be queued.
 */
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, it } from "node:test";
import SQLite from "better-sqlite3";
import { Kysely, Migrator, PostgresDialect, SqliteDialect } from "kysely";
import pg from "pg";
import { migrate, type StoreDialect } from "../../src/store/database.js";
import { migrationProvider } from "../../src/store/migrations.js";
import type { Database } from "../../src/store/schema.js";
import { createTestDatabase, forEachStore, type TestDatabase } from "../helpers/databases.js";

forEachStore("0007_webhooks migration", (kind) => {
  let database: TestDatabase | undefined;
  let dataDir: string | undefined;
  after(async () => {
    await database?.drop();
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  });

  async function open(): Promise<{ db: Kysely<Database>; dialect: StoreDialect }> {
    if (kind === "postgres") {
      database = await createTestDatabase({ migrated: false });
      const pool = new pg.Pool({ connectionString: database.url, max: 2 });
      return { db: new Kysely<Database>({ dialect: new PostgresDialect({ pool }) }), dialect: "postgres" };
    }
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "bridgeline-migration-"));
    const sqlite = new SQLite(path.join(dataDir, "bridgeline.sqlite3"));
    sqlite.pragma("foreign_keys = ON");
    return {
      db: new Kysely<Database>({ dialect: new SqliteDialect({ database: sqlite }) }),
      dialect: "sqlite",
    };
  }

  it("keeps queued notifications and lets a notification be about no conference", async () => {
    const { db, dialect } = await open();
    try {
      const migrator = new Migrator({ db, provider: migrationProvider(dialect) });
      const before = await migrator.migrateTo("0006_dial_in_handoffs");
      assert.equal(before.error, undefined);
      const queued = {
        created_at: "2030-01-01T00:00:00.000Z",
        conference_id: 12,
        kind: "invitation",
        recipient: "ann@example.com",
        facts: "{}",
        state: "queued",
        attempts: 2,
        next_attempt_at: "2030-01-01T00:05:00.000Z",
      };
      await db.insertInto("notifications").values(queued).execute();
      await migrate({ db, dialect, close: async () => {} });
      const [kept] = await db.selectFrom("notifications").selectAll().execute();
      assert.equal(kept?.id, 1);
      assert.equal(kept?.conference_id, 12);
      assert.equal(kept?.attempts, 2);
      assert.equal(new Date(kept?.next_attempt_at ?? "").toISOString(), queued.next_attempt_at);
      const next = await db
        .insertInto("notifications")
        .values({ ...queued, conference_id: null, kind: "webhook-disabled" })
        .returning("id")
        .executeTakeFirstOrThrow();
      assert.equal(next.id, 2, "ids go on from where they were");
    } finally {
      await db.destroy();
    }
  });
});
