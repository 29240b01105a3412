/**
 * 2,000 open event streams: `npm run bench:flood:streams` (it runs Node with --expose-gc).
 *
 * The service (bench/flood/api-common.ts: in this process, a live conference of 10 SIPp calls unless
 * BENCH_CALLS=0) has USERS users (BENCH_USERS, default 100), each with a conference. A client
 * process of its own (bench/flood/stream-client.ts) opens STREAMS_PER_USER event streams
 * (BENCH_STREAMS_PER_USER, default 20; GET /users/{id}/events, Server-Sent Events) for each: STREAMS
 * in all.
 * The service's memory is read after a full collection before and after they open: the difference
 * over STREAMS is the memory per stream. Then, for BENCH_SECONDS (default 20), an attendee is added to
 * every user's conference ROUNDS times (an attendee-added event each, to that user's 20 streams),
 * while another user sends GET /current at PROBE_RATE requests/s; the same user's requests were
 * measured for as long before the streams opened. Events are waited for until every stream has all
 * of its user's, for at most DELIVERY_GRACE_MS after the last was made.
 *
 * Printed: memory per stream (resident and heap), events delivered (each stream must get every event
 * of its user: STREAMS x ROUNDS) and their delay from the 201 of the POST that made them to their
 * arrival (p50/p99/max), the user's latency before and with the streams open, and the media threads'
 * tick lateness over each window. The run is invalid (exit status 1) unless every stream opened (200),
 * every event reached every stream of its user, every request of the user was answered 200, and every
 * call of the live room was connected before and after.
 */
import type { ChildProcess } from "node:child_process";
import { once } from "node:events";
import os from "node:os";
import { setTimeout as sleep } from "node:timers/promises";
import {
  Api,
  formatLateness,
  type Lateness,
  latenessWindow,
  ROOM_SIZE,
  reportVerdict,
  startFloodService,
} from "./api-common.js";
import { LoadGenerator, type LoadOutcome } from "./load-generator.js";
import { type ClientCommand, type ClientReport, startStreamClient } from "./stream-client.js";

const USERS = Number(process.env.BENCH_USERS ?? 100);
const STREAMS_PER_USER = Number(process.env.BENCH_STREAMS_PER_USER ?? 20);
const STREAMS = USERS * STREAMS_PER_USER;
const ROUNDS = 5;
const SECONDS = Number(process.env.BENCH_SECONDS ?? 20);
const CALLS = Number(process.env.BENCH_CALLS ?? ROOM_SIZE);
const PROBE_CONNECTIONS = 4;
const PROBE_RATE = 50;
/** How long events are waited for after the last one was made, at most. */
const DELIVERY_GRACE_MS = 5_000;
/** How often the stream client is asked whether every event has arrived. */
const DELIVERY_POLL_MS = 100;
// ---- The parent: the service, the users, the figures ----

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

function memory() {
  (globalThis as { gc?: () => void }).gc?.();
  (globalThis as { gc?: () => void }).gc?.();
  const { rss, heapUsed } = process.memoryUsage();
  return { rss, heapUsed };
}

async function ask(child: ChildProcess, command: ClientCommand): Promise<ClientReport> {
  const answer = once(child, "message");
  child.send(command);
  return (await answer)[0] as ClientReport;
}

async function main(): Promise<void> {
  if ((globalThis as { gc?: () => void }).gc === undefined) throw new Error("run with node --expose-gc");
  const flood = await startFloodService(CALLS, { signupLimit: USERS + 10 });
  const probeLoad = await LoadGenerator.start();
  const client = await startStreamClient();
  const problems: string[] = [];
  try {
    const users: { id: string; api: Api; conferencePath: string }[] = [];
    for (let i = 0; i < USERS; i++) {
      const api = new Api(flood.baseUrl);
      const userPath = await api.signUp(`user${i}@example.com`, `password of user ${i}`);
      const conferencePath = await api.create(
        `${userPath}/conferences`,
        "<conference><name>Watched</name><scheduled-to-start-at>2030-01-01T10:00:00Z</scheduled-to-start-at></conference>",
      );
      // Checked once (scrypt) before anything is measured, as a signed-in console's would have been.
      if ((await api.send("GET", "/current")).status !== 200) throw new Error(`user ${i} cannot sign in`);
      users.push({ id: userPath.split("/")[2] as string, api, conferencePath });
    }
    const prober = users[0] as (typeof users)[number];
    const probeJob = {
      url: `${flood.baseUrl}/current`,
      headers: { accept: "application/xml", authorization: prober.api.authorization },
      connections: PROBE_CONNECTIONS,
      overallRate: PROBE_RATE,
      durationSeconds: SECONDS,
    };
    const roomBefore = await flood.connectedCalls();

    let readLateness = CALLS > 0 ? await latenessWindow(flood.service) : undefined;
    const probeBefore = await probeLoad.run(probeJob);
    const latenessBefore = await readLateness?.();

    const memoryBefore = memory();
    const opened = await ask(client, {
      type: "open",
      baseUrl: flood.baseUrl,
      users: users.map((user) => ({ id: user.id, authorization: user.api.authorization })),
      perUser: STREAMS_PER_USER,
    });
    await sleep(2_000);
    const memoryAfter = memory();
    const openStatuses = opened.type === "opened" ? opened.statuses : {};
    if (openStatuses["200"] !== STREAMS) problems.push(`streams opened: ${JSON.stringify(openStatuses)}`);

    readLateness = CALLS > 0 ? await latenessWindow(flood.service) : undefined;
    const probing = probeLoad.run(probeJob);
    // Awaited below; a failure must not go unhandled meanwhile.
    probing.catch(() => undefined);
    const made = new Map<string, { user: string; at: number }>();
    for (let round = 0; round < ROUNDS; round++) {
      for (const user of users) {
        const response = await fetch(`${flood.baseUrl}${user.conferencePath}/attendees`, {
          method: "POST",
          headers: {
            accept: "application/xml",
            "content-type": "application/xml",
            authorization: user.api.authorization,
          },
          body: `<attendee><name>Guest ${round}</name><dial-in type="boolean">true</dial-in></attendee>`,
        });
        const at = Date.now();
        const text = await response.text();
        if (response.status !== 201)
          throw new Error(`adding an attendee answered ${response.status}: ${text}`);
        const id = (response.headers.get("location") ?? "").split("/").at(-1) as string;
        made.set(id, { user: user.id, at });
      }
      await sleep((SECONDS * 1000) / ROUNDS - 500);
    }
    const probeWith: LoadOutcome = await probing;
    const latenessWith = await readLateness?.();
    const expected = STREAMS * ROUNDS;
    /** The events' delays as the stream client saw them, and how many it has not seen. */
    const delivered = async () => {
      const report = await ask(client, { type: "report" });
      const delays: number[] = [];
      let missing = 0;
      for (const stream of report.type === "events" ? report.perStream : []) {
        for (const [attendeeId, event] of made) {
          if (event.user !== stream.user) continue;
          const arrived = stream.arrivals[attendeeId];
          if (arrived === undefined) missing++;
          else delays.push(arrived - event.at);
        }
      }
      return { delays, missing };
    };
    const graceEnds = performance.now() + DELIVERY_GRACE_MS;
    let { delays, missing } = await delivered();
    while ((missing > 0 || delays.length !== expected) && performance.now() < graceEnds) {
      await sleep(DELIVERY_POLL_MS);
      ({ delays, missing } = await delivered());
    }
    const roomAfter = await flood.connectedCalls();
    delays.sort((a, b) => a - b);
    if (missing > 0 || delays.length !== expected)
      problems.push(`events delivered: ${delays.length} of ${expected} (${missing} missing)`);
    for (const [name, probe] of [
      ["before", probeBefore],
      ["with streams", probeWith],
    ] as const)
      if (probe.statusCodes["200"] !== probe.requests || probe.errors > 0)
        problems.push(`${name}: the user got ${JSON.stringify(probe.statusCodes)}, ${probe.errors} errors`);
    if (roomBefore !== CALLS || roomAfter !== CALLS)
      problems.push(`the live room had ${roomBefore} then ${roomAfter} of ${CALLS} calls connected`);

    const perStream = (bytes: number) => `${(bytes / STREAMS / 1024).toFixed(1)} KiB`;
    const row = (name: string, probe: LoadOutcome, lateness: Lateness | undefined) =>
      `| ${name} | ${probe.requests} | ${probe.p50Ms} / ${probe.p99Ms} / ${probe.maxMs} ms | ${lateness ? formatLateness(lateness) : "no calls"} |`;
    console.log(
      [
        `Machine load average (1 min) at the end: ${os.loadavg()[0]?.toFixed(1)} on ${os.availableParallelism()} cores`,
        `Event streams: ${STREAMS} open (${USERS} users x ${STREAMS_PER_USER}); ${ROUNDS} attendee-added events per user over ${SECONDS} s; a user at ${PROBE_RATE} req/s (GET /current); ${CALLS} live calls${CALLS === 0 ? " (none: BENCH_CALLS=0)" : ""}`,
        "",
        `Memory per stream (after a full collection): resident ${perStream(memoryAfter.rss - memoryBefore.rss)}, heap ${perStream(memoryAfter.heapUsed - memoryBefore.heapUsed)}`,
        `Events delivered: ${delays.length} of ${expected}; delay from the POST's 201 p50 / p99 / max: ${percentile(delays, 50)} / ${percentile(delays, 99)} / ${delays.at(-1) ?? 0} ms`,
        "",
        "| Window | User requests | User p50 / p99 / max | Media tick lateness p50 / p99 / max (worst thread) |",
        "| ------ | ------------- | -------------------- | ------------------------------------------------- |",
        row(`no streams (${SECONDS} s)`, probeBefore, latenessBefore),
        row(`${STREAMS} streams, events flowing (${SECONDS} s)`, probeWith, latenessWith),
      ].join("\n"),
    );
  } finally {
    client.kill();
    probeLoad.stop();
    await flood.close();
  }
  reportVerdict(
    problems,
    "every stream opened and got every event of its user; every request of the user answered 200",
  );
}

await main();
