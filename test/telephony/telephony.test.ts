/**
 * The call API end to end between two telephony services on loopback, one the other's trunk: real SIP
 * over UDP and TCP, real RTP. Peers nobody here wrote are in test/telephony/e2e.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { after, before, describe, it } from "node:test";
import type { Call, CallEnd, CallFailure, IncomingCall } from "../../src/telephony/call.js";
import { Telephony } from "../../src/telephony/telephony.js";
import { goertzelLevelDb } from "../helpers/audio.js";
import { until } from "../helpers/until.js";

const FRAME = 160;

function tone(frequency: number, frameIndex: number): Int16Array {
  const frame = new Int16Array(FRAME);
  for (let i = 0; i < FRAME; i++) {
    const n = frameIndex * FRAME + i;
    frame[i] = Math.round(8000 * Math.sin((2 * Math.PI * frequency * n) / 8000));
  }
  return frame;
}

/** Sends `frequency` from `from` while reading `to` for `frames` frames at the 20 ms pace. */
async function exchange(from: Call, to: Call, frequency: number, frames: number): Promise<Int16Array> {
  const heard = new Int16Array(frames * FRAME);
  const out = new Int16Array(FRAME);
  for (let index = 0; index < frames; index++) {
    from.sendAudio(tone(frequency, index));
    to.readAudio(out);
    heard.set(out, index * FRAME);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return heard;
}

let callee: Telephony;
let caller: Telephony;
let tcpCaller: Telephony;
let incoming: (call: IncomingCall) => void = () => {};

describe("telephony: placing and taking calls", () => {
  before(async () => {
    // G.711 calls: the raw frames below are 8 kHz (160 samples), which the callee's choice makes them.
    callee = await Telephony.start({
      bindAddress: "127.0.0.1",
      sipPort: 0,
      rtpPorts: { min: 41000, max: 41199 },
      codecs: ["PCMU", "PCMA"],
    });
    callee.onIncomingCall((call) => incoming(call));
    caller = await Telephony.start({
      bindAddress: "127.0.0.1",
      sipPort: 0,
      trunk: `sip:127.0.0.1:${callee.sipPort}`,
      callerId: "+16045550100",
      rtpPorts: { min: 41200, max: 41399 },
      mediaTimeoutMs: 1500,
    });
    tcpCaller = await Telephony.start({
      bindAddress: "127.0.0.1",
      sipPort: 0,
      trunk: `sip:127.0.0.1:${callee.sipPort};transport=tcp`,
      rtpPorts: { min: 41400, max: 41599 },
    });
  });

  after(async () => {
    await Promise.all([caller.close(), tcpCaller.close()]);
    await callee.close();
  });

  it("hung up while it waits out a 503's Retry-After: fails 487 at once, and no INVITE follows", async () => {
    let invites = 0;
    incoming = (call) => {
      invites++;
      call.reject(503, "Service Unavailable", 5);
    };
    const call = caller.placeCall("(604) 555-0123");
    const failed = once(call, "failed") as Promise<[CallFailure]>;
    await until("the 503", async () => (invites === 1 ? true : undefined));
    await new Promise((resolve) => setTimeout(resolve, 200));
    call.hangup();
    const [failure] = await failed;
    assert.equal(failure.status, 487);
    assert.equal(failure.reason, "Request Terminated");
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(invites, 1);
  });

  it("rings, answers, carries audio both ways and digits, holds and resumes, and hangs up", async () => {
    const taken = new Promise<IncomingCall>((resolve) => {
      incoming = (call) => {
        call.ring();
        resolve(call);
      };
    });
    const call = caller.placeCall("(604) 555-0123");
    await once(call, "ringing");
    const theirs = await taken;
    assert.equal(theirs.from, "+16045550100");
    assert.equal(theirs.to, "+16045550123", "the called number goes out as +1NPANXXXXXX");
    assert.equal(call.state, "ringing");
    const answered = once(call, "answered");
    assert.equal(await theirs.accept(), true);
    await answered;
    assert.equal(call.state, "answered");
    assert.deepEqual([call.codec, theirs.codec], ["PCMU", "PCMU"]);
    // Plain SIP over UDP, plain RTP: nothing is encrypted, on either side.
    assert.deepEqual(
      [call.signallingTls, call.encrypted, theirs.signallingTls, theirs.encrypted],
      [false, false, false, false],
    );

    const heardByCallee = await exchange(call, theirs, 1000, 40);
    const heardByCaller = await exchange(theirs, call, 600, 40);
    const late = (samples: Int16Array) => samples.subarray(15 * FRAME);
    const lead = (samples: Int16Array, heard: number, other: number) =>
      goertzelLevelDb(late(samples), heard) - goertzelLevelDb(late(samples), other);
    assert.ok(lead(heardByCallee, 1000, 600) > 20, "callee hears 1000 Hz");
    assert.ok(lead(heardByCaller, 600, 1000) > 20, "caller hears 600 Hz");

    const digits: string[] = [];
    theirs.on("digit", (key) => digits.push(key));
    assert.equal(await call.sendDigits("19#"), true);
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.deepEqual(digits, ["1", "9", "#"]);

    const held = once(theirs, "held");
    assert.equal(await call.hold(), true);
    assert.deepEqual(await held, [true]);
    const resumed = once(theirs, "held");
    assert.equal(await call.resume(), true);
    assert.deepEqual(await resumed, [false]);

    const ended = once(theirs, "ended") as Promise<[CallEnd]>;
    const ours = once(call, "ended") as Promise<[CallEnd]>;
    call.hangup();
    const normalClearing = { protocol: "Q.850", cause: 16, text: "Normal call clearing" };
    // Our BYE's Reason (RFC 3326), read by the far end; our end says the cause we sent.
    assert.deepEqual((await ended)[0], { by: "remote", reason: "hung up", cause: normalClearing });
    assert.deepEqual((await ours)[0], { by: "local", reason: "hung up", cause: normalClearing });
    assert.equal(call.state, "ended");
    assert.equal(theirs.state, "ended");
  });

  it("a call that must be encrypted fails 488 with the reason when its trunk is not reached over TLS, before anything is sent", async () => {
    let reached = false;
    incoming = (call) => {
      reached = true;
      call.reject(486, "Busy Here");
    };
    const call = caller.placeCall("+16045550125", { encrypted: true });
    const [failure] = (await once(call, "failed")) as [CallFailure];
    assert.deepEqual(failure, {
      status: 488,
      reason: "SRTP is required but the trunk is not SIP over TLS: keys would travel in plain text",
      cause: null,
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(reached, false, "no INVITE went out");
  });

  it("reports the callee's refusal with its status", async () => {
    incoming = (call) => call.reject(486, "Busy Here");
    const call = caller.placeCall("+16045550124");
    const [failure] = (await once(call, "failed")) as [CallFailure];
    // Our 486 carries no Reason: the status says it all.
    assert.deepEqual(failure, { status: 486, reason: "Busy Here", cause: null });
  });

  it("cancels an unanswered call at the ring timeout and fails it 408", async () => {
    const cancelled = new Promise<[IncomingCall, CallFailure]>((resolve) => {
      incoming = (call) => {
        call.ring();
        call.on("failed", (failure) => resolve([call, failure]));
      };
    });
    const call = caller.placeCall("+16045550125", { ringTimeoutMs: 300 });
    const [failure] = (await once(call, "failed")) as [CallFailure];
    const noAnswer = { protocol: "Q.850", cause: 19, text: "No answer from user (user alerted)" };
    assert.deepEqual(failure, { status: 408, reason: "No Answer", cause: noAnswer });
    const [theirs, theirFailure] = await cancelled;
    assert.equal(theirs.state, "failed", "the callee saw the CANCEL");
    // The CANCEL's Reason (RFC 3326), read by the callee.
    assert.deepEqual(theirFailure, { status: 487, reason: "Request Terminated", cause: noAnswer });
  });

  it("fails a call to a number that is not a NANP number with 484, and says so without a trunk", async () => {
    const bad = caller.placeCall("12");
    assert.equal(((await once(bad, "failed")) as [CallFailure])[0].status, 484);
    const noTrunk = callee.placeCall("+16045550126");
    assert.deepEqual(((await once(noTrunk, "failed")) as [CallFailure])[0], {
      status: 503,
      reason: "No trunk configured",
      cause: null,
    });
  });

  it("places calls over TCP when the trunk URI says so", async () => {
    incoming = (call) => void call.accept();
    const call = tcpCaller.placeCall("+16045550127");
    await once(call, "answered");
    call.hangup();
    assert.equal(call.state, "ended");
  });

  it("routes a number by the dial plan's longest matching prefix, else to the default trunk", async () => {
    const other = await Telephony.start({
      bindAddress: "127.0.0.1",
      sipPort: 0,
      rtpPorts: { min: 41600, max: 41799 },
    });
    const reached: string[] = [];
    other.onIncomingCall((call) => {
      reached.push(`other ${call.to}`);
      call.reject(486, "Busy Here");
    });
    incoming = (call) => {
      reached.push(`default ${call.to}`);
      call.reject(486, "Busy Here");
    };
    const routed = await Telephony.start({
      bindAddress: "127.0.0.1",
      sipPort: 0,
      trunk: `sip:127.0.0.1:${callee.sipPort}`,
      routes: [
        { prefix: "+1604", trunk: `sip:127.0.0.1:${callee.sipPort}` },
        { prefix: "+1604555", trunk: `sip:127.0.0.1:${other.sipPort}` },
      ],
      rtpPorts: { min: 41800, max: 41999 },
    });
    try {
      for (const number of ["+16045550130", "+16045560130", "+17785550130"]) {
        await once(routed.placeCall(number), "failed");
      }
      assert.deepEqual(reached, ["other +16045550130", "default +16045560130", "default +17785550130"]);
    } finally {
      await routed.close();
      await other.close();
    }
  });

  it("prefers Opus, then G.722, by default; the service's codecs and a trunk profile's change what is offered and taken", async () => {
    const started: Telephony[] = [];
    const start = async (options: Omit<Parameters<typeof Telephony.start>[0], "bindAddress" | "sipPort">) => {
      const telephony = await Telephony.start({ bindAddress: "127.0.0.1", sipPort: 0, ...options });
      started.push(telephony);
      telephony.onIncomingCall((call) => void call.accept());
      return telephony;
    };
    try {
      const wideband = await start({ rtpPorts: { min: 42200, max: 42299 } });
      const g722First = await start({ rtpPorts: { min: 42300, max: 42399 }, codecs: ["G722", "PCMU"] });
      const dialer = await start({
        rtpPorts: { min: 42400, max: 42499 },
        trunk: `sip:127.0.0.1:${wideband.sipPort}`,
        routes: [
          { prefix: "+1778", trunk: `sip:127.0.0.1:${g722First.sipPort}` },
          {
            prefix: "+1604555",
            trunk: { uri: `sip:127.0.0.1:${wideband.sipPort}`, codecs: ["PCMA", "G722"] },
          },
        ],
      });
      const codecsOf = async (number: string, callee: Telephony) => {
        const taken = new Promise<IncomingCall>((resolve) => callee.onIncomingCall(resolve)).then(
          async (theirs) => {
            await theirs.accept();
            return theirs;
          },
        );
        const call = dialer.placeCall(number);
        await once(call, "answered");
        const theirs = await taken;
        call.hangup();
        return [call.codec, theirs.codec];
      };
      // Both sides' default: Opus.
      assert.deepEqual(await codecsOf("+16045560140", wideband), ["opus", "opus"]);
      // The callee's own order picks among what the default offer has.
      assert.deepEqual(await codecsOf("+17785550140", g722First), ["G722", "G722"]);
      // A trunk profile's codecs are all that is offered: of PCMA and G.722, the callee (Opus first) takes G.722.
      assert.deepEqual(await codecsOf("+16045550140", wideband), ["G722", "G722"]);
    } finally {
      for (const telephony of started) await telephony.close();
    }
  });

  it("the call that carries a caller to another instance offers the caller's codec alone, so that the relay passes its packets as they come", async () => {
    const started: Telephony[] = [];
    try {
      const instance = await Telephony.start({
        bindAddress: "127.0.0.1",
        sipPort: 0,
        rtpPorts: { min: 42500, max: 42599 },
      });
      started.push(instance);
      const other = await Telephony.start({
        bindAddress: "127.0.0.1",
        sipPort: 0,
        rtpPorts: { min: 42600, max: 42699 },
      });
      started.push(other);
      const phone = await Telephony.start({
        bindAddress: "127.0.0.1",
        sipPort: 0,
        rtpPorts: { min: 42700, max: 42799 },
        trunk: { uri: `sip:127.0.0.1:${instance.sipPort}`, codecs: ["PCMA"] },
      });
      started.push(phone);
      const caller = new Promise<IncomingCall>((resolve) => instance.onIncomingCall(resolve));
      const carried = new Promise<IncomingCall>((resolve) => other.onIncomingCall(resolve));
      phone.placeCall("+16045550141");
      const taken = await caller;
      assert.equal(await taken.accept(), true);
      const leg = instance.callUri(other.sipUri, { nextTo: taken });
      const theirs = await carried;
      assert.equal(await theirs.accept(), true);
      if (leg.state !== "answered") await once(leg, "answered");
      // Both instances prefer Opus; offered PCMA alone, the other instance answers PCMA.
      assert.deepEqual([taken.codec, leg.codec, theirs.codec], ["PCMA", "PCMA", "PCMA"]);
    } finally {
      for (const telephony of started) await telephony.close();
    }
  });

  it("ends an answered call whose media stops (media timeout)", async () => {
    let theirs: IncomingCall | undefined;
    incoming = (call) => {
      theirs = call;
      void call.accept();
    };
    const call = caller.placeCall("+16045550128");
    await once(call, "answered");
    const [end] = (await once(call, "ended")) as [CallEnd];
    assert.equal(end.by, "media-timeout");
    await once(theirs as IncomingCall, "ended");
  });

  it("advertises a reachable address: the public one when set, else not the wildcard it binds", async () => {
    const wildcard = await Telephony.start({
      bindAddress: "0.0.0.0",
      sipPort: 0,
      rtpPorts: { min: 42000, max: 42099 },
    });
    const behindNat = await Telephony.start({
      bindAddress: "127.0.0.1",
      sipPort: 0,
      publicAddress: "203.0.113.7",
      rtpPorts: { min: 42100, max: 42199 },
    });
    try {
      assert.notEqual(wildcard.mediaAddress, "0.0.0.0");
      assert.match(wildcard.mediaAddress, /^\d+\.\d+\.\d+\.\d+$/);
      assert.equal(behindNat.mediaAddress, "203.0.113.7");
    } finally {
      await wildcard.close();
      await behindNat.close();
    }
  });
});
