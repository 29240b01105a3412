/**
 * The store queries a conference room makes that only calls reach (the real-phone tests run on
 * SQLite alone): its owner's name, the PIN a caller keys, live controls with their events, and an
 * event of its own. Run on both stores, so that their SQL is proven on PostgreSQL too.
 */
import assert from "node:assert/strict";
import { after, before, it } from "node:test";
import { conferenceStore } from "../../src/store/conference-store.js";
import type { Store } from "../../src/store/database.js";
import { findPinTarget } from "../../src/store/dial-in.js";
import { appendEvents } from "../../src/store/events.js";
import { forEachStore } from "../helpers/databases.js";
import { createConference, createUser, type InProcessTestApi, startTestApi } from "../helpers/service.js";

forEachStore("a conference room's queries", (kind) => {
  let api: InProcessTestApi;
  let store: Store;
  let owner: Awaited<ReturnType<typeof createUser>>;
  let conferenceId: number;
  let attendeeId: number;
  const pinOf = (document: Record<string, unknown>, root: string, role: string) =>
    String((document[root] as Record<string, unknown>)[`${role}-pin`]);
  const eventTypes = async () =>
    (
      await store.db
        .selectFrom("events")
        .select(["type", "attendee_id", "reason"])
        .where("conference_id", "=", conferenceId)
        .orderBy("id")
        .execute()
    ).filter((row) => row.type !== "attendee-added");

  before(async () => {
    api = await startTestApi({}, { store: kind });
    store = api.store;
    owner = await createUser(api);
    const conference = await createConference(api, owner, new Date(Date.now() + 3_600_000).toISOString());
    conferenceId = conference.id;
    const attendee = await api.request("POST", `${conference.path}/attendees`, {
      auth: owner.auth,
      body: "<attendee><phone-number>+16045550123</phone-number></attendee>",
    });
    assert.equal(attendee.status, 201, attendee.text);
    attendeeId = Number(String(attendee.headers.location).split("/").pop());
  });
  after(() => api?.close());

  it("names the owner, and no one for a user there is not", async () => {
    assert.equal(await conferenceStore(store).ownerName(owner.id), "Test User");
    assert.equal(await conferenceStore(store).ownerName(owner.id + 1_000), undefined);
  });

  it("finds a conference's PINs, a user's PINs to the conference in progress, and no unknown PIN", async () => {
    const conference = (
      await api.request("GET", `/users/${owner.id}/conferences/${conferenceId}`, { auth: owner.auth })
    ).xml;
    const user = (await api.request("GET", `/users/${owner.id}`, { auth: owner.auth })).xml;
    assert.deepEqual(await findPinTarget(store, pinOf(conference, "conference", "member")), {
      role: "member",
      conferenceId,
    });
    assert.deepEqual(await findPinTarget(store, pinOf(conference, "conference", "moderator")), {
      role: "moderator",
      conferenceId,
    });
    const userModeratorPin = pinOf(user, "user", "moderator");
    assert.deepEqual(await findPinTarget(store, userModeratorPin), {
      role: "moderator",
      conferenceId: undefined,
    });
    await store.db
      .updateTable("conferences")
      .set({ state: "started", started_at: new Date().toISOString() })
      .where("id", "=", conferenceId)
      .execute();
    assert.deepEqual(await findPinTarget(store, pinOf(user, "user", "member")), {
      role: "member",
      conferenceId,
    });
    assert.equal(await findPinTarget(store, "0000000000"), undefined);
  });

  it("records an attendee's live controls with an event per change, and nothing for one not there", async () => {
    const scope = { userId: owner.id, conferenceId };
    await conferenceStore(store).recordAttendeeControls(
      scope,
      attendeeId,
      { muted: true, handUp: true },
      new Date(),
    );
    await conferenceStore(store).recordAttendeeControls(
      scope,
      attendeeId,
      { muted: true, handUp: false },
      new Date(),
    );
    await conferenceStore(store).recordAttendeeControls(
      scope,
      attendeeId + 1_000,
      { muted: true },
      new Date(),
    );
    const row = await store.db
      .selectFrom("attendees")
      .select(["muted", "hand_up"])
      .where("id", "=", attendeeId)
      .executeTakeFirstOrThrow();
    assert.deepEqual([Boolean(row.muted), Boolean(row.hand_up)], [true, false]);
    assert.deepEqual(
      (await eventTypes()).map((event) => [event.type, event.attendee_id]),
      [
        ["attendee-muted", attendeeId],
        ["hand-raised", attendeeId],
        ["hand-lowered", attendeeId],
      ],
    );
  });

  it("records a conference's live controls with an event per change and the room's reason", async () => {
    const scope = { userId: owner.id, conferenceId };
    const before = (await eventTypes()).length;
    await conferenceStore(store).recordConferenceControls(
      scope,
      { dialInLocked: true, lectureMode: true },
      new Date(),
    );
    await conferenceStore(store).recordConferenceControls(
      scope,
      { recordAudio: false, lectureMode: true },
      new Date(),
      "disk full",
    );
    await conferenceStore(store).recordConferenceControls(scope, { recordAudio: true }, new Date());
    await conferenceStore(store).recordConferenceControls(
      scope,
      { recordAudio: false },
      new Date(),
      "disk full",
    );
    const row = await store.db
      .selectFrom("conferences")
      .select(["dial_in_locked", "lecture_mode", "record_audio"])
      .where("id", "=", conferenceId)
      .executeTakeFirstOrThrow();
    assert.deepEqual(
      [Boolean(row.dial_in_locked), Boolean(row.lecture_mode), Boolean(row.record_audio)],
      [true, true, false],
    );
    assert.deepEqual(
      (await eventTypes()).slice(before).map((event) => [event.type, event.reason]),
      [
        ["dial-in-locked", null],
        ["lecture-mode-on", null],
        ["recording-started", null],
        ["recording-stopped", "disk full"],
      ],
    );
  });

  it("appends an event of the room's own", async () => {
    await appendEvents(
      store.db,
      [
        {
          userId: owner.id,
          conferenceId,
          attendeeId,
          type: "attendee-failed",
          reason: "busy",
          encryption: null,
        },
      ],
      new Date(),
    );
    const last = (await eventTypes()).at(-1);
    assert.deepEqual(last, { type: "attendee-failed", attendee_id: attendeeId, reason: "busy" });
  });
});
