/**
 * The recording's files as rooms store them: the first room's file, then each later part a room that
 * took the conference over made, in order and once; a room whose lease is lost stores nothing.
 */
import assert from "node:assert/strict";
import { after, before, it } from "node:test";
import { conferenceStore } from "../../src/store/conference-store.js";
import { LeaseLost } from "../../src/store/leases.js";
import { getRecordingFiles } from "../../src/store/recordings.js";
import { forEachStore } from "../helpers/databases.js";
import { createConference, createUser, type InProcessTestApi, startTestApi } from "../helpers/service.js";

forEachStore("a recording's files", (kind) => {
  let api: InProcessTestApi;
  let owner: Awaited<ReturnType<typeof createUser>>;
  const startAt = () => new Date(Date.now() + 3_600_000).toISOString();

  before(async () => {
    api = await startTestApi({}, { store: kind });
    owner = await createUser(api);
  });
  after(() => api?.close());

  /** A conference its runner holds under `lease` (as a claim or take-over leaves it). */
  async function conferenceAtLease(lease: number): Promise<number> {
    const { id } = await createConference(api, owner, startAt());
    await leaseMovesTo(id, lease);
    return id;
  }

  async function leaseMovesTo(conferenceId: number, lease: number): Promise<void> {
    await api.store.db
      .updateTable("conferences")
      .set({ state: "started", runner_generation: lease })
      .where("id", "=", conferenceId)
      .execute();
  }

  const columns = (conferenceId: number) =>
    api.store.db
      .selectFrom("conferences")
      .select(["recording_file", "recording_parts"])
      .where("id", "=", conferenceId)
      .executeTakeFirstOrThrow();

  it("stores the first file, then each later part in order, each once", async () => {
    const rooms = conferenceStore(api.store);
    const conferenceId = await conferenceAtLease(1);
    const scope = (lease: number) => ({ userId: owner.id, conferenceId, lease });
    assert.deepEqual(await getRecordingFiles(api.store, owner.id, conferenceId), [], "none yet");

    await rooms.setRecordingFile(scope(1), "Weekly (1).wav");
    assert.deepEqual(await columns(conferenceId), {
      recording_file: "Weekly (1).wav",
      recording_parts: null,
    });
    await rooms.setRecordingFile(scope(1), "Weekly (1).wav");
    assert.deepEqual(await columns(conferenceId), {
      recording_file: "Weekly (1).wav",
      recording_parts: null,
    });

    await leaseMovesTo(conferenceId, 3);
    await rooms.setRecordingFile(scope(3), "Weekly (1)-part3.wav");
    await rooms.setRecordingFile(scope(3), "Weekly (1)-part3.wav");
    assert.deepEqual(await columns(conferenceId), {
      recording_file: "Weekly (1).wav",
      recording_parts: JSON.stringify(["Weekly (1)-part3.wav"]),
    });

    await leaseMovesTo(conferenceId, 4);
    await rooms.setRecordingFile(scope(4), "Weekly (1)-part4.wav");
    assert.deepEqual(await getRecordingFiles(api.store, owner.id, conferenceId), [
      "Weekly (1).wav",
      "Weekly (1)-part3.wav",
      "Weekly (1)-part4.wav",
    ]);
  });

  it("stores a part as the recording when the earlier rooms stored none", async () => {
    const conferenceId = await conferenceAtLease(2);
    await conferenceStore(api.store).setRecordingFile(
      { userId: owner.id, conferenceId, lease: 2 },
      "W-part2.wav",
    );
    assert.deepEqual(await columns(conferenceId), { recording_file: "W-part2.wav", recording_parts: null });
  });

  it("refuses a file of a room whose lease is lost, first file or part, and changes nothing", async () => {
    const rooms = conferenceStore(api.store);
    const conferenceId = await conferenceAtLease(5);
    const stale = { userId: owner.id, conferenceId, lease: 4 };
    const refused = (error: unknown) => error instanceof LeaseLost && rooms.leaseLost(error);

    await assert.rejects(rooms.setRecordingFile(stale, "Stale.wav"), refused);
    assert.deepEqual(await columns(conferenceId), { recording_file: null, recording_parts: null });

    await rooms.setRecordingFile({ ...stale, lease: 5 }, "Held.wav");
    await assert.rejects(rooms.setRecordingFile(stale, "Stale-part4.wav"), refused);
    assert.deepEqual(await columns(conferenceId), { recording_file: "Held.wav", recording_parts: null });
  });
});
