/**
 * Wideband rooms end to end, with real phones (baresip's g722 and opus modules beside G.711): three
 * phones of three codecs in one room each hear the two others; a 6 kHz tone from the Opus phone
 * reaches the G.722 phone and not the PCMU phone, nor folded into its band (at 2 kHz). And an Opus
 * phone behind a link that drops 5 % of its packets is heard without a gap over 40 ms: the room
 * recovers the lost frames from Opus's in-band FEC and conceals the rest.
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { loadConfig } from "../../../src/config.js";
import { goertzelLevelDb } from "../../helpers/audio.js";
import { Baresip, type BaresipCodec } from "../../helpers/baresip.js";
import {
  IMPAIRED_RELAY_ADDRESS,
  ImpairedRelay,
  isRtpOfPayloadType,
  randomShare,
} from "../../helpers/impaired-relay.js";
import {
  createPendingConference,
  createUser,
  startTestService,
  type TestService,
} from "../../helpers/service.js";
import { rtpPortRange, skipWithout } from "../../helpers/sipp.js";
import { until } from "../../helpers/until.js";
import { textOf, type XmlNode } from "../../helpers/xml.js";

const skip = skipWithout("baresip");
const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

async function phone(
  user: string,
  toneHz: number,
  codecs: readonly BaresipCodec[],
  opusLossPercent?: number,
): Promise<Baresip> {
  const started = await Baresip.start({ user, toneHz, codecs, opusLossPercent });
  cleanups.push(() => started.stop());
  return started;
}

async function startService(
  phones: Baresip[],
  sip: { publicAddress?: string; rtpPorts?: { min: number; max: number } } = {},
) {
  const service = await startTestService({
    sip: {
      ...loadConfig({}).sip,
      bindAddress: "127.0.0.1",
      port: 0,
      callerId: "+16045550000",
      routes: phones.map((each) => ({ prefix: `+1${each.user.slice(2)}`, trunk: each.trunk })),
      rtpPorts: sip.rtpPorts ?? rtpPortRange(),
      ...(sip.publicAddress === undefined ? {} : { publicAddress: sip.publicAddress }),
    },
  });
  cleanups.push(() => service.close());
  return service;
}

/** A conference of the phones that dials direct, has no moderator, starts now, and has every phone connected. */
async function roomOf(api: TestService, phones: Baresip[]): Promise<void> {
  const owner = await createUser(api);
  const path = await createPendingConference(api, owner, {
    name: "Wideband",
    numbers: phones.map((each) => each.user),
    extra: `<direct-dial type="boolean">true</direct-dial><no-moderator type="boolean">true</no-moderator>
      <announce-attendees type="boolean">false</announce-attendees>`,
  });
  await until("every phone connected", async () => {
    const list = await api.request("GET", `${path}/attendees`, { auth: owner.auth });
    const items = (list.xml.attendees as { attendee?: XmlNode | XmlNode[] }).attendee ?? [];
    const states = (Array.isArray(items) ? items : [items]).map((item) => textOf(item, "state"));
    return states.length === phones.length && states.every((state) => state === "connected")
      ? true
      : undefined;
  });
}

/** Hangs every phone up and returns what each heard over its last `seconds`, at its own rate. */
async function hangUpAndHear(phones: Baresip[], seconds: number): Promise<Int16Array[]> {
  for (const each of phones) await each.command("hangup");
  await Promise.all(phones.map((each) => each.waitForEvent("CALL_CLOSED")));
  return phones.map((each) => {
    const heard = each.heard();
    return heard.subarray(Math.max(0, heard.length - seconds * each.sampleRate));
  });
}

const HEARD_DB = -25;
/**
 * What a fault would put at -6 to -20 dBFS (a phone's own tone not taken out of what it hears, a
 * 6 kHz tone folded to 2 kHz) stays below this. Not lower: baresip's Opus stream itself carries
 * products of its 6 kHz tone near -40 dBFS (measured in what we decode from it in a call of its own:
 * 2 and 2.5 kHz at -40, 7 kHz at -39), which the other phones hear with it.
 */
const NOT_HEARD_DB = -30;

function levelsOf(samples: Int16Array, rate: number, frequencies: number[]): string {
  return frequencies.map((hz) => `${hz} Hz ${goertzelLevelDb(samples, hz, rate).toFixed(1)} dBFS`).join(", ");
}

describe("wideband rooms with real phones", { skip, concurrency: true }, () => {
  test("a G.722, an Opus and a PCMU phone in one room each hear the two others; 6 kHz reaches the G.722 phone, not the PCMU phone", async () => {
    // Opus plays 6 kHz (above what 8 kHz carries), G.722 1.2 kHz, PCMU 500 Hz.
    const wide = await phone("+16045550301", 1200, ["G722"]);
    const opus = await phone("+16045550302", 6000, ["opus"]);
    const narrow = await phone("+16045550303", 500, ["PCMU"]);
    const api = await startService([wide, opus, narrow]);
    await roomOf(api, [wide, opus, narrow]);
    // Three seconds in the room together.
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const [wideHeard, opusHeard, narrowHeard] = (await hangUpAndHear([wide, opus, narrow], 2)) as [
      Int16Array,
      Int16Array,
      Int16Array,
    ];

    const check = (who: string, heard: Int16Array, rate: number, present: number[], absent: number[]) => {
      const levels = levelsOf(heard, rate, [...present, ...absent]);
      for (const hz of present)
        assert.ok(goertzelLevelDb(heard, hz, rate) > HEARD_DB, `${who} should hear ${hz} Hz: ${levels}`);
      for (const hz of absent)
        assert.ok(
          goertzelLevelDb(heard, hz, rate) < NOT_HEARD_DB,
          `${who} should not hear ${hz} Hz: ${levels}`,
        );
    };
    check("the G.722 phone", wideHeard, wide.sampleRate, [6000, 500], [1200]);
    check("the Opus phone", opusHeard, opus.sampleRate, [1200, 500], [6000]);
    // 6 kHz cannot be in 8 kHz audio; folded, it would be at 8000 - 6000 = 2000 Hz.
    check("the PCMU phone", narrowHeard, narrow.sampleRate, [1200], [2000, 500]);
  });

  test("an Opus phone losing 5 % of its packets on the way in is heard with no gap over 40 ms", async () => {
    // 3 kHz: with loss planned for, the phone's encoder narrows its band to make room for FEC, and
    // a 6 kHz tone would be cut.
    const lossy = await phone("+16045550311", 3000, ["opus"], 10);
    const listener = await phone("+16045550312", 700, ["G722"]);
    // A small RTP range, so that the relay can listen on every port of it.
    const min = 20000 + 40 * Math.floor(Math.random() * 240);
    const rtpPorts = { min, max: min + 19 };
    const api = await startService([lossy, listener], { publicAddress: IMPAIRED_RELAY_ADDRESS, rtpPorts });
    const rtpPortList = Array.from({ length: rtpPorts.max - rtpPorts.min + 1 }, (_, i) => rtpPorts.min + i);
    // Only the Opus phone's audio is dropped: Opus under our offer's payload type (111), or baresip's
    // own (96) had it offered first.
    const lose = randomShare(0.05, 27);
    let opusPackets = 0;
    const relay = await ImpairedRelay.start({
      ports: [api.service.sipPort, ...rtpPortList],
      dropIn: (datagram) => {
        if (!isRtpOfPayloadType(datagram, 111) && !isRtpOfPayloadType(datagram, 96)) return false;
        opusPackets++;
        return lose();
      },
    });
    cleanups.push(() => relay.close());
    await roomOf(api, [lossy, listener]);
    await new Promise((resolve) => setTimeout(resolve, 4000));
    // The room rebuilt lost frames from the next packets' in-band FEC (our offer asks for it).
    const streams = (await api.service.telephony.media.stats()).threads.flatMap((thread) => thread.streams);
    const recovered = streams.reduce((sum, stream) => sum + stream.framesRecovered, 0);
    // The listener hangs up first: what it heard to its end is the lossy phone's tone throughout.
    const [heard] = (await hangUpAndHear([listener, lossy], 3)) as [Int16Array, Int16Array];

    const dropped = relay.toService.dropped;
    assert.ok(recovered > 0, `no frame was recovered from FEC, ${dropped} packets dropped`);
    assert.ok(opusPackets > 150, `only ${opusPackets} Opus packets went through the relay`);
    assert.ok(dropped >= opusPackets * 0.03, `only ${dropped} of ${opusPackets} Opus packets were dropped`);
    // The tone's level in each 10 ms of what the listener heard: a gap is a run of windows far below
    // the tone's own level.
    const rate = listener.sampleRate;
    const window = rate / 100;
    const levels: number[] = [];
    for (let start = 0; start + window <= heard.length; start += window)
      levels.push(goertzelLevelDb(heard.subarray(start, start + window), 3000, rate));
    const sorted = [...levels].sort((a, b) => a - b);
    const typical = sorted[Math.floor(sorted.length / 2)] as number;
    assert.ok(typical > HEARD_DB, `the listener heard the Opus phone's tone at ${typical.toFixed(1)} dBFS`);
    let run = 0;
    let longest = 0;
    for (const level of levels) {
      run = level < typical - 20 ? run + 1 : 0;
      longest = Math.max(longest, run);
    }
    assert.ok(
      longest * 10 <= 40,
      `a gap of ${longest * 10} ms in the tone (${dropped} of ${opusPackets} packets dropped)`,
    );
  });
});
