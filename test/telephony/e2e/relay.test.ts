/**
 * Relaying one call to another, packet for packet (how a caller reaches a room on another instance):
 * a baresip caller dials us, we call a second baresip and relay the two. Each must hear the other's
 * tone and not its own, and the caller's keys must reach the far phone as RFC 4733 events; when the
 * far phone hangs up, the relay ends.
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import type { IncomingCall } from "../../../src/telephony/call.js";
import { Telephony } from "../../../src/telephony/telephony.js";
import { assertTone, SAMPLE_RATE } from "../../helpers/audio.js";
import { Baresip } from "../../helpers/baresip.js";
import { rtpPortRange, skipWithout } from "../../helpers/sipp.js";
import { until } from "../../helpers/until.js";

const skip = skipWithout("baresip");
const running: { stop(): Promise<void> }[] = [];
after(async () => {
  for (const peer of running.reverse()) await peer.stop();
});

async function phone(user: string, toneHz: number): Promise<Baresip> {
  const started = await Baresip.start({ toneHz, user });
  running.push(started);
  return started;
}

describe("a call relayed to another", { skip }, () => {
  // Media threads: the placed call's stream opens next to the caller's, on the same thread.
  for (const mediaThreads of [0, 2]) {
    test(`both hear each other and the caller's keys reach the far end (media threads: ${mediaThreads})`, async () => {
      const caller = await phone("caller", 440);
      const far = await phone("+16045550123", 1000);
      const telephony = await Telephony.start({
        bindAddress: "127.0.0.1",
        sipPort: 0,
        callerId: "+16045550100",
        rtpPorts: rtpPortRange(),
        mediaThreads,
      });
      running.push({ stop: () => telephony.close() });
      const incoming = new Promise<IncomingCall>((resolve) => telephony.onIncomingCall(resolve));
      assert.equal((await caller.command("dial", `sip:room@127.0.0.1:${telephony.sipPort}`)).ok, true);
      const call = await incoming;
      assert.equal(await call.accept(), true);
      const leg = telephony.callUri(far.uri, { headers: [["X-Test", "relayed"]], nextTo: call });
      await new Promise<void>((resolve, reject) => {
        leg.once("answered", resolve);
        leg.once("failed", (failure) => reject(new Error(`the far phone did not answer: ${failure.reason}`)));
      });
      await far.waitForEvent("CALL_ESTABLISHED");
      call.relay(leg);
      // Let three seconds of each tone cross, then press keys at the caller.
      await new Promise((resolve) => setTimeout(resolve, 3000));
      assert.equal((await caller.command("sndcode", "47")).ok, true);
      await until("the keys reached the far phone", async () =>
        /received event: '4'[\s\S]*received event: '7'/.test(far.log) ? true : undefined,
      );
      leg.hangup();
      await far.waitForEvent("CALL_CLOSED");
      call.hangup();
      await caller.waitForEvent("CALL_CLOSED");
      // The last three seconds of each recording: the relay, after its first packets.
      const last = (samples: Int16Array) => samples.subarray(Math.max(0, samples.length - 3 * SAMPLE_RATE));
      assertTone(last(caller.heard()), 1000, 440, "the caller");
      assertTone(last(far.heard()), 440, 1000, "the far phone");
    });
  }
});
