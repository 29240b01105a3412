import assert from "node:assert/strict";
import { it } from "node:test";
import { attemptCounts, MAX_KEY_LENGTH, SWEEP_INTERVAL_MS } from "../../src/store/attempt-counts.js";
import { forEachStore, storeForTests } from "../helpers/databases.js";

forEachStore("attempt counts", (kind) => {
  const opened = storeForTests("attempts", kind);

  const rows = () => opened.store.db.selectFrom("attempt_counts").select("key").execute();

  it("counts attempts in a window that opens with the first and ends windowMs later; reading counts none", async () => {
    const counts = attemptCounts(opened.store);
    const start = new Date("2030-01-01T10:00:00Z");
    assert.equal(await counts.read("login:a", start), undefined);
    const first = await counts.count("login:a", 60_000, start);
    assert.deepEqual(first, { count: 1, endsAt: start.getTime() + 60_000 });
    const second = await counts.count("login:a", 60_000, new Date(start.getTime() + 59_000));
    assert.deepEqual(second, { count: 2, endsAt: start.getTime() + 60_000 }, "the window does not move");
    assert.deepEqual(await counts.read("login:a", new Date(start.getTime() + 59_500)), second);
    assert.equal(await counts.read("login:b", start), undefined, "keys are counted apart");
    assert.equal(await counts.read("login:a", new Date(start.getTime() + 60_000)), undefined, "ended");
    const next = await counts.count("login:a", 60_000, new Date(start.getTime() + 60_000));
    assert.deepEqual(next, { count: 1, endsAt: start.getTime() + 120_000 }, "a new window");
  });

  it("takes back an attempt of the open window, never below none nor from an ended window", async () => {
    const counts = attemptCounts(opened.store);
    const start = new Date("2030-01-05T10:00:00Z");
    await counts.count("back:a", 60_000, start);
    await counts.count("back:a", 60_000, start);
    await counts.uncount("back:a", start);
    assert.equal((await counts.read("back:a", start))?.count, 1);
    await counts.uncount("back:a", start);
    await counts.uncount("back:a", start);
    assert.equal((await counts.read("back:a", start))?.count, 0);
    await counts.count("back:a", 60_000, start);
    await counts.uncount("back:a", new Date(start.getTime() + 60_000));
    const next = await counts.count("back:a", 60_000, new Date(start.getTime() + 60_000));
    assert.equal(next.count, 1, "the ended window was not touched; a new one opened");
  });

  it("counts every one of many attempts made at once (as instances do)", async () => {
    const counts = [attemptCounts(opened.store), attemptCounts(opened.store)];
    const now = new Date("2030-01-02T10:00:00Z");
    await Promise.all(
      Array.from({ length: 40 }, (_, i) => (counts[i % 2] ?? counts[0])?.count("signup:b", 60_000, now)),
    );
    assert.equal((await attemptCounts(opened.store).read("signup:b", now))?.count, 40);
  });

  it("sweeps the windows that ended, at most once a sweep interval", async () => {
    await opened.store.db.deleteFrom("attempt_counts").execute();
    const counts = attemptCounts(opened.store);
    const start = new Date("2030-01-03T10:00:00Z");
    await counts.count("old:1", 1_000, start);
    await counts.count("old:2", 1_000, start);
    await counts.count("long:1", 3_600_000, start);
    const later = new Date(start.getTime() + 2_000);
    await counts.count("new:1", 1_000, later);
    assert.equal((await rows()).length, 4, "within the sweep interval, nothing is swept");
    await counts.count("new:2", 1_000, new Date(start.getTime() + SWEEP_INTERVAL_MS));
    assert.deepEqual((await rows()).map((row) => row.key).sort(), ["long:1", "new:2"]);
  });

  it(`keeps keys longer than ${MAX_KEY_LENGTH} characters as their hash, still apart`, async () => {
    const counts = attemptCounts(opened.store);
    const now = new Date("2030-01-04T10:00:00Z");
    const long = "wrong-pin:".padEnd(5_000, "9");
    await counts.count(`${long}1`, 60_000, now);
    await counts.count(`${long}1`, 60_000, now);
    await counts.count(`${long}2`, 60_000, now);
    assert.equal((await counts.read(`${long}1`, now))?.count, 2);
    assert.equal((await counts.read(`${long}2`, now))?.count, 1);
    assert.ok((await rows()).every((row) => row.key.length <= MAX_KEY_LENGTH));
  });
});
