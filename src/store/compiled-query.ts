import { type Compilable, CompiledQuery, type Kysely } from "kysely";
import type { Store } from "./database.js";
import type { Database } from "./schema.js";

/** A read compiled once per dialect, run with new parameters. */
export interface CompiledRead<Row, Args extends unknown[]> {
  /**
   * Outside any transaction: on the store's reader when it has one (SQLite), remembered there when
   * made with `rememberedBy`; else through db. The rows are not to be changed.
   */
  read(store: Store, ...parameters: Args): Promise<readonly Row[]>;
  /** Through `db`, which may be a transaction: the read sees the transaction's own writes. */
  run(db: Kysely<Database>, ...parameters: Args): Promise<Row[]>;
}

/**
 * Kysely builds and compiles every query anew, which costs more than SQLite's own work for a
 * one-row read. The reads that every request makes are compiled once per dialect and then run
 * with new parameters. `build` receives the parameters, which must appear in the SQL in the order
 * given (checked on the first compile). `rememberedBy`, a number standing for the parameters, has
 * the store's reader remember the rows under it (StoreReader.rememberedRows).
 */
export function compiledOnce<Row, Args extends unknown[]>(
  build: (db: Kysely<Database>, ...parameters: Args) => Compilable<Row>,
  rememberedBy?: (...parameters: Args) => number,
): CompiledRead<Row, Args> {
  // Keyed by the adapter, which a database and its transactions share.
  const sqlByAdapter = new WeakMap<object, string>();
  const sqlFor = (db: Kysely<Database>, parameters: Args): string => {
    const adapter = db.getExecutor().adapter;
    let sqlText = sqlByAdapter.get(adapter);
    if (sqlText === undefined) {
      const compiled = build(db, ...parameters).compile();
      if (
        compiled.parameters.length !== parameters.length ||
        compiled.parameters.some((value, index) => value !== parameters[index])
      ) {
        throw new Error(`compiledOnce: parameters of "${compiled.sql}" are not the ones given, in order`);
      }
      sqlText = compiled.sql;
      sqlByAdapter.set(adapter, sqlText);
    }
    return sqlText;
  };
  const run = async (db: Kysely<Database>, ...parameters: Args): Promise<Row[]> =>
    (await db.executeQuery<Row>(CompiledQuery.raw(sqlFor(db, parameters), parameters))).rows;
  return {
    run,
    async read(store, ...parameters) {
      const reader = store.reader;
      if (reader === undefined) return run(store.db, ...parameters);
      const sql = sqlFor(store.db, parameters);
      return rememberedBy === undefined
        ? reader.rows<Row>(sql, parameters)
        : reader.rememberedRows<Row>(sql, rememberedBy(...parameters), parameters);
    },
  };
}
