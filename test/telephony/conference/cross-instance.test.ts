/**
 * Two instances on one PostgreSQL database; a PIN-only conference runs on whichever claimed it. One
 * SIPp caller dials the instance running the room, another dials the other instance, which admits it
 * and carries it over an internal call. Both are connected dial-in attendees, hear each other (read
 * off the wire with tshark), and the carried caller's keypad command (*6, mute) works in the room.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { loadConfig } from "../../../src/config.js";
import { goertzelLevelDb, tone } from "../../helpers/audio.js";
import { createTestDatabase, postgresOnly } from "../../helpers/databases.js";
import { dtmfTones, murmur, sippCaller } from "../../helpers/dial-in-caller.js";
import { createUser, startTestService, type TestService } from "../../helpers/service.js";
import { rtpPortRange, skipWithout } from "../../helpers/sipp.js";
import { until } from "../../helpers/until.js";
import { WireCapture } from "../../helpers/wire.js";
import { itemsOf, textOf, type XmlNode } from "../../helpers/xml.js";

// Two instances share a database only on PostgreSQL.
const skip = postgresOnly.skip || skipWithout("sipp") || skipWithout("tshark");
const ACCESS_NUMBER = "+16045550199";
const LOCAL_HZ = 500;
const CARRIED_HZ = 1000;

const dir = mkdtempSync(join(tmpdir(), "bridgeline-cross-instance-"));
const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  rmSync(dir, { recursive: true, force: true });
});

async function instance(databaseUrl: string, rtpPorts: { min: number; max: number }): Promise<TestService> {
  const service = await startTestService({
    databaseUrl,
    sip: {
      ...loadConfig({}).sip,
      bindAddress: "127.0.0.1",
      port: 0,
      rtpPorts,
      accessNumbers: [ACCESS_NUMBER],
    },
  });
  cleanups.push(() => service.close());
  return service;
}

describe("a caller whose room runs on the other instance", { skip }, () => {
  test("is carried there: in the room, heard and hearing, its keypad obeyed", async () => {
    const database = await createTestDatabase();
    cleanups.push(() => database.drop());
    const ports = [rtpPortRange(), rtpPortRange()] as const;
    const instances = [await instance(database.url, ports[0]), await instance(database.url, ports[1])];
    const [first] = instances as [TestService, TestService];
    const owner = await createUser(first);
    const created = await first.request("POST", `/users/${owner.id}/conferences`, {
      auth: owner.auth,
      body: `<conference><name>Across</name><scheduled-to-start-at>${new Date().toISOString()}</scheduled-to-start-at>
        <no-moderator type="boolean">true</no-moderator></conference>`,
    });
    assert.equal(created.status, 201, created.text);
    const path = new URL(String(created.headers.location), "http://localhost").pathname;
    const memberPin = textOf(created.xml.conference as XmlNode, "member-pin") ?? assert.fail("no PIN");
    assert.equal(
      (
        await first.request("PUT", path, {
          auth: owner.auth,
          body: "<conference><state>pending</state></conference>",
        })
      ).status,
      200,
    );
    const running = await until("one instance runs the conference", async () => {
      const found = instances.find((each) =>
        each.logs.some((line) => line.includes('"msg":"conference started"')),
      );
      return found;
    });
    const other = instances.find((each) => each !== running) as TestService;

    const capture = await WireCapture.start(
      ports.map((range) => `udp src portrange ${range.min}-${range.max}`).join(" or "),
    );
    cleanups.push(() => capture.dispose());
    const local = await sippCaller({
      sipPort: running.service.sipPort,
      accessNumber: ACCESS_NUMBER,
      from: "+16045550181",
      dir,
      segments: [{ audio: murmur(1) }, { events: `${memberPin}#` }, { audio: tone(LOCAL_HZ, 8, 0.25) }],
    });
    const carried = await sippCaller({
      sipPort: other.service.sipPort,
      accessNumber: ACCESS_NUMBER,
      from: "+16045550182",
      dir,
      segments: [
        { audio: murmur(1) },
        { audio: dtmfTones(`${memberPin}#`) },
        { audio: tone(CARRIED_HZ, 5, 0.25) },
        { events: "*6" },
        { audio: tone(CARRIED_HZ, 3, 0.25) },
      ],
    });
    cleanups.push(
      () => local.stop(),
      () => carried.stop(),
    );
    const attendees = async () =>
      itemsOf(await first.request("GET", `${path}/attendees`, { auth: owner.auth }), "attendees", "attendee");
    const detail = () =>
      [local.report(), carried.report(), ...instances.map((each) => each.logs.slice(-30).join("\n"))].join(
        "\n",
      );
    await until(
      "both callers connected",
      async () => {
        const all = await attendees();
        return all.length === 2 && all.every((each) => textOf(each, "state") === "connected")
          ? all
          : undefined;
      },
      { detail },
    );
    assert.ok(
      other.logs.some((line) => line.includes("dial-in: caller carried to the instance running the room")),
    );
    assert.ok(running.logs.some((line) => line.includes("dial-in: caller handed over by another instance")));
    const carriedAttendee = async () =>
      (await attendees()).find((each) => textOf(each, "phone-number-subscriber-number") === "6045550182");
    await until(
      "the carried caller muted itself with *6",
      async () => (textOf((await carriedAttendee()) ?? {}, "muted") === "true" ? true : undefined),
      { detail },
    );

    await local.expectSuccess();
    await carried.expectSuccess();
    await capture.stop();
    const localHeard = capture.audioTo(local.mediaPort);
    const carriedHeard = capture.audioTo(carried.mediaPort);
    const level = (audio: Int16Array, hz: number) => goertzelLevelDb(audio, hz).toFixed(1);
    assert.ok(
      goertzelLevelDb(localHeard, CARRIED_HZ) > -35,
      `the local caller heard the carried one at ${level(localHeard, CARRIED_HZ)} dBFS`,
    );
    assert.ok(
      goertzelLevelDb(carriedHeard, LOCAL_HZ) > -35,
      `the carried caller heard the local one at ${level(carriedHeard, LOCAL_HZ)} dBFS`,
    );
    assert.ok(
      goertzelLevelDb(carriedHeard, CARRIED_HZ) < goertzelLevelDb(carriedHeard, LOCAL_HZ) - 15,
      "the carried caller is not sent its own voice",
    );
  });
});
