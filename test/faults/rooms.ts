/**
 * Rooms of real phones for the fault tests: baresip phones that each play a tone, a conference of
 * them that dials direct and needs no moderator, and the proof that a room still mixes: each phone
 * heard the other's tone over its last seconds.
 */
import assert from "node:assert/strict";
import { loadConfig, type SipConfig } from "../../src/config.js";
import { goertzelLevelDb, SAMPLE_RATE } from "../helpers/audio.js";
import { Baresip } from "../helpers/baresip.js";
import type { TestService } from "../helpers/service.js";
import { rtpPortRange } from "../helpers/sipp.js";
import { until } from "../helpers/until.js";
import { itemsOf, textOf, type XmlNode } from "../helpers/xml.js";

export type Owner = { id: number; auth: [string, string] };

export interface Phone {
  baresip: Baresip;
  toneHz: number;
}

export async function startPhone(
  cleanups: Array<() => Promise<unknown>>,
  user: string,
  toneHz: number,
): Promise<Phone> {
  const baresip = await Baresip.start({ user, toneHz, toneSeconds: 120 });
  cleanups.push(() => baresip.stop());
  return { baresip, toneHz };
}

/** The service's SIP settings on loopback, each phone's number routed to it. */
export function sipCallingPhones(phones: readonly Phone[]): SipConfig {
  return {
    ...loadConfig({}).sip,
    bindAddress: "127.0.0.1",
    port: 0,
    callerId: "+16045550000",
    routes: phones.map(({ baresip }) => ({ prefix: `+1${baresip.user.slice(2)}`, trunk: baresip.trunk })),
    rtpPorts: rtpPortRange(),
  };
}

export interface Room {
  path: string;
  id: number;
  phones: readonly Phone[];
}

/** A conference of `phones` that dials direct, has no moderator and starts now; `extra` goes in it. */
export async function startRoom(
  api: TestService,
  owner: Owner,
  phones: readonly Phone[],
  extra = "",
): Promise<Room> {
  const created = await api.request("POST", `/users/${owner.id}/conferences`, {
    auth: owner.auth,
    body: `<conference><name>Faults</name><scheduled-to-start-at>${new Date().toISOString()}</scheduled-to-start-at>
      <direct-dial type="boolean">true</direct-dial><no-moderator type="boolean">true</no-moderator>
      <announce-attendees type="boolean">false</announce-attendees>${extra}</conference>`,
  });
  assert.equal(created.status, 201, created.text);
  const path = new URL(String(created.headers.location), "http://localhost").pathname;
  for (const { baresip } of phones) {
    const added = await api.request("POST", `${path}/attendees`, {
      auth: owner.auth,
      body: `<attendee><phone-number>${baresip.user}</phone-number></attendee>`,
    });
    assert.equal(added.status, 201, added.text);
  }
  const pending = await api.request("PUT", path, {
    auth: owner.auth,
    body: "<conference><state>pending</state></conference>",
  });
  assert.equal(pending.status, 200, pending.text);
  return { path, id: Number(path.split("/").pop()), phones };
}

/** The attendees' states, in the order listed. */
export async function attendeeStates(api: TestService, owner: Owner, room: Room): Promise<XmlNode[]> {
  const list = await api.request("GET", `${room.path}/attendees`, { auth: owner.auth });
  assert.equal(list.status, 200, list.text);
  return itemsOf(list, "attendees", "attendee");
}

export async function conferenceOf(api: TestService, owner: Owner, room: Room): Promise<XmlNode> {
  const read = await api.request("GET", room.path, { auth: owner.auth });
  assert.equal(read.status, 200, read.text);
  return read.xml.conference as XmlNode;
}

/** Waits until every phone of the rooms is connected, as the API says. */
export async function allConnected(api: TestService, owner: Owner, rooms: readonly Room[]): Promise<void> {
  await until("every phone connected", async () => {
    for (const room of rooms) {
      const states = (await attendeeStates(api, owner, room)).map((item) => textOf(item, "state"));
      if (states.length !== room.phones.length || states.some((state) => state !== "connected"))
        return undefined;
    }
    return true;
  });
}

/**
 * Hangs up the room's phones and checks that each heard every other phone's tone in every second of
 * its last `seconds` (baresip writes what it heard when the call closes): a gap in the mixing shows.
 */
export async function assertHeardEachOther(room: Room, seconds: number): Promise<void> {
  for (const { baresip } of room.phones) await baresip.command("hangup");
  await Promise.all(room.phones.map(({ baresip }) => baresip.waitForEvent("CALL_CLOSED")));
  for (const listener of room.phones) {
    const heard = listener.baresip.heard();
    assert.ok(
      heard.length >= seconds * SAMPLE_RATE,
      `${listener.baresip.user} heard only ${heard.length} samples`,
    );
    for (let second = 1; second <= seconds; second++) {
      const end = heard.length - (second - 1) * SAMPLE_RATE;
      const window = heard.subarray(end - SAMPLE_RATE, end);
      for (const talker of room.phones) {
        if (talker === listener) continue;
        const level = goertzelLevelDb(window, talker.toneHz);
        assert.ok(
          level > -20,
          `${listener.baresip.user} hears ${talker.baresip.user} at ${level.toFixed(1)} dBFS ${second} s before the end`,
        );
      }
    }
  }
}
