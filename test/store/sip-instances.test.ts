import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { openPostgresStore, openSqliteStore, type Store } from "../../src/store/database.js";
import { renewSipInstance } from "../../src/store/sip-instances.js";
import { createTestDatabase, TEST_STORE, type TestDatabase } from "../helpers/databases.js";

describe(`the instances alive and their SIP URIs (${TEST_STORE})`, () => {
  let store: Store;
  let database: TestDatabase | undefined;
  let dataDir: string | undefined;

  before(async () => {
    if (TEST_STORE === "postgres") {
      database = await createTestDatabase();
      store = await openPostgresStore(database.url);
    } else {
      dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "bridgeline-sip-instances-"));
      store = await openSqliteStore(dataDir);
    }
  });
  after(async () => {
    await store?.close();
    await database?.drop();
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it("each instance learns the others' URIs, as last renewed, and not those silent since staleBefore", async () => {
    const at = (seconds: number) => new Date(Date.UTC(2030, 0, 1, 10, 0, seconds));
    const renew = (runner: string, sipUri: string, seconds: number) =>
      renewSipInstance(store, { runner, sipUri }, at(seconds - 30), at(seconds));
    assert.deepEqual(await renew("a", "sip:10.0.0.1:5060", 0), []);
    assert.deepEqual(await renew("b", "sip:10.0.0.2:5060", 1), ["sip:10.0.0.1:5060"]);
    assert.deepEqual(await renew("a", "sip:10.0.0.9:5060", 5), ["sip:10.0.0.2:5060"]);
    assert.deepEqual(await renew("c", "sip:10.0.0.3:5060", 6), ["sip:10.0.0.9:5060", "sip:10.0.0.2:5060"]);
    // b has been silent for more than 30 s: taken for dead, its row swept.
    assert.deepEqual(await renew("c", "sip:10.0.0.3:5060", 32), ["sip:10.0.0.9:5060"]);
    const rows = await store.db.selectFrom("sip_instances").select("runner").orderBy("runner").execute();
    assert.deepEqual(
      rows.map((row) => row.runner),
      ["a", "c"],
    );
  });
});
