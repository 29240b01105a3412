/**
 * 1,000 concurrent API clients at the failed-login throttle: `npm run bench:flood:logins`.
 *
 * The service (bench/flood/api-common.ts: in this process, a live conference of 10 SIPp calls unless
 * BENCH_CALLS=0) sits behind a stand-in load balancer: it trusts X-Forwarded-For from 127.0.0.1, so
 * the flood and the users are clients at addresses of their own. First, for BENCH_BEFORE_SECONDS
 * (default 10), a signed-up user alone sends GET /current with its right password (cached after the
 * first check) at PROBE_RATE requests/s; then, for BENCH_FLOOD_SECONDS (default 30), the same while
 * FLOOD_CONNECTIONS clients (BENCH_FLOOD_CONNECTIONS, default 1,000) from one address send wrong
 * passwords for another user as fast as they are answered (autocannon, flat out, in a process of its
 * own), or at BENCH_FLOOD_RATE requests/s in all when set (the suite's smoke run).
 *
 * Printed per window: the user's requests (all must be 200) and their latency p50/p99/max; what the
 * flood got (401: its passwords actually checked; 429: refused by the throttle); the media threads'
 * tick lateness (worst thread p50/p99/max) and skipped ticks. The run is invalid (exit status 1)
 * unless the throttle held (exactly BRIDGELINE_FAILED_LOGIN_LIMIT of the flood's passwords checked,
 * every other answer 429, none failed), the flood made at least FLOOD_CONNECTIONS requests, every
 * request of the user was answered 200, and every call of the live room was connected before and
 * after the flood.
 */
import os from "node:os";
import { loadConfig } from "../../src/config.js";
import {
  Api,
  basicAuthorization,
  formatLateness,
  type Lateness,
  latenessWindow,
  ROOM_SIZE,
  reportVerdict,
  startFloodService,
} from "./api-common.js";
import { LoadGenerator, type LoadOutcome } from "./load-generator.js";

const BEFORE_SECONDS = Number(process.env.BENCH_BEFORE_SECONDS ?? 10);
const FLOOD_SECONDS = Number(process.env.BENCH_FLOOD_SECONDS ?? 30);
const CALLS = Number(process.env.BENCH_CALLS ?? ROOM_SIZE);
const FLOOD_CONNECTIONS = Number(process.env.BENCH_FLOOD_CONNECTIONS ?? 1000);
/** Requests per second of the whole flood; flat out when unset. */
const FLOOD_RATE =
  process.env.BENCH_FLOOD_RATE === undefined ? undefined : Number(process.env.BENCH_FLOOD_RATE);
const PROBE_CONNECTIONS = 4;
const PROBE_RATE = 50;
const LIMIT = loadConfig({}).failedLoginLimit;
const USER_ADDRESS = "198.51.100.10";
const FLOOD_ADDRESS = "203.0.113.66";

interface Window {
  name: string;
  probe: LoadOutcome;
  flood?: LoadOutcome;
  lateness?: Lateness;
}

async function main(): Promise<void> {
  const flood = await startFloodService(CALLS, { trustedProxies: "127.0.0.1" });
  const floodLoad = await LoadGenerator.start();
  const probeLoad = await LoadGenerator.start();
  const problems: string[] = [];
  const windows: Window[] = [];
  try {
    const url = `${flood.baseUrl}/current`;
    const user = new Api(flood.baseUrl);
    await user.signUp("user@example.com", "the user's password");
    const victim = new Api(flood.baseUrl);
    await victim.signUp("victim@example.com", "the victim's password");
    const probeJob = (durationSeconds: number) => ({
      url,
      headers: {
        accept: "application/xml",
        authorization: user.authorization,
        "x-forwarded-for": USER_ADDRESS,
      },
      connections: PROBE_CONNECTIONS,
      overallRate: PROBE_RATE,
      durationSeconds,
    });
    // The user's password is checked once (scrypt) and remembered; the windows measure what follows.
    if ((await user.send("GET", "/current")).status !== 200) throw new Error("the user cannot sign in");

    const roomBefore = await flood.connectedCalls();
    let readLateness = CALLS > 0 ? await latenessWindow(flood.service) : undefined;
    windows.push({ name: "before", probe: await probeLoad.run(probeJob(BEFORE_SECONDS)) });
    (windows[0] as Window).lateness = await readLateness?.();

    readLateness = CALLS > 0 ? await latenessWindow(flood.service) : undefined;
    const [floodOutcome, probe] = await Promise.all([
      floodLoad.run({
        url,
        headers: {
          accept: "application/xml",
          authorization: basicAuthorization("victim@example.com", "a guess"),
          "x-forwarded-for": FLOOD_ADDRESS,
        },
        connections: FLOOD_CONNECTIONS,
        durationSeconds: FLOOD_SECONDS,
        overallRate: FLOOD_RATE,
      }),
      probeLoad.run(probeJob(FLOOD_SECONDS)),
    ]);
    windows.push({ name: "flood", probe, flood: floodOutcome, lateness: await readLateness?.() });
    const roomAfter = await flood.connectedCalls();

    for (const window of windows) {
      const { probe } = window;
      if (probe.statusCodes["200"] !== probe.requests || probe.errors > 0)
        problems.push(
          `${window.name}: the user got ${JSON.stringify(probe.statusCodes)}, ${probe.errors} errors`,
        );
    }
    const checked = floodOutcome.statusCodes["401"] ?? 0;
    const refused = floodOutcome.statusCodes["429"] ?? 0;
    if (checked !== LIMIT)
      problems.push(`the flood had ${checked} passwords checked, not the limit ${LIMIT}`);
    // Requests of the flood left unanswered (it waits in line behind itself) are no answer at all.
    if (checked + refused !== Object.values(floodOutcome.statusCodes).reduce((sum, n) => sum + n, 0))
      problems.push(`the flood got ${JSON.stringify(floodOutcome.statusCodes)}, not only 401 and 429`);
    if (floodOutcome.requests < FLOOD_CONNECTIONS)
      problems.push(`the flood made only ${floodOutcome.requests} requests`);
    if (roomBefore !== CALLS || roomAfter !== CALLS)
      problems.push(`the live room had ${roomBefore} then ${roomAfter} of ${CALLS} calls connected`);

    const lines = [
      `Machine load average (1 min) at the end: ${os.loadavg()[0]?.toFixed(1)} on ${os.availableParallelism()} cores`,
      `Failed-login flood: ${FLOOD_CONNECTIONS} connections from one address, wrong passwords ${FLOOD_RATE === undefined ? "flat out" : `at ${FLOOD_RATE} req/s`} for ${FLOOD_SECONDS} s; a user elsewhere at ${PROBE_RATE} req/s (GET /current); limit ${LIMIT} per ${loadConfig({}).throttleWindowSeconds} s; ${CALLS} live calls${CALLS === 0 ? " (none: BENCH_CALLS=0)" : ""}`,
      "",
      "| Window | Flood requests (req/s) | Flood 401 / 429 / unanswered | User requests, all 200 | User p50 / p99 / max | Media tick lateness p50 / p99 / max (worst thread) |",
      "| ------ | ---------------------- | --------------- | ---------------------- | -------------------- | ------------------------------------------------- |",
      ...windows
        .map((w) =>
          [
            w.name === "before" ? `before (${BEFORE_SECONDS} s)` : `flood (${FLOOD_SECONDS} s)`,
            w.flood ? `${w.flood.requests} (${Math.round(w.flood.requestsPerSecond)})` : "-",
            w.flood
              ? `${w.flood.statusCodes["401"] ?? 0} / ${w.flood.statusCodes["429"] ?? 0} / ${w.flood.errors} (${w.flood.timeouts} timed out)`
              : "-",
            `${w.probe.requests}${w.probe.statusCodes["200"] === w.probe.requests ? "" : " (not all 200)"}`,
            `${w.probe.p50Ms} / ${w.probe.p99Ms} / ${w.probe.maxMs} ms`,
            w.lateness ? formatLateness(w.lateness) : "no calls",
          ].join(" | "),
        )
        .map((row) => `| ${row} |`),
    ];
    console.log(lines.join("\n"));
  } finally {
    floodLoad.stop();
    probeLoad.stop();
    await flood.close();
  }
  reportVerdict(
    problems,
    "the throttle held; every request of the user answered 200; the live room stayed connected",
  );
}

await main();
