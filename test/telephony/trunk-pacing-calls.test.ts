/**
 * Calls placed through a trunk with limits, to another telephony service on loopback as the
 * carrier (real SIP and RTP): a call waits its turn and says why, and every way a call can end gives
 * its channel back (answered and hung up, refused, rung until the ring timeout, a trunk whose server
 * cannot be found) as a call hung up while it waits gives back its place, and close fails the
 * waiting ones. The caller's own timers (the ring timeout, the gate's) run on a fake clock.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { IncomingCall, OutgoingCall } from "../../src/telephony/call.js";
import { Telephony } from "../../src/telephony/telephony.js";
import type { Trunk } from "../../src/telephony/trunk.js";
import { Dnsmasq } from "../helpers/dnsmasq.js";
import { FakeClock } from "../helpers/fake-clock.js";
import { CallRecord, rtpPortRange, skipWithout } from "../helpers/sipp.js";
import { until } from "../helpers/until.js";

let carrier: Telephony;
/** What the carrier does with each call it takes; every call taken, in order. */
let take: (call: IncomingCall) => void = (call) => call.reject(486, "Busy Here");
const taken: IncomingCall[] = [];
const running: { stop(): Promise<void> }[] = [];

before(async () => {
  carrier = await Telephony.start({ bindAddress: "127.0.0.1", sipPort: 0, rtpPorts: rtpPortRange() });
  carrier.onIncomingCall((call) => {
    taken.push(call);
    take(call);
  });
});

after(async () => {
  for (const peer of running) await peer.stop();
  await carrier.close();
});

/** A caller whose trunk is the carrier with `limits`, its own timers on a fake clock. */
async function callerWith(
  limits: Pick<Trunk, "callsPerSecond" | "maxChannels">,
  options: { readonly trunkUri?: string; readonly dnsServers?: string[] } = {},
) {
  const clock = new FakeClock(Date.now());
  const trunk: Trunk = { uri: options.trunkUri ?? `sip:127.0.0.1:${carrier.sipPort}`, ...limits };
  const telephony = await Telephony.start({
    bindAddress: "127.0.0.1",
    sipPort: 0,
    trunk,
    rtpPorts: rtpPortRange(),
    clock,
    dnsServers: options.dnsServers,
  });
  running.push({ stop: () => telephony.close() });
  const queued: [string, string, string][] = [];
  const place = (number: string, ringTimeoutMs = 60_000): CallRecord => {
    const call: OutgoingCall = telephony.placeCall(number, { ringTimeoutMs });
    call.on("queued", (why, trunkUri) => queued.push([number, why, trunkUri]));
    return new CallRecord(call);
  };
  const figures = () => {
    const [stats] = telephony.trunkPacing();
    return stats === undefined ? undefined : [stats.channels, stats.queued];
  };
  return { clock, telephony, trunk, queued, place, figures };
}

/** The numbers the carrier was called at, from the `from`th call taken on. */
function numbersTaken(from: number): string[] {
  return taken.slice(from).map((call) => call.to);
}

async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
}

describe("calls through a trunk with limits", () => {
  it("one channel: the second call waits, told max-channels and the trunk; it goes once the first, answered, is hung up, and the channel comes back after it", async () => {
    const before = taken.length;
    take = (call) => void call.accept();
    const caller = await callerWith({ maxChannels: 1 });
    const first = caller.place("+16045550101");
    const second = caller.place("+16045550102");
    await first.reached("answered");
    await settle();
    assert.deepEqual(caller.queued, [["+16045550102", "max-channels", caller.trunk.uri]]);
    assert.equal(second.call.state, "calling");
    assert.deepEqual(caller.figures(), [1, 1]);
    assert.deepEqual(numbersTaken(before), ["+16045550101"], "the carrier has seen one INVITE");
    first.call.hangup();
    await second.reached("answered");
    assert.deepEqual(numbersTaken(before), ["+16045550101", "+16045550102"]);
    assert.deepEqual(caller.figures(), [1, 0]);
    second.call.hangup();
    await second.reached("ended");
    assert.deepEqual(caller.figures(), [0, 0]);
    assert.equal(caller.queued.length, 1, "nothing is told when the call goes");
  });

  it("a call the carrier refuses gives its channel back: the next goes", async () => {
    const before = taken.length;
    take = (call) => call.reject(486, "Busy Here");
    const caller = await callerWith({ maxChannels: 1 });
    const first = caller.place("+16045550111");
    const second = caller.place("+16045550112");
    await first.reached("failed");
    assert.equal(first.failure?.status, 486);
    await second.reached("failed");
    assert.deepEqual(numbersTaken(before), ["+16045550111", "+16045550112"]);
    assert.deepEqual(caller.figures(), [0, 0]);
  });

  it("a call that rings until the ring timeout (CANCEL, 408) gives its channel back: the next goes", async () => {
    const before = taken.length;
    take = (call) => call.ring();
    const caller = await callerWith({ maxChannels: 1 });
    const first = caller.place("+16045550121", 30_000);
    const second = caller.place("+16045550122", 30_000);
    await first.reached("ringing");
    assert.deepEqual(caller.figures(), [1, 1]);
    await caller.clock.pass(30_000);
    await first.reached("failed");
    assert.deepEqual(first.failure, {
      status: 408,
      reason: "No Answer",
      cause: { protocol: "Q.850", cause: 19, text: "No answer from user (user alerted)" },
    });
    await second.reached("ringing");
    assert.deepEqual(numbersTaken(before), ["+16045550121", "+16045550122"]);
    assert.deepEqual(caller.figures(), [1, 0]);
    second.call.hangup();
    await second.reached("failed");
    assert.deepEqual(caller.figures(), [0, 0]);
    await until("the carrier's calls to end", async () =>
      taken.slice(before).every((call) => call.state === "failed") ? true : undefined,
    );
  });

  it("a call hung up while it waits fails 487 at once and never reaches the carrier; the one behind it takes the channel", async () => {
    const before = taken.length;
    take = (call) => call.ring();
    const caller = await callerWith({ maxChannels: 1 });
    const first = caller.place("+16045550131");
    const second = caller.place("+16045550132");
    const third = caller.place("+16045550133");
    await first.reached("ringing");
    assert.deepEqual(caller.figures(), [1, 2]);
    second.call.hangup();
    assert.deepEqual(second.failure, {
      status: 487,
      reason: "Request Terminated",
      cause: { protocol: "Q.850", cause: 16, text: "Normal call clearing" },
    });
    assert.deepEqual(caller.figures(), [1, 1]);
    first.call.hangup();
    await third.reached("ringing");
    assert.deepEqual(numbersTaken(before), ["+16045550131", "+16045550133"]);
    third.call.hangup();
    await third.reached("failed");
    assert.deepEqual(caller.figures(), [0, 0]);
  });

  it("calls per second, on the caller's clock: the second call is told calls-per-second and reaches the carrier only once its time has come", async () => {
    const before = taken.length;
    take = (call) => call.reject(486, "Busy Here");
    const caller = await callerWith({ callsPerSecond: 2 });
    const first = caller.place("+16045550141");
    const second = caller.place("+16045550142");
    await first.reached("failed");
    await settle();
    assert.deepEqual(caller.queued, [["+16045550142", "calls-per-second", caller.trunk.uri]]);
    assert.deepEqual(numbersTaken(before), ["+16045550141"]);
    assert.deepEqual(caller.figures(), [0, 1], "no channel held, the call waits for its time");
    await caller.clock.pass(500);
    await second.reached("failed");
    assert.deepEqual(numbersTaken(before), ["+16045550141", "+16045550142"]);
  });

  it("close fails the waiting calls 503 shutting down and hangs up the one through: nothing is held", async () => {
    take = (call) => call.ring();
    const caller = await callerWith({ maxChannels: 1 });
    const first = caller.place("+16045550151");
    const second = caller.place("+16045550152");
    await first.reached("ringing");
    await caller.telephony.close();
    assert.deepEqual(second.failure, { status: 503, reason: "shutting down", cause: null });
    assert.equal(first.failure?.status, 487);
    assert.deepEqual(caller.figures(), [0, 0]);
    assert.equal(caller.clock.pending, 0, "no timer of the call's or the gate's left");
  });
});

describe("calls through a trunk whose server cannot be found", { skip: skipWithout("dnsmasq") }, () => {
  it("a call whose lookup fails (503) gives its channel back: the next goes, and fails the same way", async () => {
    // A DNS server that knows no names: the trunk's lookup fails at once.
    const dns = await Dnsmasq.start({});
    running.push(dns);
    const caller = await callerWith(
      { maxChannels: 1 },
      { trunkUri: "sip:trunk.test:5060", dnsServers: [dns.server] },
    );
    const first = caller.place("+16045550161");
    const second = caller.place("+16045550162");
    await settle();
    assert.deepEqual(caller.queued, [["+16045550162", "max-channels", "sip:trunk.test:5060"]]);
    await first.reached("failed");
    assert.equal(first.failure?.status, 503);
    assert.match(first.failure?.reason ?? "", /no address found for trunk\.test/);
    await second.reached("failed");
    assert.equal(second.failure?.status, 503);
    assert.deepEqual(caller.figures(), [0, 0]);
  });
});
