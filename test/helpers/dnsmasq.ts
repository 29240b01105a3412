/**
 * dnsmasq (Debian dnsmasq-base) as a DNS server on loopback for the records a test gives it, on a free
 * port, in the foreground, nothing else answered (no upstream, no hosts file); stopped with SIGTERM.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { Resolver } from "node:dns/promises";
import { findBinary, freePorts } from "./sipp.js";
import { until } from "./until.js";

export interface DnsRecords {
  /** `name,order,preference,flags,service,regexp,replacement` (dnsmasq's --naptr-record). */
  readonly naptr?: readonly string[];
  /** `_service._proto.name,target,port,priority,weight` (dnsmasq's --srv-host). */
  readonly srv?: readonly string[];
  /** `name,address` (dnsmasq's --host-record). */
  readonly hosts?: readonly string[];
  /** Seconds the answers may be cached (--local-ttl). */
  readonly ttl?: number;
}

export class Dnsmasq {
  private output = "";

  private constructor(
    private readonly process: ChildProcess,
    readonly port: number,
    readonly exited: Promise<unknown>,
  ) {
    process.stderr?.on("data", (chunk: Buffer) => {
      this.output = (this.output + chunk.toString()).slice(-50_000);
    });
  }

  /** `127.0.0.1:<port>`, as BRIDGELINE_DNS_SERVERS takes it. */
  get server(): string {
    return `127.0.0.1:${this.port}`;
  }

  get log(): string {
    return this.output;
  }

  static async start(records: DnsRecords): Promise<Dnsmasq> {
    const binary = findBinary("dnsmasq");
    if (binary === null) throw new Error("dnsmasq is not installed (Debian: apt-get install dnsmasq-base)");
    const port = await freePorts();
    const args = [
      "--keep-in-foreground",
      "--log-facility=-",
      "--log-queries",
      "--conf-file=/dev/null",
      `--port=${port}`,
      "--listen-address=127.0.0.1",
      "--bind-interfaces",
      "--no-resolv",
      "--no-hosts",
      "--user=root",
      `--local-ttl=${records.ttl ?? 1}`,
      ...(records.naptr ?? []).map((record) => `--naptr-record=${record}`),
      ...(records.srv ?? []).map((record) => `--srv-host=${record}`),
      ...(records.hosts ?? []).map((record) => `--host-record=${record}`),
    ];
    const child = spawn(binary, args, { stdio: ["ignore", "ignore", "pipe"] });
    const exited = new Promise((resolve) => child.once("exit", resolve));
    const dnsmasq = new Dnsmasq(child, port, exited);
    const resolver = new Resolver({ timeout: 200, tries: 1 });
    resolver.setServers([dnsmasq.server]);
    const probe = records.hosts?.[0]?.split(",")[0];
    try {
      await until("dnsmasq answering", async () => {
        if (child.exitCode !== null) throw new Error(`dnsmasq exited: ${dnsmasq.log}`);
        if (probe === undefined) return true;
        return (await resolver.resolve4(probe).catch(() => [])).length > 0 ? true : undefined;
      });
    } catch (error) {
      await dnsmasq.stop();
      throw error;
    }
    return dnsmasq;
  }

  async stop(): Promise<void> {
    if (this.process.exitCode === null && this.process.signalCode === null) {
      this.process.kill("SIGTERM");
      const timer = setTimeout(() => this.process.kill("SIGKILL"), 3000);
      await this.exited;
      clearTimeout(timer);
    }
  }
}
