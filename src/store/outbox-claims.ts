/**
 * The claims both outbox tables share (notifications, webhook_deliveries). A waiting message is
 * claimed by one worker in one statement that counts the attempt; on PostgreSQL the rows are picked
 * with FOR UPDATE SKIP LOCKED, so workers polling together never claim the same message (SQLite has
 * a single writer). A claim is put back when its claimer restarts, or has been silent too long.
 */
import type { Selectable, SelectQueryBuilder } from "kysely";
import type { Store } from "./database.js";
import type { Database } from "./schema.js";

export type OutboxTable = "notifications" | "webhook_deliveries";

/** How one outbox table keeps its claims. */
export interface OutboxClaims<Table extends OutboxTable> {
  readonly table: Table;
  /** The state of a message waiting its turn. */
  readonly waiting: string;
  /** How the table writes a time (notifications to the second, deliveries to the millisecond). */
  readonly stamp: (at: Date) => string;
}

/** The due rows' ids, locked for this claim on PostgreSQL (skipping those another worker is claiming). */
function lockDue<Table extends OutboxTable>(
  store: Store,
  due: SelectQueryBuilder<Database, Table, { id: number }>,
): SelectQueryBuilder<Database, Table, { id: number }> {
  return store.dialect === "postgres" ? due.forUpdate().skipLocked() : due;
}

/** Claims the rows `due` picks (still waiting) for `worker`, counting the attempt; sorted by id. */
export async function claimRows<Table extends OutboxTable>(
  store: Store,
  claims: OutboxClaims<Table>,
  worker: string,
  now: Date,
  due: SelectQueryBuilder<Database, Table, { id: number }>,
): Promise<Selectable<Database[Table]>[]> {
  const rows = await store.db
    .updateTable(claims.table as OutboxTable)
    .set((eb) => ({
      state: "sending",
      claimed_by: worker,
      claimed_at: claims.stamp(now),
      attempts: eb("attempts", "+", 1),
    }))
    .where("id", "in", lockDue(store, due))
    .where("state", "=", claims.waiting)
    .returningAll()
    .execute();
  rows.sort((a, b) => a.id - b.id);
  // The rows of the table named: returningAll of a table name typed as either is either row.
  return rows as Selectable<Database[Table]>[];
}

/** Puts back what `worker` had claimed when it last stopped abruptly. */
export async function releaseClaims(
  store: Store,
  claims: OutboxClaims<OutboxTable>,
  worker: string,
): Promise<number> {
  const result = await store.db
    .updateTable(claims.table)
    .set({ state: claims.waiting, claimed_by: null, claimed_at: null })
    .where("state", "=", "sending")
    .where("claimed_by", "=", worker)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** Puts back messages whose claimer has been silent since `before` (an instance that died). */
export async function releaseStaleClaims(
  store: Store,
  claims: OutboxClaims<OutboxTable>,
  before: Date,
): Promise<number> {
  const result = await store.db
    .updateTable(claims.table)
    .set({ state: claims.waiting, claimed_by: null, claimed_at: null })
    .where("state", "=", "sending")
    .where("claimed_at", "<", claims.stamp(before))
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}
