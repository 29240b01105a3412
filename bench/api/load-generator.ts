/**
 * The API benchmark's load generator (bench/api/run.ts; bench/media/room.ts's API load): autocannon
 * in a child process of its own, so that the load has its own event loop. `startLoadGenerator` forks
 * this file, which loads autocannon alone (not the service: a second copy of it would cost a second of
 * CPU at every start); `runInLoadGenerator` sends it one job at a time.
 */
import { type ChildProcess, fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import autocannon from "autocannon";

export const CONNECTIONS = 100;
export const WARMUP_SECONDS = 2;
/** Forking this file with this argument makes the child a load generator. */
const LOAD_GENERATOR_ARG = "--load-generator";

/** One scenario, as sent to the load generator. */
export interface LoadJob {
  /** Unmeasured run before the measured one, seconds (default WARMUP_SECONDS; 0 for none). */
  warmUpSeconds?: number;
  /** Connections of the load, each one request at a time (default CONNECTIONS). */
  connections?: number;
  url: string;
  method: "GET" | "POST";
  headers: Record<string, string>;
  body?: string;
  durationSeconds: number;
  /** Requests the measured run makes, in place of `durationSeconds` (and of the warm-up's duration). */
  requests?: number;
  /** For POST: the collection paths to cycle through, each taking at most `requestsPerPath`. */
  cycle?: { paths: string[]; requestsPerPath: number };
}

export interface LoadOutcome {
  requestsPerSecond: number;
  /** Requests answered over warm-up and measured run. */
  answered: number;
  p50Ms: number;
  p99Ms: number;
  /** Counted over warm-up and measured run: every response must succeed. */
  non2xx: number;
  /** Socket errors and timeouts, over warm-up and measured run. */
  errors: number;
  statusCodes: Record<string, number>;
  /** True when the POST scenario issued more requests than its conferences can hold. */
  cycleExhausted: boolean;
  /** When the measured run (after the warm-up) started and finished, in epoch milliseconds. */
  measuredFrom: number;
  measuredTo: number;
}

async function runLoadJob(job: LoadJob): Promise<LoadOutcome> {
  let built = 0;
  const capacity = job.cycle ? job.cycle.paths.length * job.cycle.requestsPerPath : 0;
  // autocannon builds a request before each send (and one per connection at start), so counting
  // builds never under-counts what a conference receives.
  const requests: autocannon.Request[] | undefined = job.cycle && [
    {
      setupRequest: (request) => {
        const { paths, requestsPerPath } = job.cycle as NonNullable<LoadJob["cycle"]>;
        const index = Math.min(Math.floor(built / requestsPerPath), paths.length - 1);
        built += 1;
        return { ...request, path: paths[index] };
      },
    },
  ];
  const options = {
    url: job.url,
    method: job.method,
    headers: job.headers,
    body: job.body,
    connections: job.connections ?? CONNECTIONS,
    requests,
  };
  const warmUpSeconds = job.warmUpSeconds ?? WARMUP_SECONDS;
  const warmup = warmUpSeconds > 0 ? await autocannon({ ...options, duration: warmUpSeconds }) : undefined;
  const measured = await autocannon({
    ...options,
    ...(job.requests === undefined ? { duration: job.durationSeconds } : { amount: job.requests }),
  });
  const statusCodes: Record<string, number> = {};
  for (const result of warmup === undefined ? [measured] : [warmup, measured]) {
    for (const [code, stats] of Object.entries(result.statusCodeStats ?? {})) {
      statusCodes[code] = (statusCodes[code] ?? 0) + (stats.count ?? 0);
    }
  }
  return {
    requestsPerSecond: measured.requests.average,
    answered: (warmup?.requests.total ?? 0) + measured.requests.total,
    p50Ms: measured.latency.p50,
    p99Ms: measured.latency.p99,
    non2xx: (warmup?.non2xx ?? 0) + measured.non2xx,
    errors: (warmup?.errors ?? 0) + measured.errors,
    statusCodes,
    cycleExhausted: job.cycle !== undefined && built > capacity,
    measuredFrom: new Date(measured.start).getTime(),
    measuredTo: new Date(measured.finish).getTime(),
  };
}

/** A load generator: this file in a child process; end it with `disconnect()` or `kill()`. */
export function startLoadGenerator(): ChildProcess {
  return fork(fileURLToPath(import.meta.url), [LOAD_GENERATOR_ARG]);
}

/** Sends one job to the load generator and waits for its outcome. */
export function runInLoadGenerator(child: ChildProcess, job: LoadJob): Promise<LoadOutcome> {
  return new Promise((resolve, reject) => {
    const onExit = (code: number | null) => reject(new Error(`load generator exited with ${code}`));
    child.once("exit", onExit);
    child.once("message", (outcome) => {
      child.off("exit", onExit);
      resolve(outcome as LoadOutcome);
    });
    child.send(job);
  });
}

if (process.argv.includes(LOAD_GENERATOR_ARG)) {
  process.on("message", (job: LoadJob) => {
    runLoadJob(job).then(
      (outcome) => process.send?.(outcome),
      (error: unknown) => {
        process.stderr.write(`load generator failed: ${String(error)}\n`);
        process.exit(1);
      },
    );
  });
}
