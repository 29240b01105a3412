/**
 * Start-up: `npm run bench:startup`. How long `bridgeline start` takes to be ready to serve and how
 * much memory it holds at idle, over BENCH_RUNS starts (default 5) of each mode in BENCH_MODES
 * (default "compiled,source"):
 * - `compiled`: `node bin/bridgeline.js start`, what `npm start` runs (the JavaScript in dist/, built
 *   by `npm install` or `npm run build`);
 * - `source`: the TypeScript sources through tsx's loader in the same process, as `bin/bridgeline.js`
 *   ran them before the compiled build (kept for comparison).
 *
 * Each mode first starts once on a fresh data directory (the SQLite database created and migrated,
 * the self-signed certificate made), reported on its own as "first", then BENCH_RUNS times on that
 * same directory, as a restart does. Each start is its own process with the service's defaults
 * (SQLite, one media thread per core, log level info) on ports the system picks, measured from the
 * spawn to:
 * - **started**: the "bridgeline started" line on standard output;
 * - **answered**: the first `GET /billing-packages` answered 200 over HTTPS (sent as soon as that
 *   line names the port);
 * - **CPU**: the CPU time the process (all its threads, user and system) had used when it answered,
 *   from /proc/<pid>/stat: what a start costs whatever else the machine is doing, where the times
 *   above grow with the machine's load;
 * - **RSS**: its resident memory (VmRSS, all threads) BENCH_EARLY_SECONDS (default 5) after it
 *   answered and BENCH_IDLE_SECONDS (default 30) after, with no other request made: V8 gives back memory once the process has been
 *   idle a while (its memory reducer), so the first is the start's own and the second the idle
 *   service's; **peak** is the highest it reached (VmHWM).
 * Then SIGTERM, and the next start once it has exited.
 */
import { type ChildProcess, spawn } from "node:child_process";
import fs from "node:fs";
import https from "node:https";
import os from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { procStat } from "../proc.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const IDLE_SECONDS = Number(process.env.BENCH_IDLE_SECONDS ?? 30);
/** The first memory reading, seconds after the answer. */
const EARLY_SECONDS = Number(process.env.BENCH_EARLY_SECONDS ?? 5);
if (!(Number.isInteger(RUNS) && RUNS >= 1 && EARLY_SECONDS >= 0 && IDLE_SECONDS >= EARLY_SECONDS))
  throw new Error(
    `BENCH_RUNS must be 1 or more and 0 <= BENCH_EARLY_SECONDS <= BENCH_IDLE_SECONDS, got ${RUNS}, ${EARLY_SECONDS} and ${IDLE_SECONDS}`,
  );
const MODES = (process.env.BENCH_MODES ?? "compiled,source").split(",");
/** Jiffies per second in /proc/<pid>/stat (USER_HZ, 100 on Linux). */
const CLOCK_TICKS = 100;

/** The arguments to node of each mode, run from the repository's root. */
const COMMANDS: Record<string, string[]> = {
  compiled: ["bin/bridgeline.js", "start"],
  source: [
    "--input-type=module",
    "-e",
    'import { register } from "tsx/esm/api"; register(); const { runCli } = await import("./src/cli.ts"); process.exitCode = await runCli(["start"]);',
  ],
};

interface Start {
  startedMs: number;
  answeredMs: number;
  cpuMs: number;
  rssEarlyMb: number;
  rssIdleMb: number;
  peakMb: number;
}

function cpuMs(pid: number): number {
  const stat = procStat(pid);
  if (stat === null) throw new Error(`process ${pid} is gone`);
  return ((Number(stat.fields[11]) + Number(stat.fields[12])) * 1000) / CLOCK_TICKS;
}

/** A memory figure of /proc/<pid>/status (VmRSS, VmHWM) in MB. */
function memoryMb(pid: number, field: string): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1]) / 1024;
}

function getStatus(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    https
      .get({ host: "127.0.0.1", port, path: "/billing-packages", rejectUnauthorized: false }, (response) => {
        response.resume();
        response.once("end", () => resolve(response.statusCode ?? 0));
      })
      .once("error", reject);
  });
}

function stop(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
    child.once("exit", () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill("SIGTERM");
  });
}

/** Resolves with the HTTPS port and the time since `begin` once the child logs that it started. */
function started(
  child: ChildProcess,
  begin: number,
  stderr: () => string,
): Promise<{ port: number; ms: number }> {
  return new Promise((resolve, reject) => {
    let buffered = "";
    const timer = setTimeout(() => reject(new Error(`not started after 60 s\n${stderr()}`)), 60_000);
    child.stdout?.on("data", (chunk) => {
      buffered += String(chunk);
      for (let end = buffered.indexOf("\n"); end !== -1; end = buffered.indexOf("\n")) {
        const line = buffered.slice(0, end);
        buffered = buffered.slice(end + 1);
        if (!line.includes('"bridgeline started"')) continue;
        clearTimeout(timer);
        resolve({
          port: (JSON.parse(line) as { httpsPort: number }).httpsPort,
          ms: performance.now() - begin,
        });
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code} before it started\n${stderr()}`));
    });
  });
}

async function startOnce(mode: string, dataDir: string): Promise<Start> {
  const begin = performance.now();
  const child = spawn(process.execPath, COMMANDS[mode] as string[], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      BRIDGELINE_DATA_DIR: dataDir,
      BRIDGELINE_HOST: "127.0.0.1",
      BRIDGELINE_HTTPS_PORT: "0",
      BRIDGELINE_SIP_ADDRESS: "127.0.0.1",
      BRIDGELINE_SIP_PORT: "0",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr?.on("data", (chunk) => {
    stderr += String(chunk);
  });
  try {
    const { port, ms: startedMs } = await started(child, begin, () => stderr);
    const status = await getStatus(port);
    const answeredMs = performance.now() - begin;
    const cpu = cpuMs(child.pid as number);
    if (status !== 200) throw new Error(`GET /billing-packages answered ${status}`);
    const pid = child.pid as number;
    await sleep(EARLY_SECONDS * 1000);
    const rssEarlyMb = memoryMb(pid, "VmRSS");
    await sleep((IDLE_SECONDS - EARLY_SECONDS) * 1000);
    return {
      startedMs,
      answeredMs,
      cpuMs: cpu,
      rssEarlyMb,
      rssIdleMb: memoryMb(pid, "VmRSS"),
      peakMb: memoryMb(pid, "VmHWM"),
    };
  } catch (error) {
    throw new Error(`${mode}: ${(error as Error).message}`);
  } finally {
    await stop(child);
  }
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

/** The median and the range, e.g. "812 (790-1020)". */
function summary(values: number[], digits: number): string {
  const fixed = (value: number) => value.toFixed(digits);
  return values.length === 1
    ? fixed(values[0] as number)
    : `${fixed(median(values))} (${fixed(Math.min(...values))}-${fixed(Math.max(...values))})`;
}

function row(mode: string, label: string, starts: Start[]): string {
  const column = (pick: (start: Start) => number, digits: number) => summary(starts.map(pick), digits);
  const columns = [
    column((s) => s.startedMs, 0),
    column((s) => s.answeredMs, 0),
    column((s) => s.cpuMs, 0),
    column((s) => s.rssEarlyMb, 1),
    column((s) => s.rssIdleMb, 1),
    column((s) => s.peakMb, 1),
  ];
  return `| ${mode} | ${label} | ${columns.join(" | ")} |`;
}

const loads = os
  .loadavg()
  .map((load) => load.toFixed(2))
  .join(" ");
console.log(
  `Node ${process.version}, ${os.availableParallelism()} cores, load average ${loads}; ${RUNS} restarts a mode`,
);
console.log(
  `| mode | start | started ms | answered ms | CPU ms | RSS ${EARLY_SECONDS} s MB | RSS ${IDLE_SECONDS} s MB | peak MB |`,
);
console.log("| ---- | ----- | ---------: | ----------: | -----: | ---------: | ----------: | ------: |");
for (const mode of MODES) {
  if (!COMMANDS[mode]) throw new Error(`unknown mode "${mode}": one of ${Object.keys(COMMANDS).join(", ")}`);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `bridgeline-startup-${mode}-`));
  try {
    console.log(row(mode, "first", [await startOnce(mode, dataDir)]));
    const starts: Start[] = [];
    for (let run = 0; run < RUNS; run++) starts.push(await startOnce(mode, dataDir));
    console.log(row(mode, "restart: median (min-max)", starts));
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}
