import { NotFound } from "../domain/errors.js";
import type { Store } from "./database.js";
import { checkLease } from "./leases.js";

/**
 * Names a recording file the room made: a file in the data directory's recordings/ folder. The
 * first becomes the conference's recording; a room that took the conference over records into a
 * file of its own, added to the recording's later parts, in order and once (a name already kept is
 * no change). Refused (LeaseLost) when the room's lease is not the conference's any more. It is not
 * a change a client makes, so updated-at and lock-version stay. NotFound when the conference is gone.
 */
export async function setRecordingFile(
  store: Store,
  scope: { readonly conferenceId: number; readonly lease?: number },
  fileName: string,
): Promise<void> {
  await store.db.transaction().execute(async (trx) => {
    await checkLease(trx, store.dialect, scope);
    const row = await trx
      .selectFrom("conferences")
      .select(["recording_file", "recording_parts"])
      .where("id", "=", scope.conferenceId)
      // Read, changed and written back: a concurrent writer of the parts waits for this one.
      .$if(store.dialect === "postgres", (query) => query.forNoKeyUpdate())
      .executeTakeFirst();
    if (row === undefined) throw new NotFound("conference");
    if (row.recording_file === null) {
      await trx
        .updateTable("conferences")
        .set({ recording_file: fileName })
        .where("id", "=", scope.conferenceId)
        .execute();
      return;
    }
    const parts = recordingParts(row.recording_parts);
    if (row.recording_file === fileName || parts.includes(fileName)) return;
    await trx
      .updateTable("conferences")
      .set({ recording_parts: JSON.stringify([...parts, fileName]) })
      .where("id", "=", scope.conferenceId)
      .execute();
  });
}

/**
 * The file names of the user's conference's recording, in the order they play: the first file,
 * then each later part. None before any recording exists.
 */
export async function getRecordingFiles(
  store: Store,
  userId: number,
  conferenceId: number,
): Promise<string[]> {
  const row = await store.db
    .selectFrom("conferences")
    .select(["recording_file", "recording_parts"])
    .where("user_id", "=", userId)
    .where("id", "=", conferenceId)
    .executeTakeFirst();
  if (!row) throw new NotFound("conference");
  if (row.recording_file === null) return [];
  return [row.recording_file, ...recordingParts(row.recording_parts)];
}

/** conferences.recording_parts: a JSON array of file names, null while there is one part. */
function recordingParts(column: string | null): string[] {
  return column === null ? [] : (JSON.parse(column) as string[]);
}
