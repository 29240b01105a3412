/**
 * Conferences outlive their instance: three instances of the compiled service on one PostgreSQL
 * database (`npm run build:service` first), the lease at 2 s, their trunk a SIPp that answers every
 * call. One conference of two dialled attendees goes through, in turn:
 * - SIGKILL of its runner: another instance takes it over and calls the attendees back, the first
 *   phone ringing again within 15 s of the kill;
 * - SIGSTOP of its runner past the lease: the third takes it over; on SIGCONT the paused one logs
 *   that it gave the room up and hangs up its calls, and on the wire (tshark) it sent no RTP once
 *   the new room had begun sending;
 * - SIGTERM of its runner with the paused one alive again: handed over, taken over at once.
 * Each time the conference stays started, a conference-recovered event names the instance that
 * went, the one that took over and why, and every attendee is called back exactly once (INVITEs
 * counted per number at the trunk) by the new runner and is connected again. The cases run in
 * order on the one cluster: each starts where the one before left the conference.
 */
import assert from "node:assert/strict";
import { after, before, describe, type TestContext, test } from "node:test";
import type { RecoveryDetails } from "../../src/domain/event.js";
import { POSTGRES_SKIP } from "../helpers/databases.js";
import { EventStream } from "../helpers/event-stream.js";
import { skipWithout } from "../helpers/sipp.js";
import { until } from "../helpers/until.js";
import { WireCapture } from "../helpers/wire.js";
import { type Auth, Cluster, dialled, liveRoom, type ServiceProcess, signUp } from "./service-processes.js";

const LEASE_SECONDS = 2;
/** The target for a SIGKILL: the first attendee's phone ringing again within 15 s. */
const RING_WITHIN_MS = 15_000;
const NUMBERS = ["604-555-0101", "604-555-0102"];
/** Why the wire is not looked at: tshark missing (an error under CI=true). */
const WIRE_SKIP = skipWithout("tshark");

describe("conference take-over between instances on one database", {
  skip: skipWithout("sipp") || POSTGRES_SKIP,
}, () => {
  const cleanups: Array<() => Promise<unknown>> = [];
  let cluster: Cluster;
  let owner: { path: string; auth: Auth };
  let room: string;
  let conferenceId: number;
  /** The slot paused (SIGSTOP) now: its API does not answer. */
  let paused: number | undefined;
  /** What the SIGSTOP case captured: the instances that sent RTP to the trunk, in order. */
  let rtpSenders: number[] | undefined;
  let stopCase: { victim: number; taker: number } | undefined;

  before(async () => {
    cluster = await Cluster.start({ instances: 3, leaseSeconds: LEASE_SECONDS }, cleanups);
    const first = cluster.instances[0] as ServiceProcess;
    owner = await signUp(first, `take-over-${process.pid}-${Date.now()}@example.com`);
    room = await liveRoom(first, owner, NUMBERS);
    conferenceId = Number(room.split("/").pop());
    await allConnected(first);
  });

  after(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  });

  /** An instance alive and not paused, other than `except`: its API answers. */
  function answering(except: number): ServiceProcess {
    const found = cluster.instances.find(
      (instance, slot) => slot !== except && slot !== paused && instance.running,
    );
    assert.ok(found !== undefined, "an instance is left to ask");
    return found;
  }

  async function runnerSlot(): Promise<number> {
    const slot = (await cluster.runners()).get(conferenceId);
    assert.ok(slot !== undefined, `conference ${conferenceId} is started and run by one of the instances`);
    return slot;
  }

  async function attendeeStates(api: ServiceProcess): Promise<string[]> {
    const list = await api.request("GET", `${room}/attendees`, owner.auth);
    assert.equal(list.status, 200, list.text);
    return [...list.text.matchAll(/<state>(\w+)<\/state>/g)].map((match) => match[1] as string);
  }

  async function allConnected(api: ServiceProcess): Promise<void> {
    let states: string[] = [];
    await until(
      "every attendee connected",
      async () => {
        states = await attendeeStates(api);
        return states.length === NUMBERS.length && states.every((state) => state === "connected")
          ? true
          : undefined;
      },
      { timeoutMs: 30_000, detail: () => `states: ${states.join(" ")}\n${diagnostics()}` },
    );
  }

  function diagnostics(): string {
    return [
      ...cluster.instances.map((instance, slot) => `--- ${cluster.idOf(slot)}\n${instance.warnings(30)}`),
      cluster.trunk.report().slice(-4000),
    ].join("\n");
  }

  /**
   * After the runner `victim` went (at `since`, the Call-IDs the trunk had been offered then in
   * `known`): the conference-recovered event names it and `cause`, the instance it names runs the
   * conference now, every attendee was called back exactly once, by that instance, and is
   * connected again, and the conference is still started. Returns the new runner and how long
   * after `since` the first phone rang.
   */
  async function assertTakenOver(
    t: TestContext,
    victim: number,
    cause: RecoveryDetails["cause"],
    since: number,
    known: ReadonlySet<string>,
  ): Promise<{ taker: number; ringMs: number; recovery: RecoveryDetails }> {
    const api = answering(victim);
    const events = await EventStream.open(`http://127.0.0.1:${api.httpPort}${room}/events`, {
      auth: owner.auth,
      lastEventId: 0,
    });
    let recovery: RecoveryDetails;
    try {
      const event = await events.waitFor(
        `the take-over from ${cluster.idOf(victim)}`,
        (candidate) =>
          candidate.type === "conference-recovered" &&
          recoveryOf(candidate.data)?.previousInstance === cluster.idOf(victim),
        20_000,
      );
      recovery = recoveryOf(event.data) as RecoveryDetails;
    } finally {
      events.close();
    }
    assert.equal(recovery.cause, cause);
    assert.equal(recovery.calledBack, NUMBERS.length, "both attendees are to be called back");
    const taker = await runnerSlot();
    assert.equal(recovery.instance, cluster.idOf(taker), "the event names the instance that runs it now");
    assert.notEqual(taker, victim);

    const newCalls = () => cluster.trunk.offered().filter((call) => !known.has(call.callId));
    await until(
      "every attendee called back and connected",
      async () => {
        const called = new Set(newCalls().map((call) => call.number));
        if (!NUMBERS.every((number) => called.has(dialled(number)))) return undefined;
        return (await attendeeStates(api)).every((state) => state === "connected") ? true : undefined;
      },
      { timeoutMs: 20_000, detail: diagnostics },
    );
    const calls = newCalls();
    for (const number of NUMBERS)
      assert.equal(
        calls.filter((call) => call.number === dialled(number)).length,
        1,
        `${number} is called back exactly once`,
      );
    assert.deepEqual(
      calls.map((call) => call.fromPort),
      calls.map(() => cluster.sipPortOf(taker)),
      "the calls back come from the instance that took the conference over",
    );
    const read = await api.request("GET", room, owner.auth);
    assert.match(read.text, /<state>started<\/state>/, "the conference is still started");
    const ringMs = Math.min(...calls.map((call) => call.at)) - since;
    t.diagnostic(
      `${cause}: ${cluster.idOf(victim)} → ${cluster.idOf(taker)}, gap ${recovery.gapSeconds} s, first phone ringing ${ringMs} ms after the signal`,
    );
    return { taker, ringMs, recovery };
  }

  function offeredIds(): Set<string> {
    return new Set(cluster.trunk.offered().map((call) => call.callId));
  }

  test("SIGKILL of its runner: another instance takes it over and calls every attendee back once, the first within 15 s", async (t) => {
    const victim = await runnerSlot();
    const known = offeredIds();
    const since = Date.now();
    await (cluster.instances[victim] as ServiceProcess).kill("SIGKILL");
    const { ringMs, recovery } = await assertTakenOver(t, victim, "runner-silent", since, known);
    assert.ok(ringMs < RING_WITHIN_MS, `the first phone rang again ${ringMs} ms after the kill`);
    // Silent for the lease at least (taken over only then), and known to have been.
    assert.ok(
      recovery.gapSeconds >= LEASE_SECONDS && recovery.gapSeconds * 1000 < RING_WITHIN_MS,
      `gap ${recovery.gapSeconds} s`,
    );
  });

  test("SIGSTOP of its runner past the lease: taken over; on SIGCONT the paused instance gives its room up and hangs up", async (t) => {
    const victim = await runnerSlot();
    const sleeper = cluster.instances[victim] as ServiceProcess;
    // Everything the instances send to the trunk's RTP port (RTCP goes to the next port), for the
    // wire test below (skipped, saying why, without tshark).
    const capture =
      WIRE_SKIP === false ? await WireCapture.start(`udp dst port ${cluster.trunk.mediaPort}`) : undefined;
    if (capture !== undefined) cleanups.push(() => capture.dispose());
    const known = offeredIds();
    const oldCalls = cluster.trunk
      .offered()
      .filter((call) => call.fromPort === cluster.sipPortOf(victim))
      .map((call) => call.callId);
    const since = Date.now();
    sleeper.pause();
    paused = victim;
    const { taker } = await assertTakenOver(t, victim, "runner-silent", since, known);
    sleeper.resume();
    paused = undefined;

    await until(
      "the resumed instance to give its room up",
      async () => (sleeper.logged("conference room given up") ? true : undefined),
      { timeoutMs: 10_000, detail: diagnostics },
    );
    const givenUp = sleeper.logsOf("conference room given up");
    assert.deepEqual(
      givenUp.map((line) => line.conferenceId),
      [conferenceId],
      "it gives up this conference's room, once",
    );
    await until(
      "the resumed instance's calls hung up at the trunk",
      async () => {
        const hungUp = cluster.trunk.hungUp();
        return oldCalls.every((callId) => hungUp.has(callId)) ? true : undefined;
      },
      { timeoutMs: 10_000, detail: diagnostics },
    );
    stopCase = { victim, taker };
    if (capture === undefined) return;
    await capture.stop();
    // The senders in capture order: `datagrams` asks about every datagram captured, in order.
    const senders: number[] = [];
    capture.datagrams(({ source }) => {
      const slot = cluster.slotOfRtpPort(source);
      if (slot !== undefined) senders.push(slot);
      return false;
    });
    rtpSenders = senders;
  });

  // Its own test, on what the one above captured: the paused instance's media thread must send
  // nothing once its lease has run out, which takes the rooms' audio fenced to their leases
  // (ConferenceRuntime's fence: the room's MediaMix.sendFor).
  test("SIGSTOP and SIGCONT on the wire: no RTP from the old room once the new one sends", {
    skip: WIRE_SKIP,
  }, (t) => {
    assert.ok(rtpSenders !== undefined && stopCase !== undefined, "the SIGSTOP case ran to its end");
    const { victim, taker } = stopCase;
    const firstNew = rtpSenders.indexOf(taker);
    assert.notEqual(firstNew, -1, "the new room sent RTP to the trunk");
    assert.ok(rtpSenders.slice(0, firstNew).includes(victim), "the old room sent RTP before the pause");
    const late = rtpSenders.slice(firstNew).filter((slot) => slot === victim).length;
    t.diagnostic(`RTP packets from the old room after the new one's first: ${late}`);
    assert.equal(late, 0, "RTP from the old instance after the new room began sending");
  });

  test("SIGTERM of its runner with another alive: handed over, taken over at once, every attendee called back once", async (t) => {
    const victim = await runnerSlot();
    const stopping = cluster.instances[victim] as ServiceProcess;
    const known = offeredIds();
    const since = Date.now();
    await stopping.kill("SIGTERM");
    assert.equal((await stopping.exited).code, 0, stopping.warnings());
    assert.ok(stopping.logged("conference handed over to the other instances"), stopping.warnings());
    const { ringMs } = await assertTakenOver(t, victim, "handed-over", since, known);
    assert.ok(ringMs < RING_WITHIN_MS, `the first phone rang again ${ringMs} ms after SIGTERM`);
  });
});

function recoveryOf(data: object): RecoveryDetails | undefined {
  return (data as { recovery?: RecoveryDetails }).recovery;
}
