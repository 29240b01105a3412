import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe } from "node:test";
import pg from "pg";
import { loadConfig } from "../../src/config.js";
import { openPostgresStore, openSqliteStore, type Store } from "../../src/store/database.js";
import { loadTlsMaterial } from "../../src/tls.js";

/** The two stores the service runs on: the embedded SQLite file and PostgreSQL. */
export type StoreKind = "sqlite" | "postgres";

/** An administrative connection; each test service gets a database of its own from it. */
export const ADMIN_DATABASE_URL =
  process.env.BRIDGELINE_TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";

/**
 * Why tests on PostgreSQL are skipped in this process, or false when they run: they are skipped
 * only when no PostgreSQL answers and this is not CI (where a missing PostgreSQL must fail the run).
 */
export const POSTGRES_SKIP: string | false = await postgresSkip();

async function postgresSkip(): Promise<string | false> {
  if (process.env.CI === "true") return false;
  const client = new pg.Client({ connectionString: ADMIN_DATABASE_URL, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.end();
    return false;
  } catch {
    return `no PostgreSQL reachable at ${ADMIN_DATABASE_URL}`;
  }
}

/** Test options for a test or describe that needs PostgreSQL (several instances on one database). */
export const postgresOnly = { skip: POSTGRES_SKIP };

/**
 * The one loop over both dialects: `body` runs in a describe of its own per store, named after it,
 * PostgreSQL's skipped with the reason when none is reachable outside CI.
 */
export function forEachStore(title: string, body: (kind: StoreKind) => void): void {
  for (const kind of ["sqlite", "postgres"] as const) {
    describe(`${title} (${kind})`, { skip: kind === "postgres" && POSTGRES_SKIP }, () => body(kind));
  }
}

let counter = 0;

/**
 * What the templates below are made from: they are made again when the migrations, the opening of a
 * store or the making of the self-signed certificate change, and are otherwise reused run to run.
 */
const TEMPLATE_VERSION = createHash("sha256")
  .update(fs.readFileSync(new URL("../../src/store/migrations.ts", import.meta.url)))
  .update(fs.readFileSync(new URL("../../src/store/database.ts", import.meta.url)))
  .update(fs.readFileSync(new URL("../../src/tls.ts", import.meta.url)))
  .digest("hex")
  .slice(0, 16);

export interface TestDatabase {
  url: string;
  drop(): Promise<void>;
}

/**
 * Creates a PostgreSQL database for one test, dropped again on close: a copy of a template every
 * migration has run on (migrating takes seconds, copying a fraction), or with `migrated: false` an
 * empty one (tests of a migration itself).
 */
export async function createTestDatabase(options: { migrated?: boolean } = {}): Promise<TestDatabase> {
  const template = options.migrated === false ? "template0" : await migratedTemplate();
  counter += 1;
  const name = `bridgeline_test_${process.pid}_${counter}_${Date.now()}`;
  await admin((client) => client.query(`create database ${name} template ${template}`));
  return {
    url: databaseUrl(name),
    drop: async () => {
      await admin((client) => client.query(`drop database if exists ${name} with (force)`));
    },
  };
}

function databaseUrl(name: string): string {
  const url = new URL(ADMIN_DATABASE_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

let template: Promise<string> | undefined;

/**
 * The migrated template database, made once for every test process and run of the suite (named
 * after TEMPLATE_VERSION): the first process to want it makes it under an advisory lock, migrating
 * a database under another name and renaming it when done, so no one copies a half-made one.
 */
function migratedTemplate(): Promise<string> {
  template ??= admin(async (client) => {
    const name = `bridgeline_template_${TEMPLATE_VERSION}`;
    const exists = async () =>
      (await client.query("select 1 from pg_database where datname = $1", [name])).rowCount === 1;
    if (await exists()) return name;
    await client.query("select pg_advisory_lock(hashtext('bridgeline test template'))");
    try {
      if (await exists()) return name;
      const making = `${name}_making`;
      await client.query(`drop database if exists ${making} with (force)`);
      await client.query(`create database ${making} template template0`);
      const store = await openPostgresStore(databaseUrl(making));
      await store.close();
      await client.query(`alter database ${making} rename to ${name}`);
      return name;
    } finally {
      await client.query("select pg_advisory_unlock(hashtext('bridgeline test template'))");
    }
  });
  return template;
}

async function admin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: ADMIN_DATABASE_URL });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

let dataDirTemplate: string | undefined;

/**
 * Fills a fresh data directory the way a service leaves one: a migrated SQLite store and a
 * self-signed certificate, copied from a template made once per TEMPLATE_VERSION (a store's
 * migrations and an RSA key per service cost seconds on a loaded machine).
 */
export async function fillDataDir(dataDir: string): Promise<void> {
  dataDirTemplate ??= await makeDataDirTemplate();
  fs.cpSync(dataDirTemplate, dataDir, { recursive: true });
}

async function makeDataDirTemplate(): Promise<string> {
  const done = path.join(os.tmpdir(), `bridgeline-template-${TEMPLATE_VERSION}`);
  if (fs.existsSync(done)) return done;
  const making = fs.mkdtempSync(`${done}-making-`);
  const store = await openSqliteStore(making);
  // Closed, SQLite writes its log back into the file and removes it: the file is the whole store.
  await store.close();
  await loadTlsMaterial({ ...loadConfig({}), dataDir: making });
  try {
    fs.renameSync(making, done);
  } catch (error) {
    // Another test process made it first.
    if (!fs.existsSync(done)) throw error;
    fs.rmSync(making, { recursive: true, force: true });
  }
  return done;
}

/**
 * A store of `kind` for a describe block: opened before its tests, closed (its database dropped, its
 * directory removed) after them. Read `store` inside the tests.
 */
export function storeForTests(name: string, kind: StoreKind): { readonly store: Store } {
  const holder: { store: Store } = { store: undefined as unknown as Store };
  let database: TestDatabase | undefined;
  let dataDir: string | undefined;
  before(async () => {
    if (kind === "postgres") {
      database = await createTestDatabase();
      holder.store = await openPostgresStore(database.url);
    } else {
      dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `bridgeline-${name}-`));
      await fillDataDir(dataDir);
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
