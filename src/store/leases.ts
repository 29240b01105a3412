/**
 * The runner's lease on a started conference, and its fencing. Each claim or take-over gives the
 * conference a new generation (conferences.runner_generation); the room that got it writes with it,
 * and a write whose generation is not the conference's any more is refused here, in the write's own
 * transaction: a runner that was paused or cut off from the database while another took its
 * conference over can change nothing of the new room's.
 *
 * On PostgreSQL the conference row is read FOR KEY SHARE: a take-over (FOR UPDATE) waits for the
 * write, or the write for the take-over, never both through; the API's own updates of the row (FOR NO
 * KEY UPDATE) do not conflict with it.
 */
import type { Kysely } from "kysely";
import type { StoreDialect } from "./database.js";
import type { Database } from "./schema.js";

/** A write refused: the room writing it no longer holds its conference's lease. */
export class LeaseLost extends Error {
  constructor(
    readonly conferenceId: number,
    readonly generation: number,
    readonly current: number,
  ) {
    super(
      `conference ${conferenceId}: lease ${generation} lost (the conference is at ${current}: another instance took it over)`,
    );
    this.name = "LeaseLost";
  }
}

/**
 * Refuses the transaction's write (throws LeaseLost) when `lease` is not the conference's generation
 * now; a scope without a lease (the API's, dial-in's) and a conference gone pass.
 */
export async function checkLease(
  trx: Kysely<Database>,
  dialect: StoreDialect,
  scope: { readonly conferenceId: number; readonly lease?: number },
): Promise<void> {
  if (scope.lease === undefined) return;
  const row = await trx
    .selectFrom("conferences")
    .select("runner_generation")
    .where("id", "=", scope.conferenceId)
    .$if(dialect === "postgres", (query) => query.forKeyShare())
    .executeTakeFirst();
  if (row !== undefined && Number(row.runner_generation) !== scope.lease)
    throw new LeaseLost(scope.conferenceId, scope.lease, Number(row.runner_generation));
}
