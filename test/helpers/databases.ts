import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before } from "node:test";
import pg from "pg";
import { openPostgresStore, openSqliteStore, type Store } from "../../src/store/database.js";

/** Which store this run of the suite exercises; scripts/run-tests.sh runs the suite once per store. */
export const TEST_STORE: "sqlite" | "postgres" =
  process.env.BRIDGELINE_TEST_STORE === "postgres" ? "postgres" : "sqlite";

/** An administrative connection; each test service gets a database of its own from it. */
export const ADMIN_DATABASE_URL =
  process.env.BRIDGELINE_TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";

let counter = 0;

export interface TestDatabase {
  url: string;
  drop(): Promise<void>;
}

/** Creates an empty PostgreSQL database for one test service, dropped again on close. */
export async function createTestDatabase(): Promise<TestDatabase> {
  counter += 1;
  const name = `bridgeline_test_${process.pid}_${counter}_${Date.now()}`;
  await admin(`create database ${name}`);
  const url = new URL(ADMIN_DATABASE_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: () => admin(`drop database if exists ${name} with (force)`),
  };
}

async function admin(statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: ADMIN_DATABASE_URL });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}

/**
 * A store of the kind this run exercises, for a describe block: opened before its tests, closed (its
 * database dropped, its directory removed) after them. Read `store` inside the tests.
 */
export function storeForTests(name: string): { readonly store: Store } {
  const holder: { store: Store } = { store: undefined as unknown as Store };
  let database: TestDatabase | undefined;
  let dataDir: string | undefined;
  before(async () => {
    if (TEST_STORE === "postgres") {
      database = await createTestDatabase();
      holder.store = await openPostgresStore(database.url);
    } else {
      dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `bridgeline-${name}-`));
      holder.store = await openSqliteStore(dataDir);
    }
  });
  after(async () => {
    await holder.store?.close();
    await database?.drop();
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  });
  return holder;
}
