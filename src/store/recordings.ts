import { NotFound } from "../domain/errors.js";
import type { Store } from "./database.js";

/**
 * Names the conference's recording: a file in the data directory's recordings/ folder. It is not a
 * change a client makes, so updated-at and lock-version stay. NotFound when the conference is gone.
 */
export async function setRecordingFile(store: Store, conferenceId: number, fileName: string): Promise<void> {
  const result = await store.db
    .updateTable("conferences")
    .set({ recording_file: fileName })
    .where("id", "=", conferenceId)
    .executeTakeFirst();
  if (Number(result.numUpdatedRows) !== 1) throw new NotFound("conference");
}

/** The file name of the user's conference's recording; null before any recording exists. */
export async function getRecordingFile(
  store: Store,
  userId: number,
  conferenceId: number,
): Promise<string | null> {
  const row = await store.db
    .selectFrom("conferences")
    .select("recording_file")
    .where("user_id", "=", userId)
    .where("id", "=", conferenceId)
    .executeTakeFirst();
  if (!row) throw new NotFound("conference");
  return row.recording_file;
}
