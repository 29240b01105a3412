import fs from "node:fs";
import path from "node:path";
import SQLite from "better-sqlite3";
import {
  Kysely,
  type LogEvent,
  Migrator,
  PostgresDialect,
  type PostgresPool,
  type PostgresPoolClient,
  type SqliteDatabase,
  SqliteDialect,
  type SqliteStatement,
  sql,
} from "kysely";
import type { Pool, PoolClient } from "pg";
import { CONNECTION_ERRORS } from "../network-errors.js";
import { migrationProvider } from "./migrations.js";
import type { Database } from "./schema.js";

export type StoreDialect = "sqlite" | "postgres";

export interface Store {
  db: Kysely<Database>;
  dialect: StoreDialect;
  /**
   * SQLite: a read-only connection of the store's own for reads outside any transaction
   * (compiled-query.ts). Kysely queues every statement behind the open transaction that holds the
   * one writing connection, and costs more than SQLite's own work for a one-row read; this
   * connection reads at once, and sees only what was committed (WAL). Absent: reads go through db.
   */
  reader?: StoreReader;
  /**
   * Changes of a user's e-mail or password made through this store (users.ts): the API trusts
   * credentials it verified only while this stays as it was (api/authentication.ts). Absent: none yet.
   */
  credentialChanges?: number;
  /** The connection pool's use (PostgreSQL); undefined for SQLite's single connection. */
  pool?: () => { readonly total: number; readonly idle: number; readonly waiting: number };
  close(): Promise<void>;
}

/** Runs a read outside any transaction, synchronously. */
export interface StoreReader {
  /** The rows `sql` (with `?` placeholders) selects with `parameters`, as Kysely's SQLite driver gives them. */
  rows<Row>(sql: string, parameters: readonly unknown[]): Row[];
  /**
   * The same, remembered under `key` (with `sql`), which must stand for the parameters: read again
   * once anything was written through the store, and at least every READ_MEMO_MS. Shared by every
   * caller until then: not to be changed.
   */
  rememberedRows<Row>(sql: string, key: number, parameters: readonly unknown[]): readonly Row[];
  /** What the remembered reads hold, in rows (a read of no rows counting as one): at most READ_MEMO_ROWS. */
  readonly rowsRemembered: number;
}

/**
 * How long a remembered read (StoreReader.rememberedRows) is answered without reading again when
 * nothing was written through the store: what another process writes to the file (not a deployment
 * the service supports: SQLite is one instance) is seen within this long.
 */
export const READ_MEMO_MS = 1_000;
/** Rows remembered in all (some 20 MB of attendees'); past it every read is forgotten at once. */
export const READ_MEMO_ROWS = 20_000;

/** What a statement does, by its root node; `other` for raw SQL and the rest. */
export type QueryKind = "select" | "insert" | "update" | "delete" | "other";

/**
 * Why a statement failed: the database could not be reached or did not answer in time
 * (unreachableReason), or it refused the statement (a constraint, a lock, a cancelled statement).
 */
export type QueryFailure = "unreachable" | "statement";

/**
 * Told of every statement the store runs (not the migrations): its kind, how long it took, and
 * why it failed if it did (metrics).
 */
export type QueryObserver = (kind: QueryKind, seconds: number, failure: QueryFailure | undefined) => void;

const QUERY_KINDS: Readonly<Record<string, QueryKind>> = {
  SelectQueryNode: "select",
  InsertQueryNode: "insert",
  UpdateQueryNode: "update",
  DeleteQueryNode: "delete",
};

/** Kysely's log option telling `observe` of each statement, or none without one. */
function queryLog(observe: QueryObserver | undefined): { log?: (event: LogEvent) => void } {
  if (observe === undefined) return {};
  return {
    log: (event) =>
      observe(
        QUERY_KINDS[event.query.query.kind] ?? "other",
        event.queryDurationMillis / 1000,
        event.level === "query" ? undefined : queryFailure(event.error),
      ),
  };
}

function queryFailure(error: unknown): QueryFailure {
  return unreachableReason(error) === undefined ? "statement" : "unreachable";
}

export async function migrate(store: Store): Promise<void> {
  const migrator = new Migrator({ db: store.db, provider: migrationProvider(store.dialect) });
  const { error, results } = await migrator.migrateToLatest();
  const failed = results?.find((r) => r.status === "Error");
  // No migration ran: the database could not be reached or read; its own error says why.
  if (error !== undefined && failed === undefined) throw error;
  if (error || failed) {
    throw new Error(`database migration ${failed?.migrationName ?? ""} failed: ${String(error)}`);
  }
}

/** The migrations not yet applied to the database (none once the store has opened). */
export async function pendingMigrations(store: Store): Promise<string[]> {
  const migrator = new Migrator({ db: store.db, provider: migrationProvider(store.dialect) });
  return (await migrator.getMigrations())
    .filter((migration) => migration.executedAt === undefined)
    .map((migration) => migration.name);
}

/** Resolves once the database answers a query. */
export async function pingDatabase(store: Store): Promise<void> {
  await sql`select 1`.execute(store.db);
}

/**
 * Errors that mean PostgreSQL cannot be reached now (down, starting, shutting down, not resolvable),
 * not a mistake: what was asked may succeed once it is back.
 */
const UNREACHABLE: Readonly<Record<string, string>> = {
  ...CONNECTION_ERRORS,
  "57P01": "the database server is shutting down",
  "57P02": "the database server crashed",
  "57P03": "the database system is starting up",
  "08001": "the connection could not be made",
  "08006": "the connection failed",
  // statement_timeout (see openPostgresStore): the server is there but did not finish in time.
  "57014": "no answer in time",
};

/**
 * node-postgres's own timeouts (see openPostgresStore), plain Errors without a code: no free
 * connection or no connection made in time, or no answer to a query sent.
 */
const NO_ANSWER =
  /^(?:timeout exceeded when trying to connect|Connection terminated due to connection timeout|Query read timeout)/;
/** node-postgres's query_timeout: the query sent is still outstanding on its connection. */
const QUERY_READ_TIMEOUT = "Query read timeout";

/** node-postgres reports a connection cut under a query as a plain Error, without a code. */
const CONNECTION_LOST = /^Connection terminated|is not queryable/;

/** Why PostgreSQL is unreachable, briefly, when `error` says it is; undefined for any other error. */
export function unreachableReason(error: unknown): string | undefined {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  if (typeof code === "string") return UNREACHABLE[code];
  if (typeof message !== "string") return undefined;
  if (NO_ANSWER.test(message)) return "no answer in time";
  return CONNECTION_LOST.test(message) ? "connection lost" : undefined;
}

const STATEMENT_CACHE_LIMIT = 500;

/**
 * Kysely prepares every query anew; preparing is most of a simple query's cost in SQLite, and the
 * service issues the same few hundred SQL texts over and over, so prepared statements are kept.
 * `written`, when given, is called after each run of a statement that may write or end a transaction.
 */
function withStatementCache(sqlite: SQLite.Database, written?: () => void): SqliteDatabase {
  const statements = new Map<string, SqliteStatement>();
  return {
    close: () => sqlite.close(),
    prepare(sql) {
      let statement = statements.get(sql);
      if (!statement) {
        if (statements.size >= STATEMENT_CACHE_LIMIT) statements.clear();
        const prepared = sqlite.prepare(sql);
        // Not a reader: runs, as writes without RETURNING and BEGIN, COMMIT and ROLLBACK do (which
        // SQLite calls read-only); not read-only: a write with RETURNING.
        statement =
          written !== undefined && (!prepared.reader || !prepared.readonly)
            ? tellingWrites(prepared, written)
            : prepared;
        statements.set(sql, statement);
      }
      return statement;
    },
  };
}

function tellingWrites(statement: SQLite.Statement, written: () => void): SqliteStatement {
  return {
    reader: statement.reader,
    all(parameters) {
      try {
        return statement.all(parameters);
      } finally {
        written();
      }
    },
    run(parameters) {
      try {
        return statement.run(parameters);
      } finally {
        written();
      }
    },
    // Kysely streams only selects, which are not wrapped.
    iterate: (parameters) => statement.iterate(parameters),
  };
}

/** The embedded store: one SQLite file in the data directory. */
export async function openSqliteStore(dataDir: string, onQuery?: QueryObserver): Promise<Store> {
  fs.mkdirSync(dataDir, { recursive: true });
  const file = path.join(dataDir, "bridgeline.sqlite3");
  const sqlite = new SQLite(file);
  // WAL lets readers proceed while a write commits; foreign keys are off by default in SQLite.
  sqlite.pragma("journal_mode = WAL");
  sqlite.pragma("foreign_keys = ON");
  sqlite.pragma("busy_timeout = 5000");
  /** Statements run on the writing connection that may have changed what the reader sees. */
  const writes = { count: 0 };
  const db = new Kysely<Database>({
    dialect: new SqliteDialect({
      database: withStatementCache(sqlite, () => {
        writes.count += 1;
      }),
    }),
    ...queryLog(onQuery),
  });
  await migrate({ db, dialect: "sqlite", close: () => db.destroy() });
  // Opened once the schema is migrated: its statements are prepared against the tables as they are.
  const reading = new SQLite(file, { readonly: true });
  reading.pragma("busy_timeout = 5000");
  return {
    db,
    dialect: "sqlite",
    reader: sqliteReader(withStatementCache(reading), writes, onQuery),
    close: async () => {
      reading.close();
      await db.destroy();
    },
  };
}

/** A remembered read: its rows, and the writes counted and the time when it was made. */
interface RememberedRead {
  rows: readonly unknown[];
  writes: number;
  until: number;
}

/**
 * Reads on `connection`, each told to `observe` as Kysely's log tells of the others; remembered
 * ones while `writes` counts none (every statement that may write goes through the one writing
 * connection, counted once done: a commit comes after the writes it makes visible).
 */
function sqliteReader(
  connection: SqliteDatabase,
  writes: { readonly count: number },
  observe: QueryObserver | undefined,
): StoreReader {
  const rows = <Row>(sql: string, parameters: readonly unknown[]): Row[] => {
    const startedAt = performance.now();
    try {
      const read = connection.prepare(sql).all(parameters) as Row[];
      observe?.("select", (performance.now() - startedAt) / 1000, undefined);
      return read;
    } catch (error) {
      observe?.("select", (performance.now() - startedAt) / 1000, queryFailure(error));
      throw error;
    }
  };
  const remembered = new Map<string, Map<number, RememberedRead>>();
  let rowsRemembered = 0;
  return {
    rows,
    get rowsRemembered() {
      return rowsRemembered;
    },
    rememberedRows<Row>(sql: string, key: number, parameters: readonly unknown[]): readonly Row[] {
      let reads = remembered.get(sql);
      if (reads === undefined) {
        reads = new Map();
        remembered.set(sql, reads);
      }
      const now = performance.now();
      const known = reads.get(key);
      if (known !== undefined && known.writes === writes.count && known.until > now)
        return known.rows as readonly Row[];
      // Synchronous: no write comes between the read and the count it is kept with.
      const read = rows<Row>(sql, parameters);
      // An entry counts as a row at least: reads of ids that have nothing (a scan of absent
      // conferences) would otherwise be remembered without bound.
      const weight = Math.max(read.length, 1);
      rowsRemembered += weight - (known === undefined ? 0 : Math.max(known.rows.length, 1));
      if (rowsRemembered > READ_MEMO_ROWS) {
        for (const kept of remembered.values()) kept.clear();
        rowsRemembered = weight;
        reads.set(key, { rows: read, writes: writes.count, until: now + READ_MEMO_MS });
      } else if (known !== undefined) {
        known.rows = read;
        known.writes = writes.count;
        known.until = now + READ_MEMO_MS;
      } else reads.set(key, { rows: read, writes: writes.count, until: now + READ_MEMO_MS });
      return read;
    },
  };
}

const TIMESTAMPTZ_OID = 1184;
const INT8_OID = 20;

/** How long a statement may take, and a connection be waited for, unless told: see PostgresOptions. */
const DEFAULT_DATABASE_TIMEOUT_SECONDS = 5;
/**
 * A live server cancels a statement at statement_timeout and says so; the driver gives up waiting
 * this much later, when the server (or the network to it) is silent.
 */
const SILENT_SERVER_GRACE_MS = 1_000;
/** Probes on an idle connection after this long, so that a dead peer is found without a query. */
const KEEPALIVE_DELAY_MS = 10_000;

export interface PostgresOptions {
  /** Told when an idle connection fails (the pool replaces it). */
  readonly onIdleClientError?: (error: Error) => void;
  readonly onQuery?: QueryObserver;
  readonly poolSize?: number;
  /**
   * How long a statement may run, and a connection be waited for (a free one of the pool, or a new
   * one made): past it the query fails as the database unreachable (503 with Retry-After at the
   * API, a retry for a room's writes) instead of waiting on a silent server. Migrations are not
   * bounded by it.
   */
  readonly timeoutSeconds?: number;
  /**
   * A transaction left idle this long (its instance paused or cut off from the database between two
   * statements) is ended by the server and its locks let go: a room's write cannot hold its
   * conference's row, and so keep another instance from taking it over, past the lease.
   */
  readonly idleInTransactionMs?: number;
}

/** The production store: a pool of connections to one PostgreSQL database shared by N instances. */
export async function openPostgresStore(
  connectionString: string,
  options: PostgresOptions = {},
): Promise<Store> {
  // The driver is loaded only here: the embedded store never needs it, and it is a good part of
  // the start-up time and memory of a service on SQLite.
  const { default: pg } = await import("pg");
  // PostgreSQL hands timestamptz back as Date and bigint (count) as string; the repositories expect
  // the same ISO strings and numbers that SQLite gives, so both are converted at the driver.
  pg.types.setTypeParser(TIMESTAMPTZ_OID, (value) => new Date(value).toISOString());
  pg.types.setTypeParser(INT8_OID, (value) => Number(value));
  const timeoutMs = (options.timeoutSeconds ?? DEFAULT_DATABASE_TIMEOUT_SECONDS) * 1000;
  const connection = {
    connectionString,
    connectionTimeoutMillis: timeoutMs,
    keepAlive: true,
    keepAliveInitialDelayMillis: KEEPALIVE_DELAY_MS,
  };
  // A migration may rightly take long (rewriting a big table): it runs on a connection of its own
  // without the statement timeouts, before the service's pool opens.
  const migrations = new Kysely<Database>({
    dialect: new PostgresDialect({ pool: new pg.Pool({ ...connection, max: 1 }) }),
  });
  try {
    await migrate({ db: migrations, dialect: "postgres", close: () => migrations.destroy() });
  } finally {
    await migrations.destroy();
  }
  const pool = new pg.Pool({
    ...connection,
    max: options.poolSize ?? 10,
    statement_timeout: timeoutMs,
    query_timeout: timeoutMs + SILENT_SERVER_GRACE_MS,
    ...(options.idleInTransactionMs !== undefined && {
      idle_in_transaction_session_timeout: options.idleInTransactionMs,
    }),
    // A server gone from the network is found by TCP keepalives, not after the kernel's hours.
    keepAlive: true,
  });
  // An idle connection can be cut by the server (restart, failover); the pool replaces it, and
  // the event must be handled or it would end the process.
  pool.on("error", options.onIdleClientError ?? (() => {}));
  // A connection cut while its client is checked out (between the queries of a transaction) is
  // reported on the client, where an unheard "error" event would end the process; the query then
  // running or the next one fails with it instead, and the pool drops the client when it returns.
  pool.on("connect", (client) => client.on("error", () => {}));
  const db = new Kysely<Database>({
    dialect: new PostgresDialect({ pool: closingTimedOut(pool) }),
    ...queryLog(options.onQuery),
  });
  return {
    db,
    dialect: "postgres",
    pool: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    close: () => db.destroy(),
  };
}

/**
 * The pool as Kysely uses it, with a client closed when a query of its gets no answer in time: the
 * query is still outstanding on the connection, so every later query there would wait behind it;
 * closed, the client fails what it still holds at once and the pool drops it when it is released.
 */
function closingTimedOut(pool: Pool): PostgresPool {
  const wrappers = new WeakMap<PoolClient, PostgresPoolClient>();
  const wrap = (client: PoolClient): PostgresPoolClient => ({
    // Kysely passes a cursor (the other form of query) only when configured with one, and none is.
    query: ((sql: string, parameters: unknown[]) =>
      client.query(sql, parameters).catch((error: unknown) => {
        if ((error as Error).message === QUERY_READ_TIMEOUT) void client.end();
        throw error;
      })) as unknown as PostgresPoolClient["query"],
    // pg-pool gives the client a new release function at each checkout.
    release: () => client.release(),
  });
  return {
    async connect() {
      const client = await pool.connect();
      let wrapper = wrappers.get(client);
      if (wrapper === undefined) {
        wrapper = wrap(client);
        wrappers.set(client, wrapper);
      }
      return wrapper;
    },
    end: () => pool.end(),
  };
}

/** PostgreSQL when a database URL is configured, else SQLite in the data directory. */
export function openStore(
  options: {
    databaseUrl: string | null;
    dataDir: string;
    databaseTimeoutSeconds?: number;
    idleInTransactionMs?: number;
    onQuery?: QueryObserver;
  },
  onIdleClientError?: (error: Error) => void,
): Promise<Store> {
  return options.databaseUrl
    ? openPostgresStore(options.databaseUrl, {
        onIdleClientError,
        onQuery: options.onQuery,
        timeoutSeconds: options.databaseTimeoutSeconds,
        idleInTransactionMs: options.idleInTransactionMs,
      })
    : openSqliteStore(options.dataDir, options.onQuery);
}
