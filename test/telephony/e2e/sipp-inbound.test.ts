/**
 * Calls and requests from SIPp (test/fixtures/sipp/uac-*.xml) to the stack: the incoming-call
 * handler rings, accepts or rejects; the stack itself refuses what it cannot take. SIPp's exit code
 * 0 means it saw the responses its scenario expects.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import type { IncomingCall } from "../../../src/telephony/call.js";
import type { SessionTimerSettings } from "../../../src/telephony/sip/user-agent/session-timer.js";
import { Telephony } from "../../../src/telephony/telephony.js";
import { exchangeAudio, goertzelLevelDb, rtpStream, writeRtpPcap } from "../../helpers/audio.js";
import { CallRecord, rtpPortRange, Sipp, skipWithout } from "../../helpers/sipp.js";

const skip = skipWithout("sipp");
const CALLED = "+16045550199";
const pcapDir = mkdtempSync(join(tmpdir(), "bridgeline-pcap-"));
const running: { stop(): Promise<void> }[] = [];
after(async () => {
  for (const peer of running) await peer.stop();
  rmSync(pcapDir, { recursive: true, force: true });
});

/** A stack with `handler` taking its calls, and SIPp calling it with `scenario`. */
async function callIn(
  scenario: string,
  handler: ((call: IncomingCall) => void) | null,
  options: { pauseMs?: number; pcap?: string; sessionTimer?: SessionTimerSettings } = {},
): Promise<{ telephony: Telephony; peer: Sipp }> {
  const telephony = await Telephony.start({
    bindAddress: "127.0.0.1",
    sipPort: 0,
    rtpPorts: rtpPortRange(),
    sessionTimer: options.sessionTimer,
  });
  running.push({ stop: () => telephony.close() });
  if (handler !== null) telephony.onIncomingCall(handler);
  const peer = await Sipp.start({
    scenario,
    remote: `127.0.0.1:${telephony.sipPort}`,
    args: ["-s", CALLED],
    pauseMs: options.pauseMs,
    pcap: options.pcap,
  });
  running.push(peer);
  return { telephony, peer };
}

/** Resolves with the first incoming call, recorded, after ringing and accepting it. */
function acceptingHandler(): { handler: (call: IncomingCall) => void; answered: Promise<CallRecord> } {
  let resolveAnswered: (record: CallRecord) => void = () => {};
  let rejectAnswered: (error: Error) => void = () => {};
  const answered = new Promise<CallRecord>((resolve, reject) => {
    resolveAnswered = resolve;
    rejectAnswered = reject;
    // A scenario SIPp refuses never calls: fail instead of waiting for ever.
    setTimeout(() => reject(new Error("no call was answered within 20 s")), 20_000).unref();
  });
  const handler = (call: IncomingCall) => {
    const record = new CallRecord(call);
    call.ring();
    void call.accept().then((ok) => {
      if (ok) resolveAnswered(record);
      else
        rejectAnswered(
          new Error(
            `accept() resolved false (${record.events.join(", ")}: ${JSON.stringify(record.failure)})`,
          ),
        );
    });
  };
  return { handler, answered };
}

describe("calls and requests from SIPp", { skip, concurrency: true }, () => {
  test("an accepted call gets the digit of the stock dtmf_2833_1.pcap and ends by the caller's BYE", async () => {
    const { handler, answered } = acceptingHandler();
    const { peer } = await callIn("uac-call.xml", handler, {
      pauseMs: 1500,
      pcap: "/usr/share/sip-tester/dtmf_2833_1.pcap",
    });
    const record = await answered;
    const call = record.call as IncomingCall;
    assert.equal(call.direction, "inbound");
    assert.equal(call.from, "+16045550111");
    assert.equal(call.to, CALLED);
    await record.reached("ended");
    assert.equal(record.end?.by, "remote");
    assert.deepEqual(record.digits, ["1"]);
    await peer.expectSuccess();
  });

  test("keys sent by SIP INFO arrive once each; an INFO of another type gets 415, an empty one 200", async () => {
    const { handler, answered } = acceptingHandler();
    const { peer } = await callIn("uac-info-digits.xml", handler);
    const record = await answered;
    await record.reached("ended");
    await peer.expectSuccess();
    assert.equal(record.end?.by, "remote");
    assert.deepEqual(record.digits, ["4", "7", "#"]);
  });

  // Session timers (RFC 4028) with intervals of seconds: the tests lower our minimum from 90 s.
  const shortTimers = { sessionTimer: { interval: 1800, minimum: 2 } };

  for (const [method, scenario] of [
    ["UPDATE", "uac-timer-update.xml"],
    ["re-INVITE", "uac-timer-reinvite.xml"],
  ] as const) {
    test(`a caller asking us to refresh a 4 s session timer keeps its call past three refreshes by ${method}`, async () => {
      const { handler, answered } = acceptingHandler();
      const { peer } = await callIn(scenario, handler, shortTimers);
      const record = await answered;
      // The caller checks each refresh and hangs up after the third (about 6 s).
      await peer.expectSuccess();
      await record.reached("ended");
      assert.equal(record.end?.by, "remote");
    });
  }

  test("a caller that never refreshes the session timer it took on is hung up before it expires", async () => {
    const { handler, answered } = acceptingHandler();
    const { peer } = await callIn("uac-timer-expire.xml", handler, shortTimers);
    const record = await answered;
    await record.reached("ended");
    await peer.expectSuccess();
    // The caller checks our BYE's Reason (RFC 3326) too.
    assert.deepEqual(record.end, {
      by: "local",
      reason: "session expired: no refresh came",
      cause: { protocol: "SIP", cause: 408, text: "Session timeout" },
    });
  });

  test("a caller that requires 100rel gets a reliable 180, PRACKs it, and is answered", async () => {
    let record: CallRecord | undefined;
    const { peer } = await callIn(
      "uac-100rel.xml",
      (call) => {
        record = new CallRecord(call);
        call.ring();
        // Answered once the 180 has had time to be PRACKed (the caller expects that order).
        setTimeout(() => void call.accept(), 700);
      },
      { pauseMs: 500 },
    );
    await peer.expectSuccess();
    const answered = record ?? assert.fail("no call came");
    await answered.reached("ended");
    assert.equal(answered.end?.by, "remote");
  });

  test("a caller that requires 100rel and sends no offer hears no 180 at all, and is answered with our offer (RFC 3262 sections 3 and 5)", async () => {
    let record: CallRecord | undefined;
    const { peer } = await callIn(
      "uac-offerless-100rel.xml",
      (call) => {
        record = new CallRecord(call);
        call.ring();
        // Answered a while after ringing, so that a 180, were one sent, would reach the caller first.
        setTimeout(() => void call.accept(), 300);
      },
      { pauseMs: 300 },
    );
    await peer.expectSuccess();
    const answered = record ?? assert.fail("no call came");
    await answered.reached("ended");
    assert.deepEqual(answered.events, ["answered", "ended"]);
    assert.doesNotMatch(peer.messages(), /SIP\/2\.0 18\d/);
  });

  test("an INVITE and a re-INVITE without an offer: ours goes in the 200, the ACK's answer is taken", async () => {
    const { handler, answered } = acceptingHandler();
    const { peer } = await callIn("uac-offerless.xml", handler, {
      pauseMs: 1000,
      pcap: "/usr/share/sip-tester/dtmf_2833_1.pcap",
    });
    const record = await answered;
    await record.reached("ended");
    await peer.expectSuccess();
    assert.equal(record.end?.by, "remote");
    // The key travelled by RTP to the port our offer named, as the ACK's answer said.
    assert.deepEqual(record.digits, ["1"]);
    // The answer in the re-INVITE's ACK put us on hold.
    assert.ok(record.events.includes("held"), `events: ${record.events.join(", ")}`);
  });

  test("a call playing a 440 Hz tone then 1, 2, 3, # on one SSRC: tone heard, four digits", async () => {
    const pcap = join(pcapDir, "tone-digits.pcap");
    writeRtpPcap(pcap, rtpStream({ payloadType: 0, toneHz: 440, toneSeconds: 1.5, digits: "123#" }));
    const { handler, answered } = acceptingHandler();
    const { peer } = await callIn("uac-call.xml", handler, { pauseMs: 3000, pcap });
    const record = await answered;
    const { heard } = await exchangeAudio(record.call, 1.2, null);
    await record.reached("ended");
    await peer.expectSuccess();
    // The first 200 ms may precede the stream's start.
    const tone = heard.subarray(1600);
    assert.ok(goertzelLevelDb(tone, 440) > -20, `440 Hz at ${goertzelLevelDb(tone, 440).toFixed(1)} dB`);
    assert.ok(goertzelLevelDb(tone, 880) < -40, `880 Hz at ${goertzelLevelDb(tone, 880).toFixed(1)} dB`);
    assert.deepEqual(record.digits, ["1", "2", "3", "#"]);
  });

  test("a caller behind NAT (its Contact unreachable) gets our BYE where its packets came from", async () => {
    const { handler, answered } = acceptingHandler();
    const { peer } = await callIn("uac-behind-nat.xml", handler);
    const record = await answered;
    record.call.hangup();
    await record.reached("ended");
    await peer.expectSuccess();
  });

  test("a call the handler rejects 486 is refused, and the ACK is taken", async () => {
    let rejected: IncomingCall | undefined;
    const { peer, telephony } = await callIn("uac-rejected.xml", (call) => {
      rejected = call;
      call.ring();
      call.reject(486);
    });
    await peer.expectSuccess();
    assert.equal(rejected?.from, "+16045550111");
    assert.equal(rejected?.state, "failed");
    assert.equal(telephony.activeCalls, 0);
  });

  test("an offer of G.729 only is refused 488 when the handler answers it", async () => {
    let accepted: boolean | undefined;
    const { peer } = await callIn("uac-no-common-codec.xml", (call) => {
      void call.accept().then((result) => {
        accepted = result;
      });
    });
    await peer.expectSuccess();
    assert.equal(accepted, false);
  });

  test("without an incoming-call handler a call is refused 404", async () => {
    const { peer } = await callIn("uac-not-answered.xml", null);
    await peer.expectSuccess();
  });

  test("OPTIONS 200, unknown method 501, SUBSCRIBE 405 with Allow, BYE outside a dialog 481", async () => {
    const { peer } = await callIn("uac-requests.xml", null);
    await peer.expectSuccess();
  });
});
