/**
 * The API floods' load generators (bench/flood/api-logins.ts, api-streams.ts): autocannon in child
 * processes of their own, so that their CPU is not the service's event loop. `LoadGenerator.start`
 * forks this file, which loads autocannon alone (not the service: a copy of it in every load
 * generator would cost a second of CPU at each start).
 */
import { type ChildProcess, fork } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import autocannon from "autocannon";

/** Forking this file with this argument makes the child a load generator. */
const LOAD_GENERATOR_ARG = "--api-flood-load";

export interface LoadJob {
  url: string;
  method?: "GET" | "POST";
  headers: Record<string, string>;
  body?: string;
  connections: number;
  durationSeconds: number;
  /** Requests per second over all connections; flat out when absent. */
  overallRate?: number;
}

export interface LoadOutcome {
  requests: number;
  statusCodes: Record<string, number>;
  /** Requests that got no answer: socket errors, and (of those) timeouts (autocannon's 10 s). */
  errors: number;
  timeouts: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  requestsPerSecond: number;
}

/** A load generator in a child process of its own; `run` sends it one job at a time. */
export class LoadGenerator {
  readonly #child: ChildProcess;
  private constructor(child: ChildProcess) {
    this.#child = child;
  }

  static async start(): Promise<LoadGenerator> {
    const child = fork(fileURLToPath(import.meta.url), [LOAD_GENERATOR_ARG]);
    await once(child, "message"); // ready: its start-up (loading TypeScript) is over
    return new LoadGenerator(child);
  }

  get pid(): number | undefined {
    return this.#child.pid;
  }

  run(job: LoadJob): Promise<LoadOutcome> {
    return new Promise((resolve, reject) => {
      const onExit = (code: number | null) => reject(new Error(`load generator exited with ${code}`));
      this.#child.once("exit", onExit);
      this.#child.once("message", (outcome) => {
        this.#child.off("exit", onExit);
        resolve(outcome as LoadOutcome);
      });
      this.#child.send(job);
    });
  }

  stop(): void {
    this.#child.kill();
  }
}

async function runJob(job: LoadJob): Promise<LoadOutcome> {
  const result = await autocannon({
    url: job.url,
    method: job.method ?? "GET",
    headers: job.headers,
    body: job.body,
    connections: job.connections,
    duration: job.durationSeconds,
    ...(job.overallRate !== undefined && { overallRate: job.overallRate }),
  });
  const statusCodes: Record<string, number> = {};
  for (const [code, stats] of Object.entries(result.statusCodeStats ?? {}))
    statusCodes[code] = stats.count ?? 0;
  return {
    requests: result.requests.total,
    statusCodes,
    errors: result.errors,
    timeouts: result.timeouts,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    maxMs: result.latency.max,
    requestsPerSecond: result.requests.average,
  };
}

if (process.argv.includes(LOAD_GENERATOR_ARG)) {
  process.on("message", (job: LoadJob) => {
    runJob(job).then(
      (outcome) => process.send?.(outcome),
      (error: unknown) => {
        process.stderr.write(`load generator failed: ${String(error)}\n`);
        process.exit(1);
      },
    );
  });
  process.send?.("ready");
}
