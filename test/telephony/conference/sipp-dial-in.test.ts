/**
 * Dial-in from SIPp (test/fixtures/sipp/uac-dial-in.xml): a caller dials the access number and types
 * the member PIN, once as RFC 4733 events and once as in-band DTMF tones in its PCMU audio, from a
 * pcap this file generates; the API then shows it connected as a dial-in attendee.
 *
 * The stock /usr/share/sip-tester/dtmf_2833_*.pcap files cannot type a PIN: each holds one digit
 * with a fixed RTP timestamp on an SSRC of its own, so a repeated digit reads as one event, and the
 * keys would not share the audio's SSRC.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { loadConfig } from "../../../src/config.js";
import { encodeMulaw } from "../../../src/telephony/media/codec/g711.js";
import { dtmfDigitPackets } from "../../../src/telephony/media/dtmf/rfc4733.js";
import { rtpPacketLength, writeRtpPacket } from "../../../src/telephony/media/rtp/rtp-packet.js";
import { FRAME_SAMPLES, type PcapPacket, SAMPLE_RATE, tone, writeRtpPcap } from "../../helpers/audio.js";
import { createUser, startTestService, type TestService } from "../../helpers/service.js";
import { rtpPortRange, Sipp, skipWithout } from "../../helpers/sipp.js";
import { until } from "../../helpers/until.js";

const skip = skipWithout("sipp");
const ACCESS_NUMBER = "+16045550199";
const CALLER = "+16045550161";
const PCMU = 0;
const TELEPHONE_EVENT = 101;
/** -10 dBFS for each of a key's two tones. */
const DTMF_TONE_AMPLITUDE = 10 ** (-10 / 20);
const KEY_MS = 100;
const GAP_MS = 100;
/** Row and column frequencies of each key (ITU-T Q.23). */
const DTMF_HZ: Record<string, [number, number]> = {
  "1": [697, 1209],
  "2": [697, 1336],
  "3": [697, 1477],
  "4": [770, 1209],
  "5": [770, 1336],
  "6": [770, 1477],
  "7": [852, 1209],
  "8": [852, 1336],
  "9": [852, 1477],
  "*": [941, 1209],
  "0": [941, 1336],
  "#": [941, 1477],
};

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

/** Polls `probe` until it gives a value; on timeout the error ends with `detail()`. */
/** What the caller sends, in order: PCMU audio, or keys as RFC 4733 events. */
type Segment = { audio: Int16Array } | { events: string };

/** A quiet 440 Hz hum (-40 dBFS): audio flows, nothing in it reads as a key. */
function murmur(seconds: number): Int16Array {
  return tone(440, seconds, 0.01);
}

/** Each key as its two tones at -10 dBFS each for 100 ms, then 100 ms of silence. */
function dtmfTones(keys: string): Int16Array {
  const keySamples = (KEY_MS * SAMPLE_RATE) / 1000;
  const stepSamples = ((KEY_MS + GAP_MS) * SAMPLE_RATE) / 1000;
  const samples = new Int16Array(keys.length * stepSamples);
  for (const [index, key] of [...keys].entries()) {
    const [low, high] = DTMF_HZ[key] ?? assert.fail(`no DTMF tones for ${key}`);
    const lowTone = tone(low, KEY_MS / 1000, DTMF_TONE_AMPLITUDE);
    const highTone = tone(high, KEY_MS / 1000, DTMF_TONE_AMPLITUDE);
    for (let i = 0; i < keySamples; i++) {
      samples[index * stepSamples + i] = (lowTone[i] as number) + (highTone[i] as number);
    }
  }
  return samples;
}

/**
 * One RTP stream on one SSRC with consecutive sequence numbers: audio as 20 ms PCMU frames, each key
 * as 100 ms of RFC 4733 events followed by 100 ms of silent audio; the media clock runs through the
 * events (RFC 4733 §2.5.1.3), so the capture times are those of a real phone.
 */
function callerStream(segments: readonly Segment[]): PcapPacket[] {
  const ssrc = 0x0d1a1e11;
  const packets: PcapPacket[] = [];
  let sequenceNumber = 4000;
  let timestamp = 80_000;
  let clockMs = 0;
  const push = (marker: boolean, payloadType: number, ts: number, payload: Uint8Array, atMs: number) => {
    const header = { marker, payloadType, sequenceNumber, timestamp: ts >>> 0, ssrc, csrcs: [] };
    const datagram = Buffer.alloc(rtpPacketLength(header, payload.length));
    writeRtpPacket(header, payload, datagram);
    packets.push({ offsetMs: atMs, datagram });
    sequenceNumber = (sequenceNumber + 1) & 0xffff;
  };
  const sendAudio = (samples: Int16Array) => {
    for (let start = 0; start < samples.length; start += FRAME_SAMPLES) {
      const frame = new Int16Array(FRAME_SAMPLES);
      frame.set(samples.subarray(start, start + FRAME_SAMPLES));
      const payload = new Uint8Array(FRAME_SAMPLES);
      encodeMulaw(frame, payload);
      push(packets.length === 0, PCMU, timestamp, payload, clockMs);
      timestamp += FRAME_SAMPLES;
      clockMs += (FRAME_SAMPLES * 1000) / SAMPLE_RATE;
    }
  };
  for (const segment of segments) {
    if ("audio" in segment) {
      sendAudio(segment.audio);
      continue;
    }
    for (const key of segment.events) {
      const start = clockMs;
      const events = dtmfDigitPackets(key, { timestamp, durationMs: KEY_MS });
      for (const event of events) {
        push(event.marker, TELEPHONE_EVENT, event.timestamp, event.payload, start + event.sendOffsetMs);
      }
      clockMs = start + events.length * 20;
      timestamp += (clockMs - start) * (SAMPLE_RATE / 1000);
      sendAudio(new Int16Array((GAP_MS * SAMPLE_RATE) / 1000));
    }
  }
  return packets;
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
