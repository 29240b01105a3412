/**
 * Wideband calls with baresip phones (its g722 and opus modules, 16 kHz microphones): the codec each
 * call settles on, tones above 4 kHz (which no 8 kHz call carries) heard both ways, and the keys of
 * an Opus phone whose offer lists telephone-event/8000 alone, as baresip 1.0's does.
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import type { Call, IncomingCall } from "../../../src/telephony/call.js";
import { Telephony } from "../../../src/telephony/telephony.js";
import { goertzelLevelDb, ToneGenerator } from "../../helpers/audio.js";
import { Baresip, type BaresipCodec } from "../../helpers/baresip.js";
import { CallRecord, rtpPortRange, skipWithout } from "../../helpers/sipp.js";

const skip = skipWithout("baresip");
const running: { stop(): Promise<void> }[] = [];
after(async () => {
  for (const peer of running) await peer.stop();
});

/** A wideband call's audio: 16 kHz, 20 ms frames of 320 samples. */
const RATE = 16000;
const FRAME = RATE / 50;
/** The phone's tone and ours: both above the 4 kHz that G.711 carries. */
const PHONE_HZ = 6000;
const OUR_HZ = 5000;

async function phoneAndService(user: string, codecs: readonly BaresipCodec[]) {
  const phone = await Baresip.start({ toneHz: PHONE_HZ, user, codecs });
  running.push(phone);
  const telephony = await Telephony.start({
    bindAddress: "127.0.0.1",
    sipPort: 0,
    trunk: phone.trunk,
    callerId: "+16045550100",
    rtpPorts: rtpPortRange(),
  });
  running.push({ stop: () => telephony.close() });
  return { phone, telephony };
}

/** The phone dials us; the call we answered. */
async function dialledIn(phone: Baresip, telephony: Telephony): Promise<CallRecord> {
  const taken = new Promise<CallRecord>((resolve) =>
    telephony.onIncomingCall((call: IncomingCall) => {
      const record = new CallRecord(call, () => phone.log);
      void call.accept();
      resolve(record);
    }),
  );
  assert.equal((await phone.command("dial", `sip:+16045550199@127.0.0.1:${telephony.sipPort}`)).ok, true);
  const record = await taken;
  await record.reached("answered");
  await phone.waitForEvent("CALL_ESTABLISHED");
  return record;
}

/** Sends our tone for `seconds` at the 20 ms pace and returns what the call heard meanwhile. */
async function exchange(call: Call, seconds: number): Promise<Int16Array> {
  const tone = new ToneGenerator(OUR_HZ, 0.5, RATE);
  const frame = new Int16Array(FRAME);
  const frames = Math.round(seconds * 50);
  const heard = new Int16Array(frames * FRAME);
  for (let i = 0; i < frames; i++) {
    call.sendAudio(tone.fill(frame));
    call.readAudio(heard.subarray(i * FRAME, (i + 1) * FRAME));
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return heard;
}

/** `who` heard `present` Hz and not `absent` Hz in 16 kHz `samples` (after their first half second). */
function assertWidebandTone(samples: Int16Array, present: number, absent: number, who: string): void {
  const settled = samples.subarray(RATE / 2);
  const presentDb = goertzelLevelDb(settled, present, RATE);
  const absentDb = goertzelLevelDb(settled, absent, RATE);
  assert.ok(presentDb > -20, `${who} heard ${present} Hz only at ${presentDb.toFixed(1)} dBFS`);
  assert.ok(absentDb < -40, `${who} heard ${absent} Hz at ${absentDb.toFixed(1)} dBFS`);
}

describe("wideband calls with baresip phones", { skip, concurrency: true }, () => {
  test("a G.722 phone calls us: G.722, and 6 and 5 kHz tones heard both ways", async () => {
    const { phone, telephony } = await phoneAndService("g722", ["G722"]);
    const record = await dialledIn(phone, telephony);
    assert.equal(record.call.codec, "G722");
    const heard = await exchange(record.call, 2);
    assert.equal((await phone.command("hangup")).ok, true);
    await record.reached("ended");
    assertWidebandTone(heard, PHONE_HZ, OUR_HZ, "we");
    assertWidebandTone(phone.heard(), OUR_HZ, PHONE_HZ, "baresip");
  });

  test("an Opus phone calls us: Opus, tones both ways, and its keys arrive as RFC 4733 events on its telephone-event/8000", async () => {
    const { phone, telephony } = await phoneAndService("opus", ["opus"]);
    const record = await dialledIn(phone, telephony);
    assert.equal(record.call.codec, "opus");
    const talk = exchange(record.call, 3);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    assert.equal((await phone.command("sndcode", "47")).ok, true);
    const heard = await talk;
    assert.equal((await phone.command("hangup")).ok, true);
    await record.reached("ended");
    assert.deepEqual(record.digits, ["4", "7"]);
    assertWidebandTone(heard.subarray(0, RATE), PHONE_HZ, OUR_HZ, "we");
    assertWidebandTone(phone.heard(), OUR_HZ, PHONE_HZ, "baresip");
  });

  test("we call a phone that has Opus and G.722: our offer puts Opus first, and it answers Opus", async () => {
    const { phone, telephony } = await phoneAndService("+16045550123", ["opus", "G722"]);
    const record = new CallRecord(telephony.placeCall("604-555-0123"), () => phone.log);
    await record.reached("answered");
    await phone.waitForEvent("CALL_ESTABLISHED");
    assert.equal(record.call.codec, "opus");
    const heard = await exchange(record.call, 2);
    record.call.hangup();
    await phone.waitForEvent("CALL_CLOSED");
    assertWidebandTone(heard, PHONE_HZ, OUR_HZ, "we");
    assertWidebandTone(phone.heard(), OUR_HZ, PHONE_HZ, "baresip");
  });
});
