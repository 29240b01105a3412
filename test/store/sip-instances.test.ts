import assert from "node:assert/strict";
import { it } from "node:test";
import { renewSipInstance } from "../../src/store/sip-instances.js";
import { forEachStore, storeForTests } from "../helpers/databases.js";

forEachStore("the instances alive and their SIP URIs", (kind) => {
  const opened = storeForTests("sip-instances", kind);

  it("each instance learns the others' URIs, as last renewed, and not those silent since staleBefore", async () => {
    const at = (seconds: number) => new Date(Date.UTC(2030, 0, 1, 10, 0, seconds));
    const renew = (runner: string, sipUri: string, seconds: number) =>
      renewSipInstance(opened.store, { runner, sipUri }, at(seconds - 30), at(seconds));
    assert.deepEqual(await renew("a", "sip:10.0.0.1:5060", 0), []);
    assert.deepEqual(await renew("b", "sip:10.0.0.2:5060", 1), ["sip:10.0.0.1:5060"]);
    assert.deepEqual(await renew("a", "sip:10.0.0.9:5060", 5), ["sip:10.0.0.2:5060"]);
    assert.deepEqual(await renew("c", "sip:10.0.0.3:5060", 6), ["sip:10.0.0.9:5060", "sip:10.0.0.2:5060"]);
    // b has been silent for more than 30 s: taken for dead, its row swept.
    assert.deepEqual(await renew("c", "sip:10.0.0.3:5060", 32), ["sip:10.0.0.9:5060"]);
    const rows = await opened.store.db
      .selectFrom("sip_instances")
      .select("runner")
      .orderBy("runner")
      .execute();
    assert.deepEqual(
      rows.map((row) => row.runner),
      ["a", "c"],
    );
  });
});
