/**
 * A caller admitted here whose room runs on another instance that does not take them in: the
 * handoff withdrawn leaves no attendee recorded for them, and takes nothing else with it.
 */
import assert from "node:assert/strict";
import { after, before, it } from "node:test";
import { openStore, type Store } from "../../src/store/database.js";
import { admitCaller, createHandoff, takeHandoff, withdrawAdmission } from "../../src/store/dial-in.js";
import { createTestDatabase, forEachStore, type TestDatabase } from "../helpers/databases.js";
import { createConference, createUser, startTestService, type TestService } from "../helpers/service.js";

forEachStore("withdrawing a dial-in handoff", (kind) => {
  let api: TestService;
  let store: Store;
  let database: TestDatabase | undefined;
  let conferenceId: number;
  const caller = (subscriberNumber: string) => ({ countryCode: "1", subscriberNumber });
  const attendeeIds = async () =>
    (
      await store.db.selectFrom("attendees").select("id").where("conference_id", "=", conferenceId).execute()
    ).map((row) => row.id);
  const eventsOf = async (attendeeId: number) =>
    (
      await store.db
        .selectFrom("events")
        .select("type")
        .where("attendee_id", "=", attendeeId)
        .orderBy("id")
        .execute()
    ).map((row) => row.type);

  before(async () => {
    database = kind === "postgres" ? await createTestDatabase() : undefined;
    api = await startTestService(database === undefined ? {} : { databaseUrl: database.url });
    store = await openStore({ databaseUrl: database?.url ?? null, dataDir: api.dataDir });
    const owner = await createUser(api);
    conferenceId = (await createConference(api, owner, new Date().toISOString())).id;
  });
  after(async () => {
    await store?.close();
    await api?.close();
    await database?.drop();
  });

  it("removes the attendee the admission added, with an event, and spends the token", async () => {
    const at = new Date();
    const admitted = await admitCaller(store, conferenceId, caller("6045550701"), false, at);
    assert.equal(admitted?.added, true);
    const id = admitted.attendee.id;
    const token = await createHandoff(
      store,
      { conferenceId, attendeeId: id, moderator: false, encryption: "none" },
      at,
    );
    await withdrawAdmission(store, token, id, at);
    assert.ok(!(await attendeeIds()).includes(id), "no attendee left for the caller");
    assert.deepEqual(await eventsOf(id), ["attendee-added", "attendee-removed"]);
    assert.equal(await takeHandoff(store, token, at), undefined, "the token is spent");
  });

  it("keeps an attendee the caller was matched to, and one whose call began meanwhile", async () => {
    const at = new Date();
    const first = await admitCaller(store, conferenceId, caller("6045550702"), false, at);
    assert.equal(first?.added, true);
    const id = first.attendee.id;
    // The same caller again is matched to that attendee, not added: a withdrawal leaves it.
    const again = await admitCaller(store, conferenceId, caller("6045550702"), false, at);
    assert.deepEqual({ id: again?.attendee.id, added: again?.added }, { id, added: false });
    const matchedToken = await createHandoff(
      store,
      { conferenceId, attendeeId: id, moderator: false, encryption: "none" },
      at,
    );
    await withdrawAdmission(store, matchedToken, null, at);
    assert.ok((await attendeeIds()).includes(id));

    // Added, but the room's instance took the caller in after all (its call began): kept.
    const third = await admitCaller(store, conferenceId, caller("6045550703"), false, at);
    const connected = third?.attendee.id ?? assert.fail("not admitted");
    await store.db.updateTable("attendees").set({ state: "connected" }).where("id", "=", connected).execute();
    const token = await createHandoff(
      store,
      { conferenceId, attendeeId: connected, moderator: false, encryption: "none" },
      at,
    );
    await withdrawAdmission(store, token, connected, at);
    assert.ok((await attendeeIds()).includes(connected));
  });
});
