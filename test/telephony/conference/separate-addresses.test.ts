/**
 * Two instances on one PostgreSQL database, each on an address of its own (127.0.0.2, 127.0.0.3),
 * trusting SIP requests only from the caller's address (127.0.0.1, standing for the edge) as the
 * deployment table says: each learns the other's address from the database, so a caller who dials
 * the instance not running the room is carried to the other, not refused there.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { loadConfig } from "../../../src/config.js";
import { tone } from "../../helpers/audio.js";
import { createTestDatabase, postgresOnly } from "../../helpers/databases.js";
import { dtmfTones, murmur, sippCaller } from "../../helpers/dial-in-caller.js";
import { createUser, startTestService, type TestService } from "../../helpers/service.js";
import { rtpPortRange, skipWithout } from "../../helpers/sipp.js";
import { until } from "../../helpers/until.js";
import { itemsOf, textOf, type XmlNode } from "../../helpers/xml.js";

// Two instances share a database only on PostgreSQL.
const skip = postgresOnly.skip || skipWithout("sipp");
const ACCESS_NUMBER = "+16045550199";
/** The instances renew their heartbeat (and learn of each other) this often, not every 5 s. */
const HEARTBEAT_MS = 200;

const dir = mkdtempSync(join(tmpdir(), "bridgeline-separate-addresses-"));
const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  rmSync(dir, { recursive: true, force: true });
});

async function instance(databaseUrl: string, address: string): Promise<TestService> {
  const service = await startTestService(
    {
      databaseUrl,
      sip: {
        ...loadConfig({}).sip,
        bindAddress: address,
        port: 0,
        rtpPorts: rtpPortRange(),
        accessNumbers: [ACCESS_NUMBER],
        trusted: ["127.0.0.1"],
      },
    },
    { heartbeatIntervalMs: HEARTBEAT_MS },
  );
  cleanups.push(() => service.close());
  return service;
}

describe("instances on separate addresses", { skip }, () => {
  test("trust each other's SIP address from the database: a caller is carried, not refused", async () => {
    const database = await createTestDatabase();
    cleanups.push(() => database.drop());
    const addresses = ["127.0.0.2", "127.0.0.3"] as const;
    const instances = [
      await instance(database.url, addresses[0]),
      await instance(database.url, addresses[1]),
    ] as const;
    for (const [index, each] of instances.entries()) {
      const other = addresses[1 - index];
      await until(`instance ${index} trusting the other's address`, async () =>
        each.logs.some(
          (line) => line.includes("other instances' addresses are trusted") && line.includes(`"${other}"`),
        )
          ? true
          : undefined,
      );
    }
    const [first] = instances;
    const owner = await createUser(first);
    const created = await first.request("POST", `/users/${owner.id}/conferences`, {
      auth: owner.auth,
      body: `<conference><name>Apart</name><scheduled-to-start-at>${new Date().toISOString()}</scheduled-to-start-at>
        <no-moderator type="boolean">true</no-moderator></conference>`,
    });
    assert.equal(created.status, 201, created.text);
    const path = new URL(String(created.headers.location), "http://localhost").pathname;
    const memberPin = textOf(created.xml.conference as XmlNode, "member-pin") ?? assert.fail("no PIN");
    const pending = await first.request("PUT", path, {
      auth: owner.auth,
      body: "<conference><state>pending</state></conference>",
    });
    assert.equal(pending.status, 200, pending.text);
    const running = await until("one instance runs the conference", async () =>
      instances.find((each) => each.logs.some((line) => line.includes('"msg":"conference started"'))),
    );
    const other = instances.find((each) => each !== running) as TestService;

    const caller = await sippCaller({
      sipPort: other.service.sipPort,
      sipAddress: addresses[instances.indexOf(other)],
      accessNumber: ACCESS_NUMBER,
      from: "+16045550183",
      dir,
      // 3 s after the PIN: on the line through the joining prompt and into the room.
      segments: [{ audio: murmur(1) }, { audio: dtmfTones(`${memberPin}#`) }, { audio: tone(700, 3, 0.25) }],
    });
    cleanups.push(() => caller.stop());
    const detail = () =>
      [caller.report(), ...instances.map((each) => each.logs.slice(-20).join("\n"))].join("\n");
    await until(
      "the caller connected in the room",
      async () => {
        const attendees = itemsOf(
          await first.request("GET", `${path}/attendees`, { auth: owner.auth }),
          "attendees",
          "attendee",
        );
        return attendees.length === 1 && textOf(attendees[0] as XmlNode, "state") === "connected"
          ? true
          : undefined;
      },
      { detail },
    );
    assert.ok(running.logs.some((line) => line.includes("dial-in: caller handed over by another instance")));
    assert.ok(!running.logs.some((line) => line.includes("SIP request from an untrusted source")), detail());
    await caller.expectSuccess();
  });
});
