/**
 * The SIP edge shipped in deploy/kamailio, run by Kamailio itself on loopback in front of SIPp
 * processes standing in for the Bridgeline instances (they answer OPTIONS probes and calls) and for
 * the carrier trunk: new dial-in calls are spread over the instances, a killed instance's share
 * goes to the survivor (failover and OPTIONS probing), and calls placed by an instance leave
 * through the edge to the trunk, their ACK and BYE following the Record-Route.
 */
import assert from "node:assert/strict";
import { describe, type TestContext, test } from "node:test";
import { Kamailio } from "../helpers/kamailio.js";
import { freePorts, Sipp, skipWithout } from "../helpers/sipp.js";
import { until } from "../helpers/until.js";

const skip = skipWithout("kamailio") || skipWithout("sipp");
const ACCESS_NUMBER = "+16045550199";
/** Where nothing listens: the trunk of tests that place no call. */
const NO_TRUNK = "sip:127.0.0.1:9";

/** Waits for a peer to start, and stops it when the test `t` ends. */
async function started<T extends { stop(): Promise<void> }>(t: TestContext, peer: Promise<T>): Promise<T> {
  const ready = await peer;
  t.after(() => ready.stop());
  return ready;
}

/** A stand-in instance: a SIPp UAS that answers OPTIONS probes and calls for the whole test. */
function instance(t: TestContext, sipPort?: number): Promise<Sipp> {
  return started(t, Sipp.start({ scenario: "uas-routed.xml", calls: 100_000, timeoutSeconds: 120, sipPort }));
}

/** Its address as listed in the dispatcher list. */
function listed(peer: Sipp): string {
  return `sip:127.0.0.1:${peer.sipPort}`;
}

/**
 * The requests of `method` SIPp received, by Call-ID, with the time the first of each arrived
 * (retransmissions aside), from its message trace.
 */
function received(peer: Sipp, method: string): Map<string, number> {
  const calls = new Map<string, number>();
  for (const entry of peer.messages().split(/^(?=-{20,} )/m)) {
    const match = /^-{20,} (\S+) (\S+)\n.*message received.*\n\n([\s\S]*)$/.exec(entry);
    if (match === null) continue;
    const [, date, time, message = ""] = match;
    if (!message.startsWith(`${method} `)) continue;
    const callId = /^Call-ID:\s*(.+)$/im.exec(message)?.[1]?.trim();
    // SIPp writes its local time with microseconds; Date.parse reads it as local time too.
    if (callId !== undefined && !calls.has(callId))
      calls.set(callId, Date.parse(`${date}T${time?.slice(0, 12)}`));
  }
  return calls;
}

/** The carrier calling the access number `calls` times through the edge; resolves when all ended. */
async function dialIn(t: TestContext, edge: Kamailio, calls: number): Promise<void> {
  const carrier = await started(
    t,
    Sipp.start({
      scenario: "uac-call-routed.xml",
      remote: edge.address,
      calls,
      rate: 5,
      pauseMs: 200,
      timeoutSeconds: 30,
      args: ["-s", ACCESS_NUMBER],
    }),
  );
  try {
    await carrier.expectSuccess(35_000);
  } catch (error) {
    throw new Error(`${String(error)}\n--- kamailio ---\n${edge.log.slice(-6000)}`);
  }
}

/** Both instances probed with OPTIONS and answering, i.e. in the set. */
async function probed(edge: Kamailio, ...instances: Sipp[]): Promise<void> {
  await until(
    "every instance to be probed with OPTIONS",
    async () => (instances.every((peer) => received(peer, "OPTIONS").size > 0) ? true : undefined),
    { detail: () => edge.log.slice(-4000) },
  );
}

describe("the Kamailio SIP edge (deploy/kamailio)", { skip }, () => {
  test("spreads ten dial-in calls over two instances; after one is killed, new calls all reach the survivor within 10 s", async (t) => {
    const a = await instance(t);
    const b = await instance(t);
    const edge = await started(t, Kamailio.start({ trunk: NO_TRUNK, instances: [listed(a), listed(b)] }));
    await probed(edge, a, b);

    await dialIn(t, edge, 10);
    const spreadA = received(a, "INVITE").size;
    const spreadB = received(b, "INVITE").size;
    t.diagnostic(`ten dial-in calls: ${spreadA} on instance A, ${spreadB} on instance B`);
    assert.equal(spreadA + spreadB, 10, edge.log.slice(-6000));
    assert.ok(spreadA > 0 && spreadB > 0, `calls were not spread: A ${spreadA}, B ${spreadB}`);

    // SIGKILL, and call at once: the first calls that the edge sends to B wait for its INVITE
    // timeout and fail over to A; B is marked down then (or by its next missed probe).
    const before = new Set(received(a, "INVITE").keys());
    await b.stop();
    const killedAt = Date.now();
    await dialIn(t, edge, 10);
    const arrivals = [...received(a, "INVITE")].filter(([callId]) => !before.has(callId)).map(([, at]) => at);
    const last = Math.max(...arrivals) - killedAt;
    const failovers = edge.log.match(/failed over/g)?.length ?? 0;
    t.diagnostic(
      `after the kill: ten more calls, ${arrivals.length} reached A (${failovers} by failover), the last ${last} ms after the kill`,
    );
    assert.equal(arrivals.length, 10, edge.log.slice(-6000));
    assert.ok(last < 10_000, `the last of the ten calls after the kill reached A ${last} ms after the kill`);
    assert.match(edge.log, new RegExp(`instance ${listed(b)} is down`));
  });

  test("an instance killed between calls leaves the set by OPTIONS probing within seconds, and comes back when it answers again", async (t) => {
    const a = await instance(t);
    const b = await instance(t);
    const edge = await started(t, Kamailio.start({ trunk: NO_TRUNK, instances: [listed(a), listed(b)] }));
    await probed(edge, a, b);

    const port = b.sipPort;
    await b.stop();
    const killedAt = Date.now();
    const down = new RegExp(`instance ${listed(b)} is down`);
    await until(
      "the killed instance to be marked down",
      async () => (down.test(edge.log) ? true : undefined),
      {
        timeoutMs: 10_000,
        detail: () => edge.log.slice(-4000),
      },
    );
    t.diagnostic(`the killed instance left the set ${Date.now() - killedAt} ms after the kill`);

    // No call waits for the dead instance now: none fails over.
    const before = received(a, "INVITE").size;
    await dialIn(t, edge, 4);
    assert.equal(received(a, "INVITE").size - before, 4);
    assert.doesNotMatch(edge.log, /did not answer|failed over/);

    // The instance restarts on its address: its first answered probe brings it back.
    const restartedAt = Date.now();
    const back = await instance(t, port);
    await until(
      "the restarted instance to be back in the set",
      async () => (new RegExp(`instance ${listed(back)} is up`).test(edge.log) ? true : undefined),
      { timeoutMs: 10_000, detail: () => edge.log.slice(-4000) },
    );
    t.diagnostic(`the restarted instance was back ${Date.now() - restartedAt} ms after it started`);
    await dialIn(t, edge, 4);
    assert.ok(received(back, "INVITE").size > 0, "no call reached the restarted instance");
  });

  test("a call placed by an instance leaves through the edge to the carrier trunk, its ACK and BYE following the Record-Route", async (t) => {
    const trunk = await started(t, Sipp.start({ scenario: "uas-routed.xml", calls: 1, timeoutSeconds: 30 }));
    const instancePort = await freePorts();
    const edge = await started(
      t,
      Kamailio.start({ trunk: listed(trunk), instances: [`sip:127.0.0.1:${instancePort}`] }),
    );

    // The instance (-aa answers the edge's OPTIONS probes) dials +16045550123 through the edge.
    const placer = await started(
      t,
      Sipp.start({
        scenario: "uac-call-routed.xml",
        remote: edge.address,
        sipPort: instancePort,
        pauseMs: 300,
        args: ["-s", "+16045550123", "-aa"],
      }),
    );
    await placer.expectSuccess();
    await trunk.expectSuccess();

    const invite = trunk.messages().match(/^INVITE (\S+) SIP\/2\.0[\s\S]*?\n\n/m);
    assert.ok(invite, trunk.report());
    assert.equal(invite[1], `sip:+16045550123@127.0.0.1:${trunk.sipPort}`, "the Request-URI names the trunk");
    assert.match(invite[0], new RegExp(`^Record-Route: <sip:${edge.address};lr=on>`, "m"));
    assert.match(edge.log, new RegExp(`outbound INVITE from instance 127.0.0.1:${instancePort} `));
    // SIPp sends every request to the edge: the BYE reached the trunk only by the edge's Route.
    assert.equal(received(trunk, "BYE").size, 1, trunk.report());
  });
});
