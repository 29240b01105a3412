import type { Kysely } from "kysely";
import { PIN_LENGTH, randomPin } from "../domain/pin.js";
import type { Database } from "./schema.js";

export interface PinPair {
  memberPin: string;
  moderatorPin: string;
}

type Owner = { user_id: number } | { conference_id: number };

/**
 * Claims two fresh PINs (call inside the transaction that creates the owner, then assignPins).
 * Uniqueness rests on the pins table's key, so two instances can never hand out the same PIN; a
 * collision simply draws again, with a longer PIN after repeated misses (a crowded space).
 */
export async function claimPins(trx: Kysely<Database>): Promise<PinPair> {
  const memberPin = await claimPin(trx, "member");
  const moderatorPin = await claimPin(trx, "moderator");
  return { memberPin, moderatorPin };
}

async function claimPin(trx: Kysely<Database>, role: string): Promise<string> {
  for (let attempt = 0; ; attempt++) {
    const pin = randomPin(PIN_LENGTH + Math.floor(attempt / 10));
    const result = await trx
      .insertInto("pins")
      .values({ pin, role, user_id: null, conference_id: null })
      .onConflict((oc) => oc.column("pin").doNothing())
      .executeTakeFirst();
    if (Number(result.numInsertedOrUpdatedRows ?? 0) === 1) return pin;
  }
}

export async function assignPins(trx: Kysely<Database>, pins: PinPair, owner: Owner): Promise<void> {
  await trx.updateTable("pins").set(owner).where("pin", "in", [pins.memberPin, pins.moderatorPin]).execute();
}
