/**
 * Faults at a larger scale than the suite's short tests (test/faults), with figures:
 *
 * - `kill`: SIGKILL of the compiled service mid-load, restarted on the same database, BENCH_ROUNDS
 *   times (default 3) on each store (`BENCH_STORE=sqlite|postgres` for one): writes acknowledged,
 *   requests cut, writes lost, live conferences ended with the recovery reason, calls left in
 *   progress, restart time. The scenario is test/faults/kill-scenario.ts: BENCH_WRITERS (default 16)
 *   writers, killed after BENCH_WRITES (default 2,000) acknowledged writes, with BENCH_ROOMS (default
 *   5) live rooms of BENCH_CALLS_PER_ROOM (default 4) calls.
 * - `postgres-restart`: BENCH_ROOMS (default 10) live rooms of BENCH_CALLS_PER_ROOM (default 3)
 *   SIPp-answered calls on a throwaway cluster; it stops for BENCH_OUTAGE_SECONDS (default 10) while
 *   every call hangs up (BENCH_HANG_UP_SECONDS, default 5, after its answer) and API clients keep
 *   asking. Figures: the answers during the outage (503 expected, 500 never), how soon the API serves
 *   after the cluster is back, and how soon the hang-ups and conference ends made meanwhile land, in
 *   order.
 *
 * `npm run bench:faults [kill|postgres-restart]` (both by default); needs `npm run build:service`
 * first, sipp, and PostgreSQL (the machine's at 127.0.0.1:5432 for `kill` on PostgreSQL, its
 * programs for the throwaway cluster). It exits 1 when something it measures did not happen: a
 * write lost, a 500, a write that did not land or landed out of order.
 */
import { loadConfig } from "../../src/config.js";
import { killMidLoad, RECOVERY_REASON } from "../../test/faults/kill-scenario.js";
import { EventStream } from "../../test/helpers/event-stream.js";
import { createUser, startTestService, type TestService } from "../../test/helpers/service.js";
import { rtpPortRange, Sipp } from "../../test/helpers/sipp.js";
import { ThrowawayPostgres } from "../../test/helpers/throwaway-postgres.js";
import { until } from "../../test/helpers/until.js";

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
    `SIGKILL mid-load: ${writers} writers, killed after ${writesBeforeKill.toLocaleString("en")} acknowledged writes, ${rooms} live rooms of ${attendeesPerRoom} calls`,
  );
  console.log(
    "store     round  acknowledged  cut  lost  rooms ended (recovery reason)  calls in progress  restart ms  serves after",
  );
  for (const store of stores) {
    for (let round = 1; round <= rounds; round++) {
      const outcome = await withCleanups((cleanups) =>
        killMidLoad({ store, writers, writesBeforeKill, rooms, attendeesPerRoom }, cleanups),
      );
      const ended = outcome.rooms.filter(
        (room) => room.state === "ended" && room.endedReason === RECOVERY_REASON,
      );
      console.log(
        `${store.padEnd(9)} ${String(round).padStart(5)}  ${String(outcome.acknowledged).padStart(12)}  ${String(outcome.cut).padStart(3)}  ${String(outcome.lost.length).padStart(4)}  ${`${ended.length}/${outcome.rooms.length}`.padStart(29)}  ${String(outcome.callsLeftInProgress).padStart(17)}  ${String(outcome.restartMs).padStart(10)}  ${outcome.notServedAfterwards === "" ? "yes" : `NO: ${outcome.notServedAfterwards}`}`,
      );
      if (outcome.lost.length > 0) problems.push(`${store} round ${round}: lost ${outcome.lost.join("; ")}`);
      if (
        ended.length !== outcome.rooms.length ||
        outcome.callsLeftInProgress > 0 ||
        outcome.notServedAfterwards !== ""
      )
        problems.push(`${store} round ${round}: recovery incomplete ${JSON.stringify(outcome.rooms)}`);
      if (outcome.acknowledged < writesBeforeKill)
        problems.push(`${store} round ${round}: only ${outcome.acknowledged} writes`);
    }
  }
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
if (wanted("postgres-restart")) await benchPostgresRestart();
if (problems.length > 0) {
  console.error(`\n!!! FAULTS BENCH FAILED: these figures are not valid !!!\n${problems.join("\n")}`);
  process.exit(1);
}
process.exit(0);
