/**
 * The fuzzed service in a child process of its own (bench/fuzz/service.ts, configured through the
 * environment as an operator would): its ports from its start-up log line, every log line scanned
 * for errors, its standard error for the lines the service writes on an unhandled rejection or an
 * uncaught exception, and its heap after a forced collection.
 */
import { type ChildProcess, fork } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";

export interface ServicePorts {
  readonly httpPort: number;
  readonly sipPort: number;
  readonly sipTlsPort: number;
}

export interface Heap {
  readonly heapUsed: number;
  readonly rss: number;
  /** Bytes used in each V8 heap space (code, old objects, ...). */
  readonly spaces: Readonly<Record<string, number>>;
}

export interface ServiceSettings {
  readonly accessNumber: string;
  readonly mediaThreads: number;
  /** Extra environment (BRIDGELINE_*) for the service. */
  readonly env?: Record<string, string>;
  /** Fills the fresh data directory before the service starts (a store and a certificate made once). */
  readonly prepareDataDir?: (dataDir: string) => Promise<void>;
}

/**
 * The module the child runs, in the form this one runs in: service.ts under tsx, or service.js (the
 * suite's build, transpiled once) under plain node, without tsx's loader.
 */
const SERVICE_MODULE = new URL(
  import.meta.url.endsWith(".ts") ? "service.ts" : "service.js",
  import.meta.url,
);

/** Lines of the service's standard error that mean what the service did not handle. */
const UNHANDLED = /nothing handled it|fatal error, stopping/;
/** pino's error and fatal levels. */
const ERROR_LEVEL = 50;

export class ServiceProcess {
  exit: { code: number | null; signal: string | null } | undefined;
  readonly #heapWaiters: Array<(heap: Heap) => void> = [];

  private constructor(
    readonly child: ChildProcess,
    readonly dataDir: string,
    readonly ports: ServicePorts,
    /** Log lines at error level or above, and unhandled failures from standard error, in order. */
    readonly problems: string[],
    /** Log lines by level name. */
    readonly logLines: Map<string, number>,
    /** The last 20,000 characters of its standard error. */
    private readonly stderr: { stderr: string },
  ) {}

  get stderrTail(): string {
    return this.stderr.stderr;
  }

  static async start(settings: ServiceSettings): Promise<ServiceProcess> {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "bridgeline-fuzz-"));
    await settings.prepareDataDir?.(dataDir);
    const rtpMin = 30_000 + 2_000 * Math.floor(Math.random() * 15);
    const module = SERVICE_MODULE;
    const child = fork(module, [], {
      execArgv: module.pathname.endsWith(".ts") ? ["--expose-gc", "--import", "tsx"] : ["--expose-gc"],
      stdio: ["ignore", "pipe", "pipe", "ipc"],
      env: {
        ...process.env,
        BRIDGELINE_DATA_DIR: dataDir,
        BRIDGELINE_HOST: "127.0.0.1",
        BRIDGELINE_HTTPS_PORT: "0",
        BRIDGELINE_HTTP_PORT: "0",
        BRIDGELINE_SIP_ADDRESS: "127.0.0.1",
        BRIDGELINE_SIP_PORT: "0",
        BRIDGELINE_RTP_PORTS: `${rtpMin}-${rtpMin + 1_999}`,
        BRIDGELINE_ACCESS_NUMBERS: settings.accessNumber,
        BRIDGELINE_MEDIA_THREADS: String(settings.mediaThreads),
        BRIDGELINE_LOG_LEVEL: "info",
        // The fuzzer signs up and fails logins far more than a person: the throttles are not its target.
        BRIDGELINE_FAILED_LOGIN_LIMIT: "1000000",
        BRIDGELINE_SIGNUP_LIMIT: "1000000",
        // Nor are the per-source SIP request rate (the inputs come from one address, far above it)
        // and the wrong-PIN limit (calls the SDP inputs set up never type one).
        BRIDGELINE_SIP_REQUEST_RATE: "1000000",
        BRIDGELINE_WRONG_PIN_LIMIT: "1000000",
        BRIDGELINE_INSTANCE_ID: `fuzz:${dataDir}`,
        ...settings.env,
      },
    });
    const pending = { stderr: "" };
    const service = await new Promise<ServiceProcess>((resolve, reject) => {
      let started: ServiceProcess | undefined;
      const problems: string[] = [];
      const logLines = new Map<string, number>();
      createInterface({ input: child.stdout as NodeJS.ReadableStream }).on("line", (line) => {
        if (process.env.FUZZ_DEBUG) process.stderr.write(`service: ${line}\n`);
        let entry: { level?: number; msg?: string; err?: { message?: string; stack?: string } };
        try {
          entry = JSON.parse(line);
        } catch {
          problems.push(`not a log line: ${line.slice(0, 300)}`);
          return;
        }
        const level = entry.level ?? 0;
        const name = level >= 60 ? "fatal" : level >= 50 ? "error" : level >= 40 ? "warn" : "info";
        logLines.set(name, (logLines.get(name) ?? 0) + 1);
        if (level >= ERROR_LEVEL)
          problems.push(`${name}: ${entry.msg} ${entry.err?.stack ?? entry.err?.message ?? ""}`.trim());
        if (entry.msg === "bridgeline started" && started === undefined) {
          const ports = entry as unknown as ServicePorts;
          started = new ServiceProcess(
            child,
            dataDir,
            { httpPort: ports.httpPort, sipPort: ports.sipPort, sipTlsPort: ports.sipTlsPort },
            problems,
            logLines,
            pending,
          );
          resolve(started);
        }
      });
      // The stack under an unhandled failure's line is kept with it (a dozen frames).
      let stackLines = 0;
      createInterface({ input: child.stderr as NodeJS.ReadableStream }).on("line", (line) => {
        pending.stderr = `${pending.stderr}${line}\n`.slice(-20_000);
        if (UNHANDLED.test(line)) {
          problems.push(`stderr: ${line}`);
          stackLines = 12;
        } else if (stackLines > 0 && /^\s+at /.test(line)) {
          stackLines--;
          problems[problems.length - 1] += `\n${line}`;
        } else stackLines = 0;
      });
      child.once("exit", (code, signal) => {
        if (started === undefined)
          reject(new Error(`the service exited (${code ?? signal}) before it started:\n${pending.stderr}`));
        else started.exit = { code, signal };
      });
    });
    child.on("message", (message: { type?: string } & Heap) => {
      if (message.type === "heap") service.#heapWaiters.shift()?.(message);
    });
    return service;
  }

  get alive(): boolean {
    return this.exit === undefined;
  }

  /** The heap after two full collections, and the resident set. */
  async heap(snapshotFile?: string): Promise<Heap> {
    const heap = new Promise<Heap>((resolve) => this.#heapWaiters.push(resolve));
    this.child.send({ type: "heap", file: snapshotFile });
    return heap;
  }

  /** Stops it as an operator does (SIGTERM); resolves with how it exited. */
  async stop(): Promise<{ code: number | null; signal: string | null }> {
    if (this.exit === undefined) {
      const exited = new Promise((resolve) => this.child.once("exit", resolve));
      this.child.kill("SIGTERM");
      const forced = setTimeout(() => this.child.kill("SIGKILL"), 20_000);
      await exited;
      clearTimeout(forced);
    }
    fs.rmSync(this.dataDir, { recursive: true, force: true });
    return this.exit ?? { code: null, signal: null };
  }
}
