/**
 * Calls placed by the stack to SIPp playing a trunk (test/fixtures/sipp/uas-*.xml). Every test
 * checks both sides: what the call API reported, and SIPp's exit code (0 = the call followed the
 * scenario, which expects our ACKs, CANCELs, BYEs and re-INVITEs).
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { once } from "node:events";
import { describe, test } from "node:test";
import { Telephony, type TelephonyOptions } from "../../../src/telephony/telephony.js";
import { exchangeAudio, goertzelLevelDb, rmsLevelDb, ToneGenerator } from "../../helpers/audio.js";
import { CallRecord, rtpPortRange, Sipp, skipWithout } from "../../helpers/sipp.js";
import { stoppedAfterTests } from "../../helpers/stop-after.js";

const skip = skipWithout("sipp");
const stopAfter = stoppedAfterTests();
const sipp = async (options: Parameters<typeof Sipp.start>[0]) => stopAfter(await Sipp.start(options));

async function telephonyFor(peer: Sipp, options: Partial<TelephonyOptions> = {}): Promise<Telephony> {
  const telephony = await Telephony.start({
    bindAddress: "127.0.0.1",
    sipPort: 0,
    trunk: `sip:127.0.0.1:${peer.sipPort}`,
    callerId: "+16045550100",
    rtpPorts: rtpPortRange(),
    ...options,
  });
  stopAfter({ stop: () => telephony.close() });
  return telephony;
}

describe("outbound calls to a SIPp trunk", { skip, concurrency: true }, () => {
  test("ringing, answered, the trunk's audio heard, ended by the trunk's BYE", async () => {
    const peer = await sipp({ scenario: "uas-answer-play.xml", pauseMs: 3000 });
    const telephony = await telephonyFor(peer);
    const record = new CallRecord(telephony.placeCall("(604) 555-0123"), () => peer.report());

    await peer.unlessFailed(record.reached("answered"));
    assert.deepEqual(record.events, ["ringing", "answered"]);
    assert.equal(record.call.state, "answered");
    const { heard, framesReceived } = await exchangeAudio(record.call, 2, null);
    // g711a.pcap is speech in PCMA, 30 ms packets: most 20 ms ticks must play received audio.
    assert.ok(framesReceived > 50, `only ${framesReceived} of 100 ticks played received audio`);
    assert.ok(
      rmsLevelDb(heard) > -40,
      `received audio is near silence: ${rmsLevelDb(heard).toFixed(1)} dBFS`,
    );

    await record.reached("ended");
    assert.deepEqual(record.end?.by, "remote");
    assert.equal(record.call.state, "ended");
    await peer.expectSuccess();
    assert.match(peer.messages(), /INVITE sip:\+16045550123@127\.0\.0\.1:\d+ SIP\/2\.0/);
  });

  test("an answer listing PCMU then PCMA: the trunk sends PCMA, and it is heard", async () => {
    const peer = await sipp({ scenario: "uas-answer-pcmu-first-play-pcma.xml", pauseMs: 3000 });
    const telephony = await telephonyFor(peer);
    const record = new CallRecord(telephony.placeCall("+16045550124"), () => peer.report());

    await peer.unlessFailed(record.reached("answered"));
    const { heard, framesReceived } = await exchangeAudio(record.call, 2, null);
    // Before, only the first answered format (PCMU) was taken and every PCMA packet was dropped.
    assert.ok(framesReceived > 50, `only ${framesReceived} of 100 ticks played received audio`);
    assert.ok(
      rmsLevelDb(heard) > -40,
      `received audio is near silence: ${rmsLevelDb(heard).toFixed(1)} dBFS`,
    );
    await record.reached("ended");
    await peer.expectSuccess();
  });

  test("the trunk hears our tone and digits (SIPp -rtp_echo sends them back)", async () => {
    const peer = await sipp({ scenario: "uas-answer.xml", args: ["-rtp_echo"] });
    const telephony = await telephonyFor(peer);
    const record = new CallRecord(telephony.placeCall("+16045550123"), () => peer.report());
    await peer.unlessFailed(record.reached("answered"));

    const exchange = exchangeAudio(record.call, 2.5, new ToneGenerator(880));
    await new Promise((resolve) => setTimeout(resolve, 1000));
    assert.equal(await record.call.sendDigits("123#"), true);
    const { heard } = await exchange;
    record.call.hangup();
    await record.reached("ended");

    const echoed = heard.subarray(8000 * 0.5);
    assert.ok(
      goertzelLevelDb(echoed, 880) > -20,
      `880 Hz echo at ${goertzelLevelDb(echoed, 880).toFixed(1)} dB`,
    );
    assert.ok(
      goertzelLevelDb(echoed, 440) < -40,
      `440 Hz present at ${goertzelLevelDb(echoed, 440).toFixed(1)} dB`,
    );
    assert.deepEqual(record.digits, ["1", "2", "3", "#"]);
    assert.equal(record.end?.by, "local");
    await peer.expectSuccess();
  });

  test("486 Busy Here fails the call with status 486, and the trunk gets its ACK", async () => {
    const peer = await sipp({ scenario: "uas-busy.xml" });
    const telephony = await telephonyFor(peer);
    const record = new CallRecord(telephony.placeCall("+16045550123"), () => peer.report());
    await peer.unlessFailed(record.settled());
    assert.deepEqual(record.events, ["failed"]);
    assert.equal(record.failure?.status, 486);
    assert.equal(record.call.state, "failed");
    await peer.expectSuccess();
    const invite = /^INVITE [\s\S]*?branch=([^;\s]+)/m.exec(peer.messages());
    const ack = /^ACK [\s\S]*?branch=([^;\s]+)/m.exec(peer.messages());
    // RFC 3261 §17.1.1.3: the ACK for a non-2xx final response is part of the INVITE transaction.
    assert.equal(ack?.[1], invite?.[1]);
  });

  test("no answer: CANCEL at the ring timeout, 487 ACKed, the call fails 408", async () => {
    const peer = await sipp({ scenario: "uas-no-answer.xml" });
    const telephony = await telephonyFor(peer);
    const record = new CallRecord(telephony.placeCall("+16045550123", { ringTimeoutMs: 1500 }), () =>
      peer.report(),
    );
    await peer.unlessFailed(record.settled());
    assert.deepEqual(record.events, ["ringing", "failed"]);
    // The API reports our own reason for giving up, not the 487 the trunk answers the CANCEL with,
    // and the cause our CANCEL said it with (RFC 3326).
    const noAnswer = { protocol: "Q.850", cause: 19, text: "No answer from user (user alerted)" };
    assert.deepEqual(record.failure, { status: 408, reason: "No Answer", cause: noAnswer });
    await peer.expectSuccess();
    assert.match(
      peer.messages(),
      /^CANCEL sip:\+16045550123@[\s\S]*?^Reason: Q\.850;cause=19;text="No answer from user \(user alerted\)"\r?$/m,
    );
  });

  test("a 486 whose Reason gives Q.850 cause 17 beside a SIP one fails the call with the Q.850 cause", async () => {
    const peer = await sipp({ scenario: "uas-busy-reason.xml" });
    const telephony = await telephonyFor(peer);
    const record = new CallRecord(telephony.placeCall("+16045550123"), () => peer.report());
    await peer.unlessFailed(record.settled());
    assert.deepEqual(record.failure, {
      status: 486,
      reason: "Busy Here",
      cause: { protocol: "Q.850", cause: 17, text: "User busy" },
    });
    await peer.expectSuccess();
  });

  test("the trunk's BYE with Reason Q.850 cause 16 ends the call with that cause", async () => {
    const peer = await sipp({ scenario: "uas-answer-bye-reason.xml", pauseMs: 500 });
    const telephony = await telephonyFor(peer);
    const record = new CallRecord(telephony.placeCall("+16045550123"), () => peer.report());
    await peer.unlessFailed(record.reached("ended"));
    assert.deepEqual(record.end, {
      by: "remote",
      reason: "hung up",
      cause: { protocol: "Q.850", cause: 16, text: "Normal call clearing" },
    });
    await peer.expectSuccess();
  });

  test("our hang-up's BYE carries Reason Q.850 cause 16 (the trunk checks it), and our end says so", async () => {
    const peer = await sipp({ scenario: "uas-answer-check-reason.xml" });
    const telephony = await telephonyFor(peer);
    const record = new CallRecord(telephony.placeCall("+16045550123"), () => peer.report());
    await peer.unlessFailed(record.reached("answered"));
    record.call.hangup();
    await record.reached("ended");
    await peer.expectSuccess();
    assert.deepEqual(record.end, {
      by: "local",
      reason: "hung up",
      cause: { protocol: "Q.850", cause: 16, text: "Normal call clearing" },
    });
  });

  test("503 with Retry-After: 1 has the INVITE sent again a second later, and that one answers: one call", async () => {
    const peer = await sipp({ scenario: "uas-503-retry-after.xml" });
    const telephony = await telephonyFor(peer);
    const record = new CallRecord(telephony.placeCall("+16045550123"), () => peer.report());
    await peer.unlessFailed(record.reached("answered"));
    assert.deepEqual(record.events, ["ringing", "answered"]);
    record.call.hangup();
    await record.reached("ended");
    await peer.expectSuccess();
    const invites = receivedAt(peer.messages(), "INVITE");
    assert.equal(invites.length, 2, peer.messages());
    const gap = (invites[1] as number) - (invites[0] as number);
    assert.ok(gap >= 950 && gap < 5000, `the INVITE went again ${gap} ms after the first`);
  });

  test("503 with Retry-After: 60 fails the call at once, with one INVITE", async () => {
    const peer = await sipp({ scenario: "uas-503-long-retry.xml" });
    const telephony = await telephonyFor(peer);
    const placedAt = Date.now();
    const record = new CallRecord(telephony.placeCall("+16045550123"), () => peer.report());
    await peer.unlessFailed(record.settled());
    assert.ok(Date.now() - placedAt < 5000, `failed after ${Date.now() - placedAt} ms`);
    assert.deepEqual(record.failure, { status: 503, reason: "Service Unavailable", cause: null });
    await peer.expectSuccess();
    assert.equal(receivedAt(peer.messages(), "INVITE").length, 1);
  });

  test("a 200 OK crossing our CANCEL is ACKed and ended with BYE", async () => {
    const peer = await sipp({ scenario: "uas-cancel-race.xml" });
    const telephony = await telephonyFor(peer);
    const record = new CallRecord(telephony.placeCall("+16045550123", { ringTimeoutMs: 1000 }), () =>
      peer.report(),
    );
    await peer.unlessFailed(record.settled());
    await peer.expectSuccess();
    assert.equal(record.events[0], "ringing");
    assert.equal(record.failure?.status, 408);
    assert.equal(telephony.activeCalls, 0);
  });

  for (const [code, header] of [
    [407, "Proxy-Authorization"],
    [401, "Authorization"],
  ] as const) {
    test(`digest challenge ${code}: the INVITE is repeated with ${header} (MD5, qop=auth)`, async () => {
      const peer = await sipp({ scenario: `uas-auth-${code}.xml` });
      const telephony = await telephonyFor(peer, {
        trunk: {
          uri: `sip:127.0.0.1:${peer.sipPort}`,
          credentials: { username: "bridgeline", password: "digest-secret" },
        },
      });
      const record = new CallRecord(telephony.placeCall("+16045550123"), () => peer.report());
      await peer.unlessFailed(record.reached("answered"));
      record.call.hangup();
      await record.reached("ended");
      await peer.expectSuccess();
      assertValidDigest(peer.messages(), header, "digest-secret");
    });
  }

  test("lost packets (SIPp -lost 10): retransmissions complete 20 calls", async () => {
    const peer = await sipp({
      scenario: "uas-answer-lossy.xml",
      calls: 10,
      args: ["-lost", "10"],
      timeoutSeconds: 60,
    });
    const telephony = await telephonyFor(peer);
    const records = Array.from(
      { length: 10 },
      () => new CallRecord(telephony.placeCall("+16045550123"), () => peer.report()),
    );
    for (const record of records) {
      await record.reached("answered", 40_000);
      record.call.hangup();
    }
    for (const record of records) await record.reached("ended", 40_000);
    await peer.expectSuccess(60_000);
    assert.deepEqual(
      records.map((record) => record.end?.by),
      records.map(() => "local"),
    );
  });

  test("hold both ways: held events for the trunk's sendonly, our hold offers sendonly", async () => {
    const peer = await sipp({ scenario: "uas-hold.xml" });
    const telephony = await telephonyFor(peer);
    const record = new CallRecord(telephony.placeCall("+16045550123"), () => peer.report());
    await peer.unlessFailed(record.reached("answered"));
    await record.reached("held");
    assert.equal(record.call.held, true);
    if (record.holds.length < 2) await once(record.call, "held", { signal: AbortSignal.timeout(10_000) });
    assert.deepEqual(record.holds, [true, false]);
    assert.equal(await record.call.hold(), true);
    assert.equal(await record.call.resume(), true);
    record.call.hangup();
    await record.reached("ended");
    await peer.expectSuccess();
  });

  test("a trunk that answers 422 with Min-SE gets the INVITE again asking for that interval", async () => {
    const peer = await sipp({ scenario: "uas-timer-422.xml" });
    const telephony = await telephonyFor(peer);
    const record = new CallRecord(telephony.placeCall("+16045550123"), () => peer.report());
    await peer.unlessFailed(record.reached("answered"));
    record.call.hangup();
    await record.reached("ended");
    await peer.expectSuccess();
  });

  test("a trunk that rings reliably (100rel) gets its PRACK, and the call goes on in the same dialog", async () => {
    const peer = await sipp({ scenario: "uas-100rel.xml" });
    const telephony = await telephonyFor(peer);
    const record = new CallRecord(telephony.placeCall("+16045550123"), () => peer.report());
    await peer.unlessFailed(record.reached("answered"));
    assert.ok(record.events.includes("ringing"));
    record.call.hangup();
    await record.reached("ended");
    await peer.expectSuccess();
  });

  test("a forking carrier's two reliable 183s are each PRACKed in their own early dialog; the branch that answers gets the ACK and BYE (RFC 3262 section 4)", async () => {
    const peer = await sipp({ scenario: "uas-forking-100rel.xml" });
    const telephony = await telephonyFor(peer);
    const record = new CallRecord(telephony.placeCall("+16045550123"), () => peer.report());
    await peer.unlessFailed(record.reached("answered"));
    record.call.hangup();
    await record.reached("ended");
    await peer.expectSuccess();
  });

  test("our hold survives the trunk's re-INVITE: the answer keeps sendonly", async () => {
    const peer = await sipp({ scenario: "uas-hold-kept.xml" });
    const telephony = await telephonyFor(peer);
    const record = new CallRecord(telephony.placeCall("+16045550123"), () => peer.report());
    await peer.unlessFailed(record.reached("answered"));
    assert.equal(await record.call.hold(), true);
    // The trunk re-INVITEs 300 ms later and checks our answer says a=sendonly.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    assert.equal(record.call.held, false, "the trunk did not hold us");
    record.call.hangup();
    await record.reached("ended");
    await peer.expectSuccess();
  });
});

/**
 * When SIPp received each `method` request, in ms since the epoch, from its message trace, where each
 * message follows a line of dashes with the date and time (`----- 2026-11-27\t21:50:00.123456`).
 */
function receivedAt(trace: string, method: string): number[] {
  const pattern = new RegExp(
    `^-+ (\\d{4}-\\d\\d-\\d\\d)\\s+(\\d\\d:\\d\\d:\\d\\d\\.\\d+)\\s*\\n\\w+ message received[^\\n]*\\n\\n${method} `,
    "gm",
  );
  return [...trace.matchAll(pattern)].map((match) => Date.parse(`${match[1]}T${match[2]?.slice(0, 12)}`));
}

/**
 * Recomputes the digest response (RFC 2617 §3.2.2.1, qop=auth) of the credentials the stack sent, from
 * SIPp's message trace, with the password the test knows.
 */
function assertValidDigest(trace: string, header: string, password: string): void {
  const line = new RegExp(`^${header}: Digest (.*)$`, "m").exec(trace)?.[1];
  assert.ok(line !== undefined, `no ${header} header in the trace:\n${trace}`);
  const params = Object.fromEntries(
    [...line.matchAll(/(\w+)=(?:"([^"]*)"|([^,\s]+))/g)].map((m) => [m[1], m[2] ?? m[3]]),
  );
  assert.equal(params.realm, "sipp.bridgeline.test");
  assert.equal(params.nonce, "0ddba11f00dcafe");
  assert.equal(params.qop, "auth");
  const md5 = (text: string) => createHash("md5").update(text).digest("hex");
  const ha1 = md5(`${params.username}:${params.realm}:${password}`);
  const ha2 = md5(`INVITE:${params.uri}`);
  const expected = md5(`${ha1}:${params.nonce}:${params.nc}:${params.cnonce}:${params.qop}:${ha2}`);
  assert.equal(params.response, expected);
}
