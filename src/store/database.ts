import fs from "node:fs";
import path from "node:path";
import SQLite from "better-sqlite3";
import { Kysely, Migrator, SqliteDialect } from "kysely";
import { migrationProvider } from "./migrations.js";
import type { Database } from "./schema.js";

export type StoreDialect = "sqlite" | "postgres";

export interface Store {
  db: Kysely<Database>;
  dialect: StoreDialect;
  close(): Promise<void>;
}

export async function migrate(store: Store): Promise<void> {
  const migrator = new Migrator({ db: store.db, provider: migrationProvider(store.dialect) });
  const { error, results } = await migrator.migrateToLatest();
  const failed = results?.find((r) => r.status === "Error");
  if (error || failed) {
    throw new Error(`database migration ${failed?.migrationName ?? ""} failed: ${String(error)}`);
  }
}

/** The embedded store: one SQLite file in the data directory. */
export async function openSqliteStore(dataDir: string): Promise<Store> {
  fs.mkdirSync(dataDir, { recursive: true });
  const sqlite = new SQLite(path.join(dataDir, "bridgeline.sqlite3"));
  // WAL lets readers proceed while a write commits; foreign keys are off by default in SQLite.
  sqlite.pragma("journal_mode = WAL");
  sqlite.pragma("foreign_keys = ON");
  sqlite.pragma("busy_timeout = 5000");
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: sqlite }) });
  const store: Store = { db, dialect: "sqlite", close: () => db.destroy() };
  await migrate(store);
  return store;
}
