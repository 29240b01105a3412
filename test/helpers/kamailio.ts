/**
 * Runs Kamailio (https://www.kamailio.org) from the shipped deploy/kamailio/kamailio.cfg as the SIP
 * edge in front of stand-in instances, on loopback: a free port, the dispatcher list and runtime
 * files in a temporary directory, its log captured, stopped with SIGTERM (SIGKILL after 5 s).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { createSocket } from "node:dgram";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { findBinary, freePorts } from "./sipp.js";
import { until } from "./until.js";

export const KAMAILIO_CONFIG = fileURLToPath(new URL("../../deploy/kamailio/kamailio.cfg", import.meta.url));

export interface KamailioOptions {
  /** The carrier trunk's SIP URI, where calls placed by the instances go (TRUNK_URI). */
  trunk: string;
  /** The instances' SIP URIs, e.g. `sip:127.0.0.1:30010`: dispatcher set 1. */
  instances: readonly string[];
  /** Further `-A NAME=value` defines (a string value keeps its double quotes). */
  defines?: Record<string, string>;
  /** Another configuration than the shipped one (a test's own peer, e.g. a TLS trunk). */
  config?: string;
}

export class Kamailio {
  private output = "";

  private constructor(
    private readonly process: ChildProcess,
    private readonly dir: string,
    readonly port: number,
    /** The command line it was started with, for reports. */
    readonly commandLine: string,
    readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>,
  ) {
    const collect = (chunk: Buffer) => {
      this.output = (this.output + chunk.toString()).slice(-200_000);
    };
    process.stdout?.on("data", collect);
    process.stderr?.on("data", collect);
  }

  /** `127.0.0.1:<port>`: where the carrier (a SIPp UAC) sends its calls. */
  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  /** `sip:127.0.0.1:<port>`: the trunk URI to give an instance. */
  get uri(): string {
    return `sip:${this.address}`;
  }

  /** What it logged so far (stderr, -E), the oldest lines dropped past 200 KB. */
  get log(): string {
    return this.output;
  }

  /**
   * Starts it, again on another port when the one it was given was taken meanwhile (test files run
   * in parallel processes, each choosing ports of its own), and resolves once it answers OPTIONS.
   */
  static async start(options: KamailioOptions): Promise<Kamailio> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await Kamailio.startOnce(options);
      } catch (error) {
        if (attempt >= 3 || !/Address already in use|could not bind|bind\(/.test(String(error))) throw error;
      }
    }
  }

  private static async startOnce(options: KamailioOptions): Promise<Kamailio> {
    const binary = findBinary("kamailio");
    if (binary === null) throw new Error("kamailio is not installed");
    const port = await freePorts();
    const dir = mkdtempSync(join(tmpdir(), "kamailio-"));
    const runtimeDir = join(dir, "run");
    mkdirSync(runtimeDir);
    const list = join(dir, "dispatcher.list");
    writeFileSync(list, `${options.instances.map((uri) => `1 ${uri}`).join("\n")}\n`);
    const defines: Record<string, string> = {
      LISTEN_ADDR: "127.0.0.1",
      LISTEN_PORT: String(port),
      TRUNK_URI: `"${options.trunk}"`,
      DISPATCHER_LIST: `"${list}"`,
      CHILDREN: "2",
      ...options.defines,
    };
    const args = [
      "-DD",
      "-E",
      "-f",
      options.config ?? KAMAILIO_CONFIG,
      "-Y",
      runtimeDir,
      "-P",
      join(dir, "kamailio.pid"),
      "-w",
      dir,
      ...Object.entries(defines).flatMap(([name, value]) => ["-A", `${name}=${value}`]),
    ];
    // Its own process group, so that SIGKILL also reaches the workers it forked.
    const child = spawn(binary, args, { cwd: dir, stdio: ["ignore", "pipe", "pipe"], detached: true });
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve, reject) => {
      child.once("error", reject);
      child.once("exit", (code, signal) => resolve({ code, signal }));
    });
    const commandLine = [binary, ...args.map((arg) => (/^[\w./:=-]+$/.test(arg) ? arg : `'${arg}'`))].join(
      " ",
    );
    const kamailio = new Kamailio(child, dir, port, commandLine, exited);
    // Detached, it would outlive a test process that ends without stopping it (a failed `before`).
    const orphaned = () => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
      } catch {}
    };
    process.once("exit", orphaned);
    void exited.then(() => process.off("exit", orphaned));
    try {
      await kamailio.waitUntilAnswering();
    } catch (error) {
      await kamailio.stop();
      throw error;
    }
    return kamailio;
  }

  /** Polls with a stateless OPTIONS keepalive until it answers 200 (or exits, or 20 s pass). */
  private async waitUntilAnswering(): Promise<void> {
    let exit: string | undefined;
    void this.exited.then(({ code, signal }) => {
      exit = `kamailio exited with ${code ?? signal} before answering:\n${this.output.slice(-5000)}`;
    });
    await until(
      `kamailio to answer OPTIONS on ${this.address}`,
      async () => {
        if (exit !== undefined) throw new Error(exit);
        return (await this.optionsAnswered()) ? true : undefined;
      },
      { timeoutMs: 20_000, detail: () => this.output.slice(-5000) },
    );
  }

  private async optionsAnswered(): Promise<boolean> {
    const socket = createSocket("udp4");
    try {
      await new Promise<void>((resolve) => socket.bind(0, "127.0.0.1", resolve));
      const { port } = socket.address();
      const request = [
        `OPTIONS sip:${this.address} SIP/2.0`,
        `Via: SIP/2.0/UDP 127.0.0.1:${port};branch=z9hG4bK${randomUUID()}`,
        "Max-Forwards: 70",
        `From: <sip:probe@127.0.0.1:${port}>;tag=${randomUUID().slice(0, 8)}`,
        `To: <sip:${this.address}>`,
        `Call-ID: ${randomUUID()}`,
        "CSeq: 1 OPTIONS",
        "Content-Length: 0",
        "",
        "",
      ].join("\r\n");
      const answered = new Promise<boolean>((resolve) => {
        socket.on("message", (message) => resolve(message.toString().startsWith("SIP/2.0 200")));
        setTimeout(() => resolve(false), 300);
      });
      socket.send(request, this.port, "127.0.0.1");
      return await answered;
    } finally {
      socket.close();
    }
  }

  /** SIGTERM, then SIGKILL to its process group after 5 s; removes its directory. */
  async stop(): Promise<void> {
    const pid = this.process.pid;
    if (pid !== undefined && this.process.exitCode === null && this.process.signalCode === null) {
      this.process.kill("SIGTERM");
      const timer = setTimeout(() => {
        try {
          process.kill(-pid, "SIGKILL");
        } catch {}
      }, 5000);
      await this.exited;
      clearTimeout(timer);
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}
