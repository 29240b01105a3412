/**
 * Two-way audio and digits with baresip, a real softphone: it plays a 440 Hz tone and records what
 * it hears; we send 880 Hz. Each side must hear the other's tone and not its own (no loopback, no
 * crossed streams), measured with a Goertzel filter.
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import type { IncomingCall } from "../../../src/telephony/call.js";
import { Telephony } from "../../../src/telephony/telephony.js";
import { assertTone, exchangeAudio, SAMPLE_RATE, ToneGenerator } from "../../helpers/audio.js";
import { Baresip } from "../../helpers/baresip.js";
import { CallRecord, rtpPortRange, skipWithout } from "../../helpers/sipp.js";

const skip = skipWithout("baresip");
const running: { stop(): Promise<void> }[] = [];
after(async () => {
  for (const peer of running) await peer.stop();
});

async function start(user: string): Promise<{ phone: Baresip; telephony: Telephony }> {
  const phone = await Baresip.start({ toneHz: 440, user });
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

describe("calls with baresip", { skip, concurrency: true }, () => {
  test("we call baresip: both hear the other's tone, its digits reach us, our hangup closes its call", async () => {
    const { phone, telephony } = await start("+16045550123");
    const record = new CallRecord(telephony.placeCall("604-555-0123"), () => phone.log);
    await record.reached("answered");
    await phone.waitForEvent("CALL_ESTABLISHED");

    const { heard } = await exchangeAudio(record.call, 3, new ToneGenerator(880));
    // The first half second may still be jitter-buffer fill.
    assertTone(heard.subarray(SAMPLE_RATE / 2), 440, 880, "we");

    assert.equal((await phone.command("sndcode", "12")).ok, true);
    await exchangeAudio(record.call, 1, new ToneGenerator(880));
    assert.deepEqual(record.digits, ["1", "2"]);

    record.call.hangup();
    await phone.waitForEvent("CALL_CLOSED");
    await record.reached("ended");
    assert.equal(record.end?.by, "local");
    const phoneHeard = phone.heard();
    assert.ok(phoneHeard.length > SAMPLE_RATE * 2, `baresip recorded only ${phoneHeard.length} samples`);
    assertTone(phoneHeard.subarray(SAMPLE_RATE / 2), 880, 440, "baresip");
  });

  test("baresip calls us: the handler answers, we hear it, its hangup ends our call", async () => {
    const { phone, telephony } = await start("caller");
    const calls: CallRecord[] = [];
    telephony.onIncomingCall((call: IncomingCall) => {
      calls.push(new CallRecord(call, () => phone.log));
      call.ring();
      void call.accept();
    });
    assert.equal((await phone.command("dial", `sip:+16045550199@127.0.0.1:${telephony.sipPort}`)).ok, true);
    await phone.waitForEvent("CALL_ESTABLISHED");
    const record = calls[0];
    assert.ok(record !== undefined);
    await record.reached("answered");
    assert.equal((record.call as IncomingCall).to, "+16045550199");

    const { heard } = await exchangeAudio(record.call, 1.5, new ToneGenerator(880));
    assertTone(heard.subarray(SAMPLE_RATE / 2), 440, 880, "we");

    assert.equal((await phone.command("hangup")).ok, true);
    await record.reached("ended");
    assert.equal(record.end?.by, "remote");
    await phone.waitForEvent("CALL_CLOSED");
    assertTone(phone.heard().subarray(SAMPLE_RATE / 2), 880, 440, "baresip");
  });
});
