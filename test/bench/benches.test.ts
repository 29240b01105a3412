/**
 * Every benchmark under bench/ runs once here, small, so that a guard added anywhere (a limit, a
 * throttle, a refusal) cannot take one out of service unnoticed, as the per-user limit of calls in
 * progress (250) did the room benchmark past 250 participants. Each runs as its own command would
 * (`node --import tsx bench/...`, the environment variables and arguments it takes, at their
 * smallest: bench/README.md, "In the suite"), four at a time, and each must exit as its own verdict
 * says, print its figures, and pass the checks of its own work (every call connected, every
 * request answered, every event delivered...). No figure is judged: a benchmark whose target is a
 * speed (time, sip/calls) exits 1 when its smoke run misses it, and that is checked to match what it
 * printed. Runs the compiled service (startup, faults): `npm run build:service` first
 * (scripts/run-tests.sh does).
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { posix } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { skipWithoutChromium } from "../helpers/browser.js";
import { POSTGRES_SKIP } from "../helpers/databases.js";
import { skipWithout } from "../helpers/sipp.js";
import { postgresBinaries } from "../helpers/throwaway-postgres.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
/** A smoke run still going after this long is stuck: it is killed, with its peers. */
const TIMEOUT_MS = 120_000;
/** Benchmarks run at once (and the coverage check); each waits on real time far more than on the CPU. */
const CONCURRENCY = 3;

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

interface Smoke {
  name: string;
  /** The benchmark's entry, from the repository's root. */
  file: string;
  args?: string[];
  nodeArgs?: string[];
  env: Record<string, string>;
  skip?: () => string | false;
  /** Runs before the others, with none beside it: its own check is on real-time answers under its flood. */
  alone?: boolean;
  check(run: Run): void;
}

/** Runs the benchmark in a process group of its own (killed whole on timeout: SIPp and all). */
function runBench(smoke: Smoke): Promise<Run> {
  // The benchmarks' own settings come from the smoke alone, not from whoever runs the suite.
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith("BENCH_")),
  );
  const child = spawn(
    process.execPath,
    [...(smoke.nodeArgs ?? []), "--import", "tsx", smoke.file, ...(smoke.args ?? [])],
    { cwd: ROOT, env: { ...inherited, ...smoke.env }, detached: true, stdio: ["ignore", "pipe", "pipe"] },
  );
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
    stdout += chunk;
  });
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
    stderr += chunk;
  });
  const timer = setTimeout(() => {
    if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
  }, TIMEOUT_MS);
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/** What to show when a check fails: the end of what the benchmark printed. */
function printed(run: Run): string {
  return `exit ${run.code ?? run.signal}\n--- stdout\n${run.stdout.slice(-4000)}\n--- stderr\n${run.stderr.slice(-4000)}`;
}

/** The run exited 0 and printed every one of `lines` (each a pattern of a whole line of stdout). */
function assertValid(run: Run, lines: RegExp[]): void {
  assert.equal(run.code, 0, printed(run));
  for (const line of lines) assert.match(run.stdout, line, printed(run));
}

const sipp = () => skipWithout("sipp");

/**
 * The smoke runs, the longest first (as they took in the file on a quiet machine): at most
 * CONCURRENCY at once, so that the benchmarks that check real-time behaviour (SIP answers within
 * SIPp's waits, keys typed as RFC 4733 events, echoed RTP) are not starved by the others.
 */
const SMOKES: Smoke[] = [
  {
    name: "faults (bench:faults: kill, take-over, postgres-restart)",
    file: "bench/faults/run.ts",
    env: {
      BENCH_ROUNDS: "1",
      BENCH_STORE: "sqlite",
      BENCH_WRITERS: "2",
      BENCH_WRITES: "20",
      BENCH_ROOMS: "1",
      BENCH_CALLS_PER_ROOM: "1",
      // One kill of the busier of two instances, each with a conference; a 2 s lease.
      BENCH_TAKE_OVER_ROUNDS: "1",
      BENCH_INSTANCES: "2",
      BENCH_ROOMS_PER_INSTANCE: "1",
      BENCH_LEASE_SECONDS: "2",
      BENCH_HANG_UP_SECONDS: "3",
      BENCH_OUTAGE_SECONDS: "5",
    },
    skip: () => sipp() || POSTGRES_SKIP || (postgresBinaries() === null && "PostgreSQL is not installed"),
    check: (run) =>
      assertValid(run, [
        // Store, round, acknowledged, cut, lost, rooms taken over, called back once and connected,
        // restart ms, first ring ms, serves after.
        /^sqlite +1 +\d{2,} +\d+ +0 +1\/1 +1\/1 +[1-9]\d* +[1-9]\d* +yes$/m,
        // Round, killed, spread, connected at the kill, taken over, first ring, all connected, called
        // back (as many as were connected), double calls, ended, writes read back, cut, lost, taken
        // over by.
        /^\| 1 \| instance-\d \| \d \/ \d \| ([1-9]) \| [1-9]\d* \| [1-9]\d* \| [1-9]\d* \| \1 \| 0 \| 0 \| [1-9]\d* \| \d+ \| 0 \| instance-\d \d \|$/m,
        /^double calls 0, conferences ended 0, acknowledged writes lost 0 of [1-9]\d* /m,
        /^API during the outage: [1-9]\d* answered 503, 0 answered 500$/m,
        /^hang-ups and ends made during the outage that landed with their own time: 2 of 2; out of order: 0$/m,
      ]),
  },
  {
    name: "SIP scanners (bench:flood:scanner)",
    file: "bench/flood/scanner.ts",
    // Beside two other smoke runs on a 2-core machine, one of its 20 INVITEs was answered too late
    // for the scanner (19 of 20 taken) in three runs of four; alone it takes all 20.
    alone: true,
    // Six seconds of flood: on a loaded 2-core machine a call took up to 4 s to be answered, and
    // within 3 s the scanners' INVITEs that had filled their places were not all answered yet.
    env: {
      BENCH_BEFORE_SECONDS: "1",
      BENCH_FLOOD_SECONDS: "6",
      BENCH_WINDOW_SECONDS: "6",
      BENCH_AFTER_SECONDS: "1",
      BENCH_SCANNER_SOURCES: "2",
    },
    skip: sipp,
    check: (run) => {
      assertValid(run, [
        // Every dial-in of each window in the room (one every 3 s: two in the 6 s flood).
        /^\| before \| [\d.]+ \| ([1-9]\d*) \/ \1 \|/m,
        /^\| flood 1 \| [\d.]+ \| ([1-9]\d*) \/ \1 \|/m,
        /^\| after \| [\d.]+ \| ([1-9]\d*) \/ \1 \|/m,
        /^scanners, in all: OPTIONS [1-9]\d*: /m,
      ]);
      assert.doesNotMatch(run.stdout, /INVALID RUN/, printed(run));
    },
  },
  {
    name: "fuzzing (bench:fuzz), the targets test/fuzz leaves out",
    file: "bench/fuzz/run.ts",
    args: ["1", "--seed", "20", "--only", "sip-tls,srtp,api-json", "--parallel", "--settle", "0"],
    env: {},
    check: (run) =>
      assertValid(run, [
        /^\| sip-tls \| 1 \| [1-9]\d* \|/m,
        /^\| srtp \| 1 \| [1-9]\d* \|/m,
        /^\| api-json \| 1 \| [1-9]\d* \|/m,
        /^PASSED$/m,
      ]),
  },
  {
    name: "INVITE flood (bench:flood:sip)",
    file: "bench/flood/sip.ts",
    env: { BENCH_BEFORE_SECONDS: "1", BENCH_FLOOD_SECONDS: "1", BENCH_FLOOD_RATE: "500" },
    skip: sipp,
    check: (run) => {
      assertValid(run, [
        /^\| before \| 1 \| [1-9]\d* \/ \d+ \|/m,
        /^\| flood \| 1 \| [1-9]\d* \/ \d+ \|/m,
        /^flooder \(SIPp's counts\): [1-9]\d* INVITEs sent/m,
      ]);
      assert.doesNotMatch(run.stdout, /INVALID RUN/, printed(run));
    },
  },
  {
    name: "WebRTC libraries (bench:webrtc)",
    file: "bench/webrtc/libraries.ts",
    // werift, the library chosen: node-datachannel aborted its process once in about 15 runs.
    env: { BENCH_SECONDS: "2", BENCH_PEERS: "1", BENCH_WARM_UP_SECONDS: "0", BENCH_LIBRARIES: "werift" },
    skip: skipWithoutChromium,
    // It exits 1 unless every call heard its tone both ways.
    check: (run) =>
      assertValid(run, [
        /^werift 1 call\(s\): connect→audio ms browser→node \d+, node→browser \d+, both \(worst\) \d+; CPU /m,
        /^heard both ways: every call$/m,
      ]),
  },
  {
    name: "browser participants (bench:browsers)",
    file: "bench/webrtc/participants.ts",
    // The browsers' room alone: the phones' is the room benchmark's, smoke-run above.
    env: { BENCH_BROWSERS: "1", BENCH_SECONDS: "1", BENCH_WARM_UP_SECONDS: "0", BENCH_ROOMS: "browsers" },
    skip: () => sipp() || skipWithoutChromium(),
    // It exits 1 unless every leg stayed connected and was heard, and every page heard the room.
    check: (run) =>
      assertValid(run, [
        // browser, offer sent, answer, in the room, page hears, room hears, both ways: every one reached.
        /^\| +1 \| +\d+ \| +\d+ \| +\d+ \| +\d+ \| +\d+ \| +\d+ \|$/m,
        /^worst join: \d+ ms; goal \(under 2000 ms\): (met|MISSED)$/m,
        // room, participants, connected at the window's start and end, 1 kHz legs talking, pages hearing.
        /^\| +browsers: 1 \+ room tone phone \| +2 \| +2 \| +2 \| +1\/1 \| +1\/1 \|/m,
        /^valid: every leg connected and in its room for the whole window/m,
      ]),
  },
  {
    name: "event streams (bench:flood:streams)",
    file: "bench/flood/api-streams.ts",
    nodeArgs: ["--expose-gc"],
    env: { BENCH_SECONDS: "1", BENCH_CALLS: "2", BENCH_USERS: "2", BENCH_STREAMS_PER_USER: "2" },
    skip: sipp,
    check: (run) =>
      assertValid(run, [
        /^Event streams: 4 open \(2 users x 2\)/m,
        /^Events delivered: 20 of 20; /m,
        /^every stream opened and got every event of its user; every request of the user answered 200$/m,
      ]),
  },
  {
    name: "failed-login flood (bench:flood:logins)",
    file: "bench/flood/api-logins.ts",
    // 50 wrong passwords a second: the throttle's limit (10) is reached at once, and the passwords
    // checked (scrypt, slow on a loaded machine) are answered well within the 4 s.
    env: {
      BENCH_BEFORE_SECONDS: "1",
      BENCH_FLOOD_SECONDS: "4",
      BENCH_CALLS: "2",
      BENCH_FLOOD_CONNECTIONS: "20",
      BENCH_FLOOD_RATE: "50",
    },
    skip: sipp,
    check: (run) =>
      assertValid(run, [
        /^\| before \(1 s\) \| - \| - \| [1-9]\d* \|/m,
        /^\| flood \(4 s\) \| [1-9]\d* \(\d+\) \| 10 \/ [1-9]\d* \/ 0 /m,
        /^the throttle held; every request of the user answered 200; the live room stayed connected$/m,
      ]),
  },
  {
    name: "api (bench:api)",
    file: "bench/api/run.ts",
    env: { BENCH_REQUESTS: "100", BENCH_WARMUP_SECONDS: "0", BENCH_CONNECTIONS: "2" },
    check: (run) =>
      assertValid(run, [
        /^\| ceiling: bare Fastify GET +\| +[1-9]\d* \|/m,
        /^\| GET conference +\| +[1-9]\d* \|/m,
        /^\| GET attendees \(10\) +\| +[1-9]\d* \|/m,
        /^\| GET conference, JSON +\| +[1-9]\d* \|/m,
        /^\| GET attendees \(10\), JSON +\| +[1-9]\d* \|/m,
        /^GET conference JSON \/ XML req\/s: \d+\.\d %/m,
        /^\| POST attendee +\| +[1-9]\d* \|/m,
        /^every request answered 2xx$/m,
      ]),
  },
  {
    name: "conference media (bench/media/room.ts)",
    file: "bench/media/room.ts",
    env: {
      BENCH_PARTICIPANTS: "10",
      BENCH_CODECS: "PCMA",
      BENCH_TALKERS: "2",
      BENCH_SECONDS: "1",
      BENCH_WARM_UP_SECONDS: "0",
    },
    skip: sipp,
    check: (run) =>
      assertValid(run, [
        /^per-user call limits set by the bench to the participant count/m,
        // participants, codec, talkers, media threads, SIPp processes (one per talker's place, one for
        // the listeners), answered, connected at start and at end, talkers heard, ticks.
        /^\| +10 \| +PCMA \| +2 \| +\d+ \| +3 \| +10 \| +10 \| +10 \| +2\/2 \| +[1-9]\d* \|/m,
        /^valid: every leg connected and in its room for the whole window, receiving audio, every talker heard and every listener silent/m,
      ]),
  },
  {
    name: "dial-in relay (bench:relay)",
    file: "bench/dial-in/relay.ts",
    env: { BENCH_CALLS: "1", BENCH_SECONDS: "1" },
    skip: () => sipp() || skipWithout("tshark"),
    check: (run) =>
      assertValid(run, [
        /^\| +1 \| +\d+ \| bridgeline \| caller→B +\| +[1-9]\d* \| +\d+\.\d\d \|/m,
        /^\| +1 \| +\d+ \| bridgeline \| B→caller +\| +[1-9]\d* \| +\d+\.\d\d \|/m,
      ]),
  },
  {
    name: "call setup (bench:sip, second half)",
    file: "bench/sip/calls.ts",
    env: { BENCH_RATES: "10", BENCH_SECONDS: "0.5" },
    skip: sipp,
    check: (run) => {
      // 5 calls offered, 5 answered, 0 failed, SIPp exit 0: every call followed its script.
      assert.match(run.stdout, /^ +10 +5 +5 +0 +[\d.]+ +[\d.]+ +[\d.]+ +0\b/m, printed(run));
      const best =
        /^highest sustained rate with zero failures: (\d+) call setups\/s \(target >= 100\)$/m.exec(
          run.stdout,
        )?.[1];
      assert.ok(best !== undefined, printed(run));
      assert.equal(run.code, Number(best) >= 100 ? 0 : 1, printed(run));
    },
  },
  {
    name: "start-up (bench:startup)",
    file: "bench/startup/run.ts",
    // The compiled service, what `npm start` runs; the sources through tsx are every other bench here.
    env: { BENCH_MODES: "compiled", BENCH_RUNS: "1", BENCH_EARLY_SECONDS: "0", BENCH_IDLE_SECONDS: "0" },
    check: (run) =>
      assertValid(run, [
        /^\| compiled \| first \| [1-9]\d* \| [1-9]\d* \|/m,
        /^\| compiled \| restart: median \(min-max\) \| [1-9]\d* \|/m,
      ]),
  },
  {
    name: "codecs per 20 ms frame (bench/media/codecs.ts)",
    file: "bench/media/codecs.ts",
    env: { BENCH_FRAMES: "20", BENCH_ROUNDS: "1" },
    check: (run) =>
      assertValid(run, [
        /^\| G\.711 μ-law \(PCMU\) \| 8000 \| [\d.]+ \([\d.]+\) \| [\d.]+ \([\d.]+\) \|/m,
        /^\| G\.722 \| 16000 \| [\d.]+ \([\d.]+\) \| [\d.]+ \([\d.]+\) \|/m,
      ]),
  },
  {
    name: "Opus libraries (bench/media/opus-libraries.ts)",
    file: "bench/media/opus-libraries.ts",
    env: { BENCH_FRAMES: "20", BENCH_ROUNDS: "1" },
    check: (run) => assertValid(run, [/^\| @evan\/opus wasm, via codec\/opus\.ts \| 5 \| wideband \| 32 /m]),
  },
  {
    name: "sample-rate conversion (bench/media/resample.ts)",
    file: "bench/media/resample.ts",
    env: { BENCH_FRAMES: "20", BENCH_ROUNDS: "1" },
    check: (run) =>
      assertValid(run, [
        /^\| Bridgeline \(polyphase FIR, JS\) \| 16 → 8 kHz \| [\d.]+ \| [\d.]+ \| -0\.\d\d \| -(69|7\d)\.\d \| [\d.]+ \| yes \|/m,
        /^\| Bridgeline \(polyphase FIR, JS\) \| 48 → 16 kHz \| /m,
      ]),
  },
  {
    name: "mixer (bench/media/mixer.ts)",
    file: "bench/media/mixer.ts",
    env: { BENCH_SIZES: "10", BENCH_SECONDS: "0.5" },
    // participants, rate, talking, mixed at most, ticks, own and shared frames per tick.
    check: (run) =>
      assertValid(run, [
        /^\| 10 \| 8000 \| 2 \| 3 \| [1-9]\d* \| 2\.00 \| 8\.00 \|/m,
        /^\| 10 \| 16000 \| 2 \| 3 \| [1-9]\d* \| 2\.00 \| 8\.00 \|/m,
        /^\| 10 \| 16000 \| 10 \| 3 \| [1-9]\d* \| 3\.00 \| 7\.00 \|/m,
        /^\| 10 \| 16000 \| 10 \| all \| [1-9]\d* \| 10\.00 \| 0\.00 \|/m,
      ]),
  },
  {
    name: "SIP parsing (bench:sip, first half)",
    file: "bench/sip/parse.ts",
    env: { BENCH_SECONDS: "0.1", BENCH_ROUNDS: "1" },
    check: (run) =>
      assertValid(run, [
        /^typical INVITE with SDP \(\d+ B\) +parse +[1-9][\d,]*\/s +parse\+serialize +[1-9][\d,]*\/s$/m,
        /^valid RFC 4475 messages \(\d+\) +parse +[1-9][\d,]*\/s +parse\+serialize +[1-9][\d,]*\/s$/m,
      ]),
  },
  {
    name: "SRTP (bench:srtp)",
    file: "bench/media/srtp.ts",
    env: { BENCH_PACKETS: "1000", BENCH_ROUNDS: "1", BENCH_WARM_UP_PACKETS: "1000" },
    check: (run) => assertValid(run, [/^\| AES_CM_128_HMAC_SHA1_80 \| \d+\.\d\d \| \d+\.\d\d \| 1\.00 \|/m]),
  },
  {
    name: "time expressions (bench:time)",
    file: "bench/time/run.ts",
    env: { BENCH_WARMUP_ROUNDS: "0", BENCH_ROUNDS: "1" },
    check: (run) => {
      assert.match(
        run.stdout,
        /^time expressions: \d+ .*, 0 warm-up rounds, 1 measured reads each$/m,
        printed(run),
      );
      assert.match(run.stdout, /^median +\d+\.\d{3} ms /m, printed(run));
      const verdict = /^target: median under 0\.5 ms: (met|MISSED)$/m.exec(run.stdout)?.[1];
      assert.ok(verdict !== undefined, printed(run));
      assert.equal(run.code, verdict === "met" ? 0 : 1, printed(run));
    },
  },
];

/**
 * The benchmarks: every file a `bench:*` script runs, and every file under bench/ that no other file
 * there imports or starts (those are their parts).
 */
function benchEntries(): string[] {
  const scripts = (
    JSON.parse(readFileSync(`${ROOT}package.json`, "utf8")) as { scripts: Record<string, string> }
  ).scripts;
  const scripted = Object.entries(scripts)
    .filter(([name]) => name.startsWith("bench:"))
    .flatMap(([, command]) => command.match(/bench\/[\w/.-]+\.ts/g) ?? []);
  const files = (readdirSync(`${ROOT}bench`, { recursive: true }) as string[])
    .filter((file) => file.endsWith(".ts"))
    .map((file) => `bench/${file}`);
  const parts = new Set<string>();
  for (const file of files) {
    const text = readFileSync(`${ROOT}${file}`, "utf8");
    // Any quoted module path: an import, or a module another process runs (new URL("service.ts" ...).
    for (const [, target] of text.matchAll(/"(\.{0,2}\/?[\w/.-]+\.[jt]s)"/g))
      parts.add(posix.join(posix.dirname(file), target as string).replace(/\.js$/, ".ts"));
  }
  return [...new Set([...scripted, ...files.filter((file) => !parts.has(file))])].sort();
}

describe("the benchmarks that run alone, once, small", { concurrency: 1 }, () => {
  for (const smoke of SMOKES.filter((each) => each.alone === true)) {
    it(smoke.name, { skip: smoke.skip?.() ?? false }, async () => {
      smoke.check(await runBench(smoke));
    });
  }
});

describe("every other benchmark, once, small", { concurrency: CONCURRENCY }, () => {
  it("has a smoke run here for every benchmark", () => {
    assert.deepEqual([...new Set(SMOKES.map((smoke) => smoke.file))].sort(), benchEntries());
  });

  for (const smoke of SMOKES.filter((each) => each.alone !== true)) {
    it(smoke.name, { skip: smoke.skip?.() ?? false }, async () => {
      smoke.check(await runBench(smoke));
    });
  }
});
