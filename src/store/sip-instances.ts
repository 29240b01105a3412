/**
 * The instances alive now, each with its SIP URI: an instance carries a caller to another over a SIP
 * call from its own address, which the other must trust. Each instance renews its row with its
 * heartbeat; rows not renewed within the staleness period are swept, as their instance is taken for
 * dead, so the table holds only the instances alive.
 */
import type { Store } from "./database.js";
import { timestamp } from "./values.js";

/**
 * Records that `runner` is alive at `sipUri`, sweeps the instances silent since `staleBefore`, and
 * returns the SIP URIs of the other instances alive.
 */
export async function renewSipInstance(
  store: Store,
  instance: { readonly runner: string; readonly sipUri: string },
  staleBefore: Date,
  now: Date,
): Promise<string[]> {
  return store.db.transaction().execute(async (trx) => {
    await trx.deleteFrom("sip_instances").where("seen_at", "<", timestamp(staleBefore)).execute();
    await trx
      .insertInto("sip_instances")
      .values({ runner: instance.runner, sip_uri: instance.sipUri, seen_at: timestamp(now) })
      .onConflict((conflict) =>
        conflict.column("runner").doUpdateSet({ sip_uri: instance.sipUri, seen_at: timestamp(now) }),
      )
      .execute();
    const others = await trx
      .selectFrom("sip_instances")
      .select("sip_uri")
      .where("runner", "<>", instance.runner)
      .orderBy("runner")
      .execute();
    return others.map((row) => row.sip_uri);
  });
}
