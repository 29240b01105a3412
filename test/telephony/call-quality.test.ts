/**
 * A call's quality, both ways, at its end, against a real phone (baresip) over a bad network: a relay
 * that drops 3 % of the RTP each way and holds each packet back up to 40 ms. Our own counts give the
 * loss and jitter of what baresip sent; baresip's RTCP receiver reports give the loss of what we sent.
 * The same call over the relay without loss or delay is the clean reference.
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import type { CallQuality } from "../../src/domain/call-record.js";
import { Telephony } from "../../src/telephony/telephony.js";
import { exchangeAudio, ToneGenerator } from "../helpers/audio.js";
import { Baresip } from "../helpers/baresip.js";
import { IMPAIRED_RELAY_ADDRESS, ImpairedRelay } from "../helpers/impaired-relay.js";
import { CallRecord, skipWithout } from "../helpers/sipp.js";

const skip = skipWithout("baresip");
const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

/** Seconds of audio each way before the hang-up: a report or two from baresip (about every 5 s). */
const TALK_SECONDS = 9;

interface Outcome {
  quality: CallQuality | null;
  relay: ImpairedRelay;
  /** The loss each way the relay made, of the RTP it saw. */
  dropShareIn: number;
  dropShareOut: number;
}

/** A call we place to baresip through a relay impaired as given; its quality once hung up. */
async function callThrough(
  impairment: { loss: number; maxDelayMs: number; seed: number },
  /** Which of two calls made at once: each has RTP ports of its own. */
  lane: 0 | 1,
): Promise<Outcome> {
  const phone = await Baresip.start({ toneHz: 440, user: "+16045550123", toneSeconds: 60 });
  cleanups.push(() => phone.stop());
  // A small RTP range, so that the relay can listen on every port of it.
  const min = 20000 + 40 * (2 * Math.floor(Math.random() * 120) + lane);
  const rtpPorts = { min, max: min + 19 };
  const telephony = await Telephony.start({
    bindAddress: "127.0.0.1",
    publicAddress: IMPAIRED_RELAY_ADDRESS,
    sipPort: 0,
    trunk: phone.trunk,
    callerId: "+16045550100",
    rtpPorts,
  });
  cleanups.push(() => telephony.close());
  const relay = await ImpairedRelay.start({
    ports: [telephony.sipPort, ...Array.from({ length: 20 }, (_, i) => min + i)],
    lossIn: impairment.loss,
    lossOut: impairment.loss,
    maxDelayMs: impairment.maxDelayMs,
    seed: impairment.seed,
  });
  cleanups.push(() => relay.close());

  const record = new CallRecord(telephony.placeCall("604-555-0123"), () => phone.log);
  await record.reached("answered");
  await phone.waitForEvent("CALL_ESTABLISHED");
  // Asked before the end: it waits for it.
  const quality = record.call.quality();
  await exchangeAudio(record.call, TALK_SECONDS, new ToneGenerator(880));
  record.call.hangup();
  await record.reached("ended");
  await phone.waitForEvent("CALL_CLOSED");
  return {
    quality: await quality,
    relay,
    dropShareIn: relay.toService.dropped / relay.toService.rtp,
    dropShareOut: relay.fromService.dropped / relay.fromService.rtp,
  };
}

const describeOutcome = (outcome: Outcome) =>
  JSON.stringify({
    quality: outcome.quality,
    toService: outcome.relay.toService,
    fromService: outcome.relay.fromService,
  });

describe("a call's quality against baresip", { skip }, () => {
  test("3 % lost each way and 40 ms of jitter: both losses near 3 %, jitter well above a clean call's, a lower MOS", async () => {
    // The two calls at once (two phones, two services). Seed 4 drops between 1.8 and 4.5 % of each
    // way's packets over every first 150 to 460 of them: a report of baresip's, whenever it comes,
    // finds the loss near 3 % (so does our own count).
    const [clean, bad] = await Promise.all([
      callThrough({ loss: 0, maxDelayMs: 0, seed: 1 }, 0),
      callThrough({ loss: 0.03, maxDelayMs: 40, seed: 4 }, 1),
    ]);
    console.log(`clean: ${describeOutcome(clean)}`);
    console.log(`impaired: ${describeOutcome(bad)}`);
    const good = clean.quality;
    const poor = bad.quality;
    assert.ok(good !== null && poor !== null, describeOutcome(bad));

    // baresip reports on our stream (its RTCP went through the relay to us).
    assert.ok(bad.relay.toService.rtcp > 0, `baresip sent no RTCP: ${describeOutcome(bad)}`);
    assert.ok(poor.remoteLossShare !== null, `no receiver report about our stream: ${describeOutcome(bad)}`);

    // About TALK_SECONDS of 20 ms packets each way.
    for (const quality of [good, poor]) {
      assert.ok(quality.packetsSent > 0.8 * 50 * TALK_SECONDS, JSON.stringify(quality));
      assert.ok(quality.packetsReceived > 0.8 * 50 * TALK_SECONDS, JSON.stringify(quality));
    }
    const lossShare = poor.lossShare ?? -1;
    const remoteLossShare = poor.remoteLossShare ?? -1;
    assert.ok(lossShare >= 0.01 && lossShare <= 0.06, `we lost ${lossShare}: ${describeOutcome(bad)}`);
    assert.ok(
      remoteLossShare >= 0.01 && remoteLossShare <= 0.06,
      `baresip lost ${remoteLossShare}: ${describeOutcome(bad)}`,
    );
    // Our count is what the relay dropped on the way in (a packet held back past the end aside).
    assert.ok(Math.abs(lossShare - bad.dropShareIn) < 0.01, describeOutcome(bad));
    assert.equal(good.lossShare, 0);
    assert.ok((good.remoteLossShare ?? 0) < 0.01, describeOutcome(clean));

    // Held back 0-40 ms each: a mean difference of about 13 ms between packets' transit times.
    const jitter = poor.jitterMs ?? 0;
    const cleanJitter = good.jitterMs ?? Number.POSITIVE_INFINITY;
    assert.ok(jitter > 5 && jitter > 3 * cleanJitter, `jitter ${jitter} ms, clean ${cleanJitter} ms`);
    assert.ok((poor.remoteJitterMs ?? 0) > (good.remoteJitterMs ?? Number.POSITIVE_INFINITY));

    // Lost packets were concealed; the clean call concealed (almost) nothing.
    assert.ok((poor.concealmentShare ?? 0) > (good.concealmentShare ?? 1), describeOutcome(bad));
    const mos = poor.mos ?? 5;
    const cleanMos = good.mos ?? 0;
    assert.ok(cleanMos > 4.2 && mos < cleanMos - 0.2, `MOS ${mos}, clean ${cleanMos}`);
  });
});
