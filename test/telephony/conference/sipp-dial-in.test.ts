/**
 * Dial-in from SIPp (test/fixtures/sipp/uac-dial-in.xml): a caller dials the access number and types
 * the member PIN, once as RFC 4733 events and once as in-band DTMF tones in its PCMU audio, from a
 * pcap this file generates (test/helpers/dial-in-caller.ts); the API then shows it connected as a
 * dial-in attendee.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { loadConfig } from "../../../src/config.js";
import { writeRtpPcap } from "../../helpers/audio.js";
import { callerStream, dtmfTones, murmur, type Segment } from "../../helpers/dial-in-caller.js";
import { createUser, startTestService, type TestService } from "../../helpers/service.js";
import { rtpPortRange, Sipp, skipWithout } from "../../helpers/sipp.js";
import { until } from "../../helpers/until.js";

const skip = skipWithout("sipp");
const ACCESS_NUMBER = "+16045550199";
const CALLER = "+16045550161";
const pcapDir = mkdtempSync(join(tmpdir(), "bridgeline-dial-in-"));
const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  rmSync(pcapDir, { recursive: true, force: true });
});

type Node = Record<string, unknown>;

function text(node: Node | undefined, field: string): string | undefined {
  const value = node?.[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "object") return String(value);
  const inner = (value as { "#text"?: unknown })["#text"];
  return inner === undefined ? undefined : String(inner);
}

async function startService(): Promise<TestService> {
  const service = await startTestService({
    sip: {
      ...loadConfig({}).sip,
      bindAddress: "127.0.0.1",
      port: 0,
      routes: [],
      rtpPorts: rtpPortRange(),
      accessNumbers: [ACCESS_NUMBER],
    },
  });
  cleanups.push(() => service.close());
  return service;
}

/**
 * A conference of a user at 604-555-0160 without a moderator and with one dial-in attendee, so that
 * nobody is dialled and the room waits for callers; resolves once the API shows it started.
 */
async function startedConference(api: TestService) {
  const owner = await createUser(
    api,
    '<phone-numbers type="array"><phone-number><subscriber-number>604-555-0160</subscriber-number></phone-number></phone-numbers>',
  );
  const created = await api.request("POST", `/users/${owner.id}/conferences`, {
    auth: owner.auth,
    body: `<conference><name>Dial-in call</name><scheduled-to-start-at>${new Date().toISOString()}</scheduled-to-start-at>
      <direct-dial type="boolean">true</direct-dial><no-moderator type="boolean">true</no-moderator></conference>`,
  });
  assert.equal(created.status, 201, created.text);
  const path = new URL(String(created.headers.location), "http://localhost").pathname;
  const memberPin = text(created.xml.conference as Node, "member-pin") ?? assert.fail("no member PIN");
  const attendee = await api.request("POST", `${path}/attendees`, {
    auth: owner.auth,
    body: '<attendee><dial-in type="boolean">true</dial-in></attendee>',
  });
  assert.equal(attendee.status, 201, attendee.text);
  const pending = await api.request("PUT", path, {
    auth: owner.auth,
    body: "<conference><state>pending</state></conference>",
  });
  assert.equal(pending.status, 200, pending.text);
  await until("the conference started", async () => {
    const conference = (await api.request("GET", path, { auth: owner.auth })).xml.conference as Node;
    return text(conference, "state") === "started" ? true : undefined;
  });
  return {
    memberPin,
    async attendees(): Promise<Node[]> {
      const list = (await api.request("GET", `${path}/attendees`, { auth: owner.auth })).xml.attendees as {
        attendee?: Node | Node[];
      };
      const all = list.attendee ?? [];
      return Array.isArray(all) ? all : [all];
    },
  };
}

/**
 * SIPp calls the access number from CALLER and plays `stream(pin)`, staying on for the stream's
 * length and a little more; the caller must show up connected meanwhile, and SIPp must end cleanly.
 */
async function dialInWith(name: string, stream: (pin: string) => Segment[]): Promise<void> {
  const api = await startService();
  const conference = await startedConference(api);
  const packets = callerStream(stream(`${conference.memberPin}#`));
  const pcap = join(pcapDir, `${name}.pcap`);
  writeRtpPcap(pcap, packets);
  const streamMs = packets.at(-1)?.offsetMs ?? 0;
  const caller = await Sipp.start({
    scenario: "uac-dial-in.xml",
    remote: `127.0.0.1:${api.service.sipPort}`,
    pcap,
    pauseMs: Math.round(streamMs) + 500,
    keys: { caller: CALLER },
    args: ["-s", ACCESS_NUMBER],
  });
  cleanups.push(() => caller.stop());

  const joined = await caller.unlessFailed(
    until(
      "the caller connected",
      async () => {
        const found = (await conference.attendees()).find(
          (attendee) => text(attendee, "phone-number-subscriber-number") === "6045550161",
        );
        return text(found, "state") === "connected" ? found : undefined;
      },
      {
        detail: () =>
          `${api.logs.filter((line) => line.includes('"component":"conferences"')).join("\n")}\n${caller.report()}`,
      },
    ),
  );
  assert.equal(text(joined, "dial-in"), "true");
  assert.equal(text(joined, "moderator"), "false");
  await caller.expectSuccess();
}

// In-band keys are detected on packets as they arrive, before the jitter buffer can trim or conceal
// frames of a stalled stream, so the two calls can run side by side.
describe("a SIPp caller dials in with the member PIN", { skip, concurrency: true }, () => {
  test("typed as RFC 4733 events on the audio's SSRC", async () => {
    await dialInWith("rfc4733", (keys) => [{ audio: murmur(1) }, { events: keys }, { audio: murmur(4) }]);
  });

  test("typed as in-band DTMF tones in PCMU audio", async () => {
    await dialInWith("inband", (keys) => [
      { audio: murmur(1) },
      { audio: dtmfTones(keys) },
      { audio: murmur(4) },
    ]);
  });
});
