/**
 * Faults at a larger scale than the suite's short tests (test/faults), with figures:
 *
 * - `kill`: SIGKILL of the compiled service mid-load, restarted on the same database as the same
 *   instance, BENCH_ROUNDS times (default 3) on each store (`BENCH_STORE=sqlite|postgres` for one):
 *   writes acknowledged, requests cut, writes lost, live conferences taken over by the restarted
 *   instance (still started), their attendees called back once and connected, restart time, kill to
 *   the first phone ringing again. The scenario is test/faults/kill-scenario.ts: BENCH_WRITERS
 *   (default 16) writers, killed after BENCH_WRITES (default 2,000) acknowledged writes, with
 *   BENCH_ROOMS (default 5) live rooms of BENCH_CALLS_PER_ROOM (default 4) calls.
 * - `take-over`: BENCH_TAKE_OVER_ROUNDS (default 20) SIGKILLs, each of the instance running the most
 *   conferences of BENCH_INSTANCES (default 3) on one PostgreSQL database, restarted after each
 *   round; BENCH_ROOMS_PER_INSTANCE (default 3) conferences an instance of BENCH_CALLS_PER_ROOM
 *   (default 2) dialled attendees (a SIPp trunk that answers and holds every call), BENCH_WRITERS
 *   (default 8) API writers on every instance throughout, at least BENCH_WRITES (default 200)
 *   acknowledged between kills; the lease BENCH_LEASE_SECONDS (default the service's, 6). Each kill:
 *   another instance takes the conferences over and calls back every attendee that was connected.
 *   Figures per round and in all: kill to the first phone ringing again (target under 15 s, goal
 *   under 5 s) and to every attendee connected again, calls back, double calls, conferences ended,
 *   writes acknowledged, cut and lost.
 * - `postgres-restart`: BENCH_ROOMS (default 10) live rooms of BENCH_CALLS_PER_ROOM (default 3)
 *   SIPp-answered calls on a throwaway cluster; it stops for BENCH_OUTAGE_SECONDS (default 10) while
 *   every call hangs up (BENCH_HANG_UP_SECONDS, default 5, after its answer) and API clients keep
 *   asking. Figures: the answers during the outage (503 expected, 500 never), how soon the API serves
 *   after the cluster is back, and how soon the hang-ups and conference ends made meanwhile land, in
 *   order.
 *
 * `npm run bench:faults [kill|take-over|postgres-restart]` (all by default); needs `npm run
 * build:service` first, sipp, and PostgreSQL (the machine's at 127.0.0.1:5432 for `kill` on
 * PostgreSQL and `take-over`, its programs for the throwaway cluster). It exits 1 when a target is
 * missed or something it measures did not happen: a write lost, a conference ended by a kill, an
 * attendee not called back or called twice, a round with nobody connected to call back, a first
 * ring 15 s or more after the kill, a 500, a write that did not land or landed out of order.
 */
import { loadConfig } from "../../src/config.js";
import type { RecoveryDetails } from "../../src/domain/event.js";
import { INSTANCE, killMidLoad } from "../../test/faults/kill-scenario.js";
import {
  ApiWriters,
  type Auth,
  Cluster,
  liveRoom,
  type ServiceProcess,
  signUp,
} from "../../test/faults/service-processes.js";
import { EventStream } from "../../test/helpers/event-stream.js";
import { createUser, startTestService, type TestService } from "../../test/helpers/service.js";
import { rtpPortRange, Sipp } from "../../test/helpers/sipp.js";
import { ThrowawayPostgres } from "../../test/helpers/throwaway-postgres.js";
import { until } from "../../test/helpers/until.js";
import { percentile } from "../percentile.js";

const parts = process.argv.slice(2);
const wanted = (part: string) => parts.length === 0 || parts.includes(part);
const problems: string[] = [];

/** A whole number of at least 1 from the environment variable `name`, or `fallback` when unset. */
function sizeFrom(name: string, fallback: number): number {
  const value = Number(process.env[name] ?? fallback);
  if (!(Number.isInteger(value) && value >= 1)) throw new Error(`${name} must be 1 or more, got ${value}`);
  return value;
}

async function withCleanups<T>(run: (cleanups: Array<() => Promise<unknown>>) => Promise<T>): Promise<T> {
  const cleanups: Array<() => Promise<unknown>> = [];
  try {
    return await run(cleanups);
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  }
}

async function benchKill(): Promise<void> {
  const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
  const stores = process.env.BENCH_STORE
    ? [process.env.BENCH_STORE as "sqlite" | "postgres"]
    : (["sqlite", "postgres"] as const);
  const writers = sizeFrom("BENCH_WRITERS", 16);
  const writesBeforeKill = sizeFrom("BENCH_WRITES", 2000);
  const rooms = sizeFrom("BENCH_ROOMS", 5);
  const attendeesPerRoom = sizeFrom("BENCH_CALLS_PER_ROOM", 4);
  console.log(
    `SIGKILL mid-load, restarted as the same instance: ${writers} writers, killed after ${writesBeforeKill.toLocaleString("en")} acknowledged writes, ${rooms} live rooms of ${attendeesPerRoom} calls`,
  );
  console.log(
    "store     round  acknowledged  cut  lost  rooms taken over (started)  called back once, connected  restart ms  first ring ms  serves after",
  );
  for (const store of stores) {
    for (let round = 1; round <= rounds; round++) {
      const outcome = await withCleanups((cleanups) =>
        killMidLoad({ store, writers, writesBeforeKill, rooms, attendeesPerRoom }, cleanups),
      );
      const takenOver = outcome.rooms.filter(
        ({ state, recovery }) =>
          state === "started" && recovery?.previousInstance === INSTANCE && recovery.instance === INSTANCE,
      );
      const calledBack = outcome.attendees.filter(
        ({ callsSinceKill, state }) => callsSinceKill === 1 && state === "connected",
      );
      console.log(
        `${store.padEnd(9)} ${String(round).padStart(5)}  ${String(outcome.acknowledged).padStart(12)}  ${String(outcome.cut).padStart(3)}  ${String(outcome.lost.length).padStart(4)}  ${`${takenOver.length}/${outcome.rooms.length}`.padStart(26)}  ${`${calledBack.length}/${outcome.attendees.length}`.padStart(27)}  ${String(outcome.restartMs).padStart(10)}  ${String(outcome.ringMs).padStart(13)}  ${outcome.notServedAfterwards === "" ? "yes" : `NO: ${outcome.notServedAfterwards}`}`,
      );
      if (outcome.lost.length > 0) problems.push(`${store} round ${round}: lost ${outcome.lost.join("; ")}`);
      if (takenOver.length !== outcome.rooms.length || calledBack.length !== outcome.attendees.length)
        problems.push(
          `${store} round ${round}: take-over incomplete ${JSON.stringify({ rooms: outcome.rooms, attendees: outcome.attendees })}`,
        );
      if (outcome.notServedAfterwards !== "")
        problems.push(`${store} round ${round}: not served afterwards: ${outcome.notServedAfterwards}`);
      if (outcome.acknowledged < writesBeforeKill)
        problems.push(`${store} round ${round}: only ${outcome.acknowledged} writes`);
    }
  }
}

/** A round of `take-over`, as printed. */
interface TakeOverRound {
  readonly killed: string;
  /** Conferences each instance ran at the kill, in slot order. */
  readonly spread: readonly number[];
  /** Attendees connected at the kill in the killed instance's conferences. */
  readonly connected: number;
  /** From the kill to the first take-over, as the instance that took over logged it. */
  readonly takenOverMs: number;
  readonly firstRingMs: number;
  readonly allConnectedMs: number;
  readonly calledBack: number;
  readonly doubleCalls: number;
  readonly ended: number;
  /** The take-overs' events: by the instance that took over. */
  readonly takers: ReadonlyMap<string, number>;
  /** Writes acknowledged since the last round's check, read back after this kill. */
  readonly acknowledged: number;
  readonly cut: number;
  readonly lost: number;
}

async function benchTakeOver(): Promise<void> {
  const rounds = sizeFrom("BENCH_TAKE_OVER_ROUNDS", 20);
  const instances = sizeFrom("BENCH_INSTANCES", 3);
  if (instances < 2) throw new Error("BENCH_INSTANCES must be 2 or more: one is killed, another takes over");
  const roomsEach = sizeFrom("BENCH_ROOMS_PER_INSTANCE", 3);
  const callsPerRoom = sizeFrom("BENCH_CALLS_PER_ROOM", 2);
  const writerCount = sizeFrom("BENCH_WRITERS", 8);
  const writesPerRound = sizeFrom("BENCH_WRITES", 200);
  const leaseSeconds =
    process.env.BENCH_LEASE_SECONDS === undefined ? undefined : sizeFrom("BENCH_LEASE_SECONDS", 6);
  const leaseMs = (leaseSeconds ?? loadConfig({}).conferences.leaseSeconds) * 1000;
  const roomCount = instances * roomsEach;
  console.log(
    `\ntake-over: ${rounds} SIGKILLs of the busiest of ${instances} instances on one PostgreSQL database, each restarted after its round; ${roomCount} conferences of ${callsPerRoom} dialled attendees; ${writerCount} API writers on every instance, at least ${writesPerRound} acknowledged writes between kills; lease ${leaseMs / 1000} s`,
  );
  await withCleanups(async (cleanups) => {
    const cluster = await Cluster.start(
      // Every call of every conference on one instance at worst, RTP and RTCP each.
      { instances, leaseSeconds, rtpPortsEach: Math.max(100, 4 * roomCount * callsPerRoom) },
      cleanups,
    );
    const alive = () => cluster.instances.filter((instance) => instance.running);
    const anyAlive = (): ServiceProcess => {
      const running = alive();
      return running[Math.floor(Math.random() * running.length)] ?? (cluster.instances[0] as ServiceProcess);
    };
    const rooms: { id: number; path: string; owner: { path: string; auth: Auth } }[] = [];
    for (let room = 0; room < roomCount; room++) {
      const service = anyAlive();
      const owner = await signUp(service, `take-over-${room}-${process.pid}-${Date.now()}@example.com`);
      const numbers = Array.from(
        { length: callsPerRoom },
        (_, call) => `604-556-${String(room * callsPerRoom + call).padStart(4, "0")}`,
      );
      const path = await liveRoom(service, owner, numbers);
      rooms.push({ id: Number(path.split("/").pop()), path, owner });
    }
    const roomIds = rooms.map((room) => room.id);
    const writers = new ApiWriters(writerCount, anyAlive, "take-over");
    cleanups.push(() => writers.stop());

    const results: TakeOverRound[] = [];
    let checked = 0;
    const header =
      "| round | killed | conferences per instance | connected at the kill | taken over ms | first ring ms | all connected ms | called back | double calls | ended | writes acknowledged, read back | cut | lost | taken over by |";
    console.log(header);
    console.log(header.replace(/[^|]/g, "-"));
    for (let round = 1; round <= rounds; round++) {
      // Ready: every attendee connected, every instance judging others (up for a whole lease: before
      // that it takes nobody's conferences over), enough writes since the last kill.
      await until(
        "every attendee connected",
        async () => ((await notConnected(cluster, roomIds)) === 0 ? true : undefined),
        {
          timeoutMs: 60_000,
        },
      );
      const judging = Math.max(...alive().map((instance) => instance.startedAt)) + leaseMs;
      if (judging > Date.now()) await new Promise((resolve) => setTimeout(resolve, judging - Date.now()));
      await writers.acknowledgedAtLeast(checked + writesPerRound);
      if (writers.failures.length > 0) {
        problems.push(`writers failed: ${writers.failures.join("; ")}`);
        break;
      }

      const runners = await cluster.runners();
      const spread = Array.from(
        { length: instances },
        (_, slot) => roomIds.filter((id) => runners.get(id) === slot).length,
      );
      const victim = spread.indexOf(Math.max(...spread));
      const victimRooms = roomIds.filter((id) => runners.get(id) === victim);
      const connectedAtKill = await connectedNumbers(cluster, victimRooms);
      const known = new Set(cluster.trunk.offered().map((call) => call.callId));
      const lastEvent = await lastEventId(cluster);
      const cutBefore = writers.cut;
      const killedAt = Date.now();
      await (cluster.instances[victim] as ServiceProcess).kill("SIGKILL");

      // Taken over: each of its conferences run by another, every attendee called back and connected.
      const newCalls = () => cluster.trunk.offered().filter((call) => !known.has(call.callId));
      let allConnectedMs = Number.NaN;
      try {
        await until(
          "the killed instance's conferences taken over, every attendee called back and connected",
          async () => {
            const now = await cluster.runners();
            if (victimRooms.some((id) => now.get(id) === victim || now.get(id) === undefined))
              return undefined;
            const called = new Set(newCalls().map((call) => call.number));
            if (!connectedAtKill.every((number) => called.has(number))) return undefined;
            return (await notConnected(cluster, victimRooms)) === 0 ? true : undefined;
          },
          { timeoutMs: 60_000 },
        );
        allConnectedMs = Date.now() - killedAt;
      } catch (error) {
        problems.push(`round ${round}: ${(error as Error).message}`);
      }
      // Restarted (the same instance, as under systemd) while the round is judged; not after the last.
      const restarted = round < rounds ? cluster.startSlot(victim) : undefined;
      const answering = alive()[0] as ServiceProcess;
      const checkedUpTo = writers.acknowledged.length;
      const lost = await writers.lost(answering, checked);
      const acknowledged = checkedUpTo - checked;
      checked = checkedUpTo;
      await restarted;
      // Counted last, after the restart: a second call of anyone, as late as that, is seen.
      const calls = newCalls();
      const doubleCalls = [...new Set(calls.map((call) => call.number))].reduce(
        (extra, number) => extra + calls.filter((call) => call.number === number).length - 1,
        0,
      );
      const calledBack = connectedAtKill.filter((number) =>
        calls.some((call) => call.number === number),
      ).length;
      const strangers = calls.filter((call) => !connectedAtKill.includes(call.number)).length;
      const recoveries = await recoveriesSince(cluster, lastEvent);
      const takers = new Map<string, number>();
      for (const recovery of recoveries)
        takers.set(recovery.instance, (takers.get(recovery.instance) ?? 0) + 1);
      const ended = await endedCount(cluster, roomIds);
      const result: TakeOverRound = {
        killed: cluster.idOf(victim),
        spread,
        connected: connectedAtKill.length,
        takenOverMs: firstTakeOver(cluster, victim, killedAt) - killedAt,
        firstRingMs: calls.length === 0 ? Number.NaN : Math.min(...calls.map((call) => call.at)) - killedAt,
        allConnectedMs,
        calledBack,
        doubleCalls,
        ended,
        takers,
        acknowledged,
        cut: writers.cut - cutBefore,
        lost: lost.length,
      };
      results.push(result);
      console.log(
        `| ${round} | ${result.killed} | ${spread.join(" / ")} | ${result.connected} | ${result.takenOverMs} | ${result.firstRingMs} | ${result.allConnectedMs} | ${calledBack} | ${doubleCalls} | ${ended} | ${acknowledged} | ${result.cut} | ${result.lost} | ${[...takers].map(([instance, count]) => `${instance} ${count}`).join(", ")} |`,
      );
      if (connectedAtKill.length === 0) problems.push(`round ${round}: nobody was connected at the kill`);
      if (calledBack !== connectedAtKill.length)
        problems.push(`round ${round}: ${connectedAtKill.length - calledBack} attendees never called back`);
      if (doubleCalls > 0 || strangers > 0)
        problems.push(
          `round ${round}: ${doubleCalls} double calls, ${strangers} calls to attendees of other instances`,
        );
      if (ended > 0) problems.push(`round ${round}: ${ended} conferences ended`);
      if (lost.length > 0) problems.push(`round ${round}: lost ${lost.join("; ")}`);
      if (
        recoveries.length !== victimRooms.length ||
        recoveries.some((recovery) => recovery.cause !== "runner-silent")
      )
        problems.push(
          `round ${round}: ${recoveries.length} take-over events for ${victimRooms.length} conferences`,
        );
      if (!(result.firstRingMs < 15_000))
        problems.push(`round ${round}: first ring ${result.firstRingMs} ms after the kill`);
      // Conferences not taken over: the next rounds would measure what this one left.
      if (Number.isNaN(allConnectedMs)) break;
    }
    await writers.stop();

    const rings = results.map((result) => result.firstRingMs).sort((a, b) => a - b);
    const takeOvers = results.map((result) => result.takenOverMs).sort((a, b) => a - b);
    const connectedAgain = results.map((result) => result.allConnectedMs).sort((a, b) => a - b);
    const sum = (pick: (result: TakeOverRound) => number) =>
      results.reduce((total, result) => total + pick(result), 0);
    const underGoal = rings.filter((ms) => ms < 5_000).length;
    console.log(
      `kill→first ring: p50 ${percentile(rings, 0.5)} ms, max ${rings.at(-1)} ms; target (under 15 s in every round): ${rings.length === rounds && rings.every((ms) => ms < 15_000) ? "met" : "MISSED"}; goal (under 5 s): met in ${underGoal} of ${rounds} rounds`,
    );
    console.log(
      `kill→taken over (the new runner's log line): p50 ${percentile(takeOvers, 0.5)} ms, max ${takeOvers.at(-1)} ms`,
    );
    console.log(
      `kill→every attendee connected again: p50 ${percentile(connectedAgain, 0.5)} ms, max ${connectedAgain.at(-1)} ms`,
    );
    console.log(
      `take-overs: ${sum((result) => [...result.takers.values()].reduce((a, b) => a + b, 0))} conferences in ${results.length} rounds; called back ${sum((result) => result.calledBack)} of ${sum((result) => result.connected)} attendees connected at the kills`,
    );
    console.log(
      `double calls ${sum((result) => result.doubleCalls)}, conferences ended ${sum((result) => result.ended)}, acknowledged writes lost ${sum((result) => result.lost)} of ${sum((result) => result.acknowledged)} (cut in flight: ${sum((result) => result.cut)})`,
    );
    if (results.length < rounds) problems.push(`only ${results.length} of ${rounds} rounds ran`);
  });
}

/** When (ms since the epoch) an instance other than `victim` first logged a take-over after `since`. */
function firstTakeOver(cluster: Cluster, victim: number, since: number): number {
  const times = cluster.instances
    .filter((_, slot) => slot !== victim)
    .flatMap((instance) => instance.logsOf("conference taken over"))
    .map((line) => Number(line.time))
    .filter((time) => time > since);
  return times.length === 0 ? Number.NaN : Math.min(...times);
}

/** Attendees of these conferences not connected now. */
async function notConnected(cluster: Cluster, conferenceIds: readonly number[]): Promise<number> {
  if (conferenceIds.length === 0) return 0;
  const { count } = await cluster.store.db
    .selectFrom("attendees")
    .select((eb) => eb.fn.countAll<number>().as("count"))
    .where("conference_id", "in", conferenceIds)
    .where("state", "!=", "connected")
    .executeTakeFirstOrThrow();
  return Number(count);
}

/** The numbers, as dialled, of these conferences' attendees connected now. */
async function connectedNumbers(cluster: Cluster, conferenceIds: readonly number[]): Promise<string[]> {
  if (conferenceIds.length === 0) return [];
  const rows = await cluster.store.db
    .selectFrom("attendees")
    .select(["phone_number_country_code", "phone_number_subscriber_number"])
    .where("conference_id", "in", conferenceIds)
    .where("state", "=", "connected")
    .execute();
  // As the room dials them.
  return rows.map(
    (row) => `+${row.phone_number_country_code ?? "1"}${row.phone_number_subscriber_number ?? ""}`,
  );
}

async function lastEventId(cluster: Cluster): Promise<number> {
  const row = await cluster.store.db
    .selectFrom("events")
    .select((eb) => eb.fn.max("id").as("id"))
    .executeTakeFirst();
  return Number(row?.id ?? 0);
}

/** The take-overs recorded after event `after`. */
async function recoveriesSince(cluster: Cluster, after: number): Promise<RecoveryDetails[]> {
  const rows = await cluster.store.db
    .selectFrom("events")
    .select("details")
    .where("id", ">", after)
    .where("type", "=", "conference-recovered")
    .execute();
  return rows.map((row) => JSON.parse(row.details ?? "{}") as RecoveryDetails);
}

/** These conferences no longer started. */
async function endedCount(cluster: Cluster, conferenceIds: readonly number[]): Promise<number> {
  const { count } = await cluster.store.db
    .selectFrom("conferences")
    .select((eb) => eb.fn.countAll<number>().as("count"))
    .where("id", "in", conferenceIds)
    .where("state", "!=", "started")
    .executeTakeFirstOrThrow();
  return Number(count);
}

async function benchPostgresRestart(): Promise<void> {
  const outageMs = Number(process.env.BENCH_OUTAGE_SECONDS ?? 10) * 1000;
  const roomCount = sizeFrom("BENCH_ROOMS", 10);
  const callsPerRoom = sizeFrom("BENCH_CALLS_PER_ROOM", 3);
  const hangUpMs = sizeFrom("BENCH_HANG_UP_SECONDS", 5) * 1000;
  await withCleanups(async (cleanups) => {
    const cluster = await ThrowawayPostgres.create();
    cleanups.push(() => cluster.destroy());
    // Each call hangs up a while after it is answered: inside the outage, which starts once all are.
    const carrier = await Sipp.start({
      scenario: new URL("hang-up-later.xml", import.meta.url).pathname,
      calls: 100_000,
      pauseMs: hangUpMs,
      timeoutSeconds: 3600,
      traceMessages: false,
    });
    cleanups.push(() => carrier.stop());
    const api = await startTestService({
      databaseUrl: cluster.url,
      logLevel: "warn",
      sip: {
        ...loadConfig({ BRIDGELINE_SIP_TRUNK: `sip:127.0.0.1:${carrier.sipPort}` }).sip,
        bindAddress: "127.0.0.1",
        port: 0,
        callerId: "+16045550000",
        rtpPorts: rtpPortRange(),
      },
    });
    cleanups.push(() => api.close());
    const rooms: { path: string; owner: { id: number; auth: [string, string] } }[] = [];
    for (let room = 0; room < roomCount; room++) {
      const owner = await createUser(api);
      rooms.push({ path: await roomOfCalls(api, owner, room, callsPerRoom), owner });
    }
    // Started together, so that every call is up before the first hangs up.
    for (const { path, owner } of rooms)
      await api.request("PUT", path, {
        auth: owner.auth,
        body: "<conference><state>pending</state></conference>",
      });
    await until(
      "every call answered",
      async () => {
        for (const { path, owner } of rooms) {
          const list = await api.request("GET", `${path}/attendees`, { auth: owner.auth });
          if ((list.text.match(/<state>connected<\/state>/g)?.length ?? 0) !== callsPerRoom) return undefined;
        }
        return true;
      },
      { timeoutMs: 60_000, detail: () => `${api.logs.slice(-20).join("\n")}\n${carrier.report()}` },
    );

    cluster.stop();
    const stoppedAt = Date.now();
    const answers = new Map<number, number>();
    let asking = true;
    const askers = rooms.slice(0, 4).map(async ({ path, owner }) => {
      while (asking) {
        const read = await api.request("GET", path, { auth: owner.auth });
        answers.set(read.status, (answers.get(read.status) ?? 0) + 1);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    });
    await new Promise((resolve) => setTimeout(resolve, outageMs));
    asking = false;
    await Promise.all(askers);
    cluster.start();
    const restartedAt = Date.now();
    const [first] = rooms as [(typeof rooms)[0]];
    await until("the API serving", async () =>
      (await api.request("GET", first.path, { auth: first.owner.auth })).status === 200 ? true : undefined,
    );
    const servingMs = Date.now() - restartedAt;
    await until(
      "every conference ended",
      async () => {
        for (const { path, owner } of rooms) {
          const read = await api.request("GET", path, { auth: owner.auth });
          if (!read.text.includes("<state>ended</state>")) return undefined;
        }
        return true;
      },
      { timeoutMs: 120_000 },
    );
    const landedMs = Date.now() - restartedAt;

    let duringOutage = 0;
    let outOfOrder = 0;
    for (const { path, owner } of rooms) {
      const stream = await EventStream.open(`${api.httpUrl}${path}/events`, {
        auth: owner.auth,
        lastEventId: 0,
      });
      await stream.waitFor("the conference's end", (event) => event.type === "conference-ended");
      stream.close();
      const events = stream.events;
      for (let i = 1; i < events.length; i++)
        if ((events[i - 1]?.data.at ?? "") > (events[i]?.data.at ?? "")) outOfOrder++;
      duringOutage += events.filter((event) => {
        const at = Date.parse(event.data.at);
        return (
          (event.type === "attendee-disconnected" || event.type === "conference-ended") &&
          at >= stoppedAt &&
          at <= restartedAt
        );
      }).length;
    }
    const status = (code: number) => answers.get(code) ?? 0;
    const other = [...answers]
      .filter(([code]) => code !== 503 && code !== 500)
      .map(([code, n]) => `${n}×${code}`);
    console.log(
      `PostgreSQL restarted: ${roomCount} rooms of ${callsPerRoom} calls, each hung up ${hangUpMs / 1000} s after its answer, outage ${outageMs / 1000} s`,
    );
    console.log(
      `API during the outage: ${status(503)} answered 503, ${status(500)} answered 500${other.length > 0 ? `, ${other.join(", ")}` : ""}`,
    );
    console.log(
      `hang-ups and ends made during the outage that landed with their own time: ${duringOutage} of ${roomCount * (callsPerRoom + 1)}; out of order: ${outOfOrder}`,
    );
    console.log(
      `after the restart: API serving in ${servingMs} ms, every waiting write landed in ${landedMs} ms`,
    );
    if (status(500) > 0 || status(503) === 0)
      problems.push("the API did not answer 503 (and only 503) during the outage");
    if (duringOutage !== roomCount * (callsPerRoom + 1))
      problems.push(`only ${duringOutage} writes made during the outage landed`);
    if (outOfOrder > 0) problems.push(`${outOfOrder} events out of order`);
  });
}

/** A conference that dials `calls` attendees direct, with no moderator, due now (not pending yet). */
async function roomOfCalls(
  api: TestService,
  owner: { id: number; auth: [string, string] },
  room: number,
  calls: number,
): Promise<string> {
  const created = await api.request("POST", `/users/${owner.id}/conferences`, {
    auth: owner.auth,
    body: `<conference><name>Outage</name><scheduled-to-start-at>${new Date().toISOString()}</scheduled-to-start-at><direct-dial type="boolean">true</direct-dial><no-moderator type="boolean">true</no-moderator><announce-attendees type="boolean">false</announce-attendees></conference>`,
  });
  const path = new URL(String(created.headers.location), "http://localhost").pathname;
  for (let call = 0; call < calls; call++) {
    const number = `604-555-${String(100 + room * calls + call).padStart(4, "0")}`;
    await api.request("POST", `${path}/attendees`, {
      auth: owner.auth,
      body: `<attendee><phone-number>${number}</phone-number></attendee>`,
    });
  }
  return path;
}

if (wanted("kill")) await benchKill();
if (wanted("take-over")) await benchTakeOver();
if (wanted("postgres-restart")) await benchPostgresRestart();
if (problems.length > 0) {
  console.error(`\n!!! FAULTS BENCH FAILED: these figures are not valid !!!\n${problems.join("\n")}`);
  process.exit(1);
}
process.exit(0);
