/**
 * Runs SIPp (https://sipp.sourceforge.net) as a child process on loopback for end-to-end SIP tests:
 * free ports for SIP, media and control, a temporary directory for its logs, and its exit code
 * (0 = every call followed the scenario, 1 = some call failed, 255 = fatal, 254 = bind error).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createSocket } from "node:dgram";
import { once } from "node:events";
import {
  accessSync,
  constants,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Call, CallEnd, CallFailure } from "../../src/telephony/call.js";

export const SCENARIO_DIR = fileURLToPath(new URL("../fixtures/sipp/", import.meta.url));

/** The absolute path of `name` on PATH, or null. */
export function findBinary(name: string): string | null {
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {}
  }
  return null;
}

/**
 * The `skip` option for a test that needs a peer binary: a message when it is missing, false when
 * present. Under CI=true a missing binary is an error: a CI run must not pass by skipping.
 */
export function skipWithout(binary: string): string | false {
  if (findBinary(binary) !== null) return false;
  if (process.env.CI === "true") throw new Error(`${binary} is not installed, and CI=true requires it`);
  const debianPackage: Record<string, string> = {
    sipp: "sip-tester",
    baresip: "baresip-core",
    dnsmasq: "dnsmasq-base",
  };
  return `${binary} is not installed (Debian: apt-get install ${debianPackage[binary] ?? binary})`;
}

const handedOut = new Set<number>();

async function canBindUdp(port: number): Promise<boolean> {
  const socket = createSocket("udp4");
  return new Promise((resolve) => {
    socket.once("error", () => resolve(false));
    socket.bind(port, "127.0.0.1", () => socket.close(() => resolve(true)));
  });
}

async function canBindTcp(port: number): Promise<boolean> {
  const server = createServer();
  return new Promise((resolve) => {
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

/**
 * A port on 127.0.0.1 that is free now for UDP and TCP, together with the `span` ports above it
 * (SIPp binds -mp and -mp+2; baresip listens on its SIP port over UDP and TCP, and TLS on the next).
 * Random in 30000-32767, below the kernel's ephemeral range (32768 up) so that no outgoing
 * connection takes it meanwhile, and so that parallel test processes rarely meet; never the same
 * port twice in one process.
 */
export async function freePorts(span = 0): Promise<number> {
  for (let attempt = 0; attempt < 400; attempt++) {
    const base = 30000 + 2 * Math.floor(Math.random() * ((2767 - span) / 2));
    const ports = Array.from({ length: span + 1 }, (_, i) => base + i);
    if (ports.some((port) => handedOut.has(port))) continue;
    let free = true;
    for (const port of ports) free = free && (await canBindUdp(port)) && (await canBindTcp(port));
    if (!free) continue;
    for (const port of ports) handedOut.add(port);
    return base;
  }
  throw new Error("no free UDP ports found");
}

/**
 * A random window of 200 ports in 20000-29999 for the stack's RTP (the stack skips ports in use, so
 * parallel test processes only cost it a few retries); SIPp and baresip ports come from 30000 up.
 */
export function rtpPortRange(): { min: number; max: number } {
  const min = 20000 + 200 * Math.floor(Math.random() * 49);
  return { min, max: min + 199 };
}

/**
 * Whether process `pid` has a UDP socket bound to 127.0.0.1:port or 0.0.0.0:port (from /proc,
 * without touching it): that process's own, not another test process's that took the port first.
 */
function isUdpPortBoundBy(pid: number, port: number): boolean {
  const hexPort = port.toString(16).toUpperCase().padStart(4, "0");
  const inodes = readFileSync("/proc/net/udp", "utf8")
    .split("\n")
    .map((line) => line.trim().split(/\s+/))
    .filter(([, local]) => local === `0100007F:${hexPort}` || local === `00000000:${hexPort}`)
    .map((fields) => `socket:[${fields[9]}]`);
  if (inodes.length === 0) return false;
  try {
    return readdirSync(`/proc/${pid}/fd`).some((fd) => {
      try {
        return inodes.includes(readlinkSync(`/proc/${pid}/fd/${fd}`));
      } catch {
        return false; // closed meanwhile
      }
    });
  } catch {
    return false; // the process is gone
  }
}

export interface SippOptions {
  /** File name in test/fixtures/sipp, or an absolute path. */
  scenario: string;
  /** UAC scenarios: the host:port to call. UAS scenarios leave it out. */
  remote?: string;
  /**
   * The SIP port to bind, for a peer whose address another peer must know before it starts (an
   * instance listed in a proxy's dispatcher list); default: a free port.
   */
  sipPort?: number;
  /** Total calls (-m); default 1. */
  calls?: number;
  /** Calls per second (-r) for UAC scenarios. */
  rate?: number;
  /** Per-process timeout in seconds (-timeout, failing with -timeout_error); default 20. */
  timeoutSeconds?: number;
  /** Value of a bare <pause/> in ms (-d). */
  pauseMs?: number;
  /** Values for [key] substitutions (-key). */
  keys?: Record<string, string>;
  /** The address it sends from and listens on, SIP and media (-i, -mi); default 127.0.0.1. */
  localAddress?: string;
  /** Further arguments such as ["-rtp_echo"] or ["-lost", "10"]. */
  args?: string[];
  /** For scenarios that play audio: the pcap file that replaces PCAP_FILE in the scenario. */
  pcap?: string;
  /** Log every SIP message to messages.log (read with `messages()`); default true. */
  traceMessages?: boolean;
}

export interface SippResult {
  /** 0 when every call followed the scenario. */
  code: number | null;
  signal: NodeJS.Signals | null;
}

export class Sipp {
  private constructor(
    private readonly process: ChildProcess,
    private readonly dir: string,
    readonly sipPort: number,
    readonly mediaPort: number,
    readonly exited: Promise<SippResult>,
    private readonly output: { text: string },
  ) {}

  /** `sip:<user>@127.0.0.1:<sipPort>`, the URI to give the stack as its trunk. */
  uri(user = "sipp"): string {
    return `sip:${user}@127.0.0.1:${this.sipPort}`;
  }

  /** Starts SIPp and, for UAS scenarios, resolves once its SIP socket is bound. */
  /**
   * Starts it, again on other ports when a port it was given was taken meanwhile (test files run in
   * parallel processes, each choosing ports of its own).
   */
  static async start(options: SippOptions): Promise<Sipp> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await Sipp.startOnce(options);
      } catch (error) {
        if (attempt >= 3 || !/Address already in use|errno = 98/.test(String(error))) throw error;
      }
    }
  }

  private static async startOnce(options: SippOptions): Promise<Sipp> {
    const binary = findBinary("sipp");
    if (binary === null) throw new Error("sipp is not installed");
    const sipPort = options.sipPort ?? (await freePorts());
    const mediaPort = await freePorts(3);
    const controlPort = await freePorts();
    const dir = mkdtempSync(join(tmpdir(), "sipp-"));
    let scenario = options.scenario.startsWith("/") ? options.scenario : join(SCENARIO_DIR, options.scenario);
    if (options.pcap !== undefined) {
      // play_pcap_audio takes a literal path, read when the scenario loads: write a copy with it.
      const template = readFileSync(scenario, "utf8");
      scenario = join(dir, "scenario.xml");
      writeFileSync(scenario, template.replaceAll("PCAP_FILE", options.pcap));
    }
    const args = [
      "-sf",
      scenario,
      "-i",
      options.localAddress ?? "127.0.0.1",
      "-p",
      String(sipPort),
      "-mi",
      options.localAddress ?? "127.0.0.1",
      "-mp",
      String(mediaPort),
      "-ci",
      "127.0.0.1",
      "-cp",
      String(controlPort),
      "-m",
      String(options.calls ?? 1),
      "-timeout",
      `${options.timeoutSeconds ?? 20}s`,
      "-timeout_error",
      "-nostdin",
      "-trace_err",
      "-error_file",
      join(dir, "errors.log"),
      "-trace_screen",
      "-screen_file",
      join(dir, "screen.log"),
    ];
    if (options.traceMessages !== false) args.push("-trace_msg", "-message_file", join(dir, "messages.log"));
    if (options.rate !== undefined) args.push("-r", String(options.rate));
    if (options.pauseMs !== undefined) args.push("-d", String(options.pauseMs));
    for (const [key, value] of Object.entries(options.keys ?? {})) args.push("-key", key, value);
    args.push(...(options.args ?? []));
    if (options.remote !== undefined) args.push(options.remote);

    const child = spawn(binary, args, { cwd: dir, stdio: ["ignore", "pipe", "pipe"] });
    const output = { text: "" };
    // Keep only the tail: SIPp repaints its statistics screen on stdout.
    const collect = (chunk: Buffer) => {
      output.text = (output.text + chunk.toString()).slice(-20_000);
    };
    child.stdout?.on("data", collect);
    child.stderr?.on("data", collect);
    const exited = new Promise<SippResult>((resolve, reject) => {
      child.once("error", reject);
      child.once("exit", (code, signal) => resolve({ code, signal }));
    });
    const sipp = new Sipp(child, dir, sipPort, mediaPort, exited, output);
    try {
      // A UAS must listen before it is called. A UAC binds its media ports at start: a port another
      // test process took between our check and SIPp's bind ends it within a few milliseconds, and
      // start() tries other ports.
      if (options.remote === undefined) await sipp.waitUntilListening();
      else await sipp.refusedBind();
    } catch (error) {
      await sipp.stop();
      throw error;
    }
    return sipp;
  }

  private async waitUntilListening(): Promise<void> {
    let done = false;
    void this.exited.then(() => {
      done = true;
    });
    const deadline = Date.now() + 10_000;
    while (!isUdpPortBoundBy(this.process.pid ?? 0, this.sipPort)) {
      if (done) throw new Error(`sipp exited before listening:\n${this.output.text}\n${this.errors()}`);
      if (Date.now() > deadline) throw new Error("sipp did not bind its SIP port within 10 s");
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  /** Throws when SIPp ended in its first 150 ms because a port was in use (errno 98). */
  private async refusedBind(): Promise<void> {
    const ended = await Promise.race([
      this.exited.then(() => true),
      new Promise<false>((resolve) => setTimeout(() => resolve(false), 150)),
    ]);
    if (!ended) return;
    const report = `${this.output.text}\n${this.errors()}`;
    if (/Address already in use|errno = 98/.test(report)) throw new Error(`sipp could not bind:\n${report}`);
  }

  /**
   * Waits for `step` (e.g. a call reaching "answered"), failing at once with SIPp's report when SIPp
   * exits with a failed call first rather than at the step's own timeout.
   */
  async unlessFailed<T>(step: Promise<T>): Promise<T> {
    const failed = this.exited.then(({ code, signal }) =>
      code === 0 ? step : Promise.reject(new Error(`sipp exited with ${code ?? signal}:\n${this.report()}`)),
    );
    return Promise.race([step, failed]);
  }

  /** Its working directory, where -trace_rtt, -trace_counts and the like write their files. */
  get directory(): string {
    return this.dir;
  }

  /** Whether it is still running. */
  get running(): boolean {
    return this.process.exitCode === null && this.process.signalCode === null;
  }

  /** Waits for SIPp to finish its calls; rejects after `ms`. */
  async result(ms = 30_000): Promise<SippResult> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`sipp still running after ${ms} ms:\n${this.report()}`)), ms);
    });
    try {
      return await Promise.race([this.exited, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Waits for exit and throws with SIPp's error log and message trace unless every call passed. */
  async expectSuccess(ms = 30_000): Promise<void> {
    const { code, signal } = await this.result(ms);
    if (code !== 0) throw new Error(`sipp exited with ${code ?? signal}:\n${this.report()}`);
  }

  /** Unexpected messages and scenario failures SIPp logged (-trace_err). */
  errors(): string {
    return readIfExists(join(this.dir, "errors.log"));
  }

  /** Every SIP message SIPp sent and received (-trace_msg). */
  messages(): string {
    return readIfExists(join(this.dir, "messages.log"));
  }

  /** Everything useful for a failure message. */
  report(): string {
    return [
      `--- sipp errors ---\n${this.errors()}`,
      `--- sipp messages ---\n${this.messages().slice(-12_000)}`,
      `--- sipp screen ---\n${readIfExists(join(this.dir, "screen.log")).slice(-3000)}`,
    ].join("\n");
  }

  /** Kills SIPp if still running and removes its directory. */
  async stop(): Promise<void> {
    if (this.process.exitCode === null && this.process.signalCode === null) {
      this.process.kill("SIGKILL");
      await this.exited;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

function readIfExists(path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return "";
  }
}

/** What a call reported, in order, for assertions after the fact. */
export class CallRecord {
  /** Event names in arrival order ("ringing", "answered", "digit", ...). */
  readonly events: string[] = [];
  readonly digits: string[] = [];
  readonly holds: boolean[] = [];
  failure: CallFailure | undefined;
  end: CallEnd | undefined;

  /** `peerReport` adds the far end's view (e.g. `() => sipp.report()`) to failure messages. */
  constructor(
    readonly call: Call,
    private readonly peerReport: () => string = () => "",
  ) {
    call.on("ringing", () => this.events.push("ringing"));
    call.on("answered", () => this.events.push("answered"));
    call.on("failed", (failure) => {
      this.events.push("failed");
      this.failure = failure;
    });
    call.on("ended", (end) => {
      this.events.push("ended");
      this.end = end;
    });
    call.on("digit", (key) => {
      this.events.push("digit");
      this.digits.push(key);
    });
    call.on("held", (held) => {
      this.events.push("held");
      this.holds.push(held);
    });
  }

  describe(): string {
    const outcome = this.failure ?? this.end;
    return `${this.events.join(", ")}${outcome === undefined ? "" : ` ${JSON.stringify(outcome)}`}`;
  }

  /** Resolves on the next `event` (or at once if it already happened); rejects after `ms`. */
  async reached(event: "ringing" | "answered" | "failed" | "ended" | "held", ms = 15_000): Promise<void> {
    if (this.events.includes(event)) return;
    try {
      await once(this.call, event, { signal: AbortSignal.timeout(ms) });
    } catch {
      throw new Error(
        `call never reported "${event}" within ${ms} ms; it reported: ${this.describe()}\n${this.peerReport()}`,
      );
    }
  }

  /** Resolves once the call failed or ended. */
  async settled(ms = 15_000): Promise<void> {
    if (this.events.includes("failed") || this.events.includes("ended")) return;
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), ms);
    try {
      await Promise.race([
        once(this.call, "failed", { signal: controller.signal }),
        once(this.call, "ended", { signal: controller.signal }),
      ]);
    } catch {
      throw new Error(
        `call neither failed nor ended within ${ms} ms; it reported: ${this.describe()}\n${this.peerReport()}`,
      );
    } finally {
      clearTimeout(timer);
      controller.abort();
    }
  }
}
