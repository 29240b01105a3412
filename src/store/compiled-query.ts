import { type Compilable, CompiledQuery, type Kysely } from "kysely";
import type { Database } from "./schema.js";

/**
 * Kysely builds and compiles every query anew, which costs more than SQLite's own work for a
 * one-row read. The reads that every request makes are compiled once per dialect and then run
 * with new parameters. `build` receives the parameters, which must appear in the SQL in the order
 * given (checked on the first compile).
 */
export function compiledOnce<Row, Args extends unknown[]>(
  build: (db: Kysely<Database>, ...parameters: Args) => Compilable<Row>,
): (db: Kysely<Database>, ...parameters: Args) => Promise<Row[]> {
  // Keyed by the adapter, which a database and its transactions share.
  const sqlByAdapter = new WeakMap<object, string>();
  return async (db, ...parameters) => {
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
    const result = await db.executeQuery<Row>(CompiledQuery.raw(sqlText, parameters));
    return result.rows;
  };
}
