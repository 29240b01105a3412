/**
 * Locating SIP servers (RFC 3263 section 4): the ordered list of targets (address, port, transport)
 * a request to a SIP URI is tried at. A numeric host is its own target; a host with a port is looked
 * up by A/AAAA; otherwise NAPTR picks the transport (4.1), SRV the servers in priority and weight
 * order (4.2, RFC 2782), and A/AAAA their addresses (through the system's resolver, hosts file
 * included, unless DNS servers of one's own are given). Answers are cached for their TTL. A target that
 * failed (no answer in time, 503, a transport error) is marked down for a while and tried after the
 * others (4.3).
 */
import { getServers } from "node:dns";
import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import type { Answer, Packet, RecordType } from "dns-packet";
import createDnsSocket from "dns-socket";
import type { Destination, TransportName } from "./sip-transport.js";

const DNS_PORT = 53;
const DEFAULT_SIP_PORT = 5060;
const DEFAULT_SIPS_PORT = 5061;

/** Section 4.1: the NAPTR services we speak, and the transport each names. */
const NAPTR_SERVICES: Readonly<Record<string, TransportName>> = {
  "SIP+D2U": "UDP",
  "SIP+D2T": "TCP",
  "SIPS+D2T": "TLS",
};
/** The SRV prefix of each transport (section 4.1, last paragraphs). */
const SRV_PREFIX: Readonly<Record<TransportName, string>> = {
  UDP: "_sip._udp.",
  TCP: "_sip._tcp.",
  TLS: "_sips._tcp.",
};

export interface ServerLocatorOptions {
  /** DNS servers as `address` or `address:port`; default the system's. */
  readonly servers?: readonly string[];
  /** How long a failed target is tried last. */
  readonly downForMs?: number;
  /** How long a DNS query may take, retries included. */
  readonly queryTimeoutMs?: number;
  readonly now?: () => number;
}

/** What locating needs of a URI: its host, port, transport parameter, and whether it is SIPS. */
export interface LocatedUri {
  readonly host: string;
  readonly port?: number;
  readonly transport?: TransportName;
  readonly secure: boolean;
}

interface SrvRecord {
  readonly priority: number;
  readonly weight: number;
  readonly port: number;
  readonly target: string;
}

interface NaptrRecord {
  readonly order: number;
  readonly preference: number;
  readonly flags: string;
  readonly services: string;
  readonly replacement: string;
}

export class LocateError extends Error {}

export class ServerLocator {
  readonly #servers: readonly { host: string; port: number }[];
  /** With the system's DNS, addresses come from the system (its hosts file included). */
  readonly #systemAddresses: boolean;
  readonly #downForMs: number;
  readonly #now: () => number;
  readonly #queryTimeoutMs: number;
  /** Made on the first query: a service whose trunks are addresses never opens it. */
  #socket: ReturnType<typeof createDnsSocket> | undefined;
  readonly #cache = new Map<string, { expires: number; answers: Answer[] }>();
  readonly #down = new Map<string, number>();

  constructor(options: ServerLocatorOptions = {}) {
    // dns-socket asks over UDP/IPv4 only: the system's IPv6 servers are left out.
    this.#servers = (options.servers ?? getServers())
      .map(parseServer)
      .filter((server) => isIP(server.host) === 4);
    this.#systemAddresses = options.servers === undefined;
    this.#downForMs = options.downForMs ?? 60_000;
    this.#now = options.now ?? Date.now;
    this.#queryTimeoutMs = options.queryTimeoutMs ?? 3000;
  }

  /** The targets to try for `uri`, in order; those marked down last. Throws LocateError when none. */
  async locate(uri: LocatedUri): Promise<Destination[]> {
    const targets = await this.#targets(uri);
    if (targets.length === 0) throw new LocateError(`no address found for ${uri.host}`);
    const now = this.#now();
    const up = targets.filter((target) => (this.#down.get(keyOf(target)) ?? 0) <= now);
    const down = targets.filter((target) => (this.#down.get(keyOf(target)) ?? 0) > now);
    return [...up, ...down];
  }

  /** Section 4.3: the target failed; try it after the others until `downForMs` has passed. */
  markDown(target: Destination): void {
    this.#down.set(keyOf(target), this.#now() + this.#downForMs);
  }

  /** The target answers again (a probe's OPTIONS): tried in its own order at once. */
  markUp(target: Destination): void {
    this.#down.delete(keyOf(target));
  }

  close(): void {
    this.#socket?.destroy();
    this.#socket = undefined;
  }

  async #targets(uri: LocatedUri): Promise<Destination[]> {
    const defaultPort = uri.secure ? DEFAULT_SIPS_PORT : DEFAULT_SIP_PORT;
    const fixed = uri.transport ?? (uri.secure ? "TLS" : undefined);
    // 4.1 and 4.2: a numeric host, or an explicit port, needs no NAPTR or SRV.
    if (isIP(uri.host) !== 0)
      return [{ host: uri.host, port: uri.port ?? defaultPort, transport: fixed ?? "UDP" }];
    if (uri.port !== undefined) return this.#addresses(uri.host, uri.port, fixed ?? "UDP", uri.host);
    const services = fixed === undefined ? await this.#naptr(uri) : [];
    const candidates =
      services.length > 0
        ? services
        : (fixed === undefined ? (["UDP", "TCP"] as const) : [fixed]).map((transport) => ({
            transport,
            name: `${SRV_PREFIX[transport]}${uri.host}`,
          }));
    for (const { transport, name } of candidates) {
      const records = await this.#query<SrvRecord>(name, "SRV");
      if (records.length === 0) continue;
      const targets: Destination[] = [];
      for (const record of orderSrv(records))
        targets.push(...(await this.#addresses(record.target, record.port, transport, uri.host)));
      return targets;
    }
    // No SRV: the host itself, on the default port.
    return this.#addresses(uri.host, defaultPort, fixed ?? "UDP", uri.host);
  }

  /** Section 4.1: the NAPTR records for services we speak, in order and preference. */
  async #naptr(uri: LocatedUri): Promise<{ transport: TransportName; name: string }[]> {
    const records = await this.#query<NaptrRecord>(uri.host, "NAPTR");
    return records
      .filter((record) => record.flags.toUpperCase() === "S")
      .map((record) => ({ record, transport: NAPTR_SERVICES[record.services.toUpperCase()] }))
      .filter(
        (entry): entry is { record: NaptrRecord; transport: TransportName } =>
          entry.transport !== undefined && (!uri.secure || entry.transport === "TLS"),
      )
      .sort((a, b) => a.record.order - b.record.order || a.record.preference - b.record.preference)
      .map(({ record, transport }) => ({ transport, name: record.replacement }));
  }

  async #addresses(
    host: string,
    port: number,
    transport: TransportName,
    domain: string,
  ): Promise<Destination[]> {
    const addresses = this.#systemAddresses
      ? (await lookup(host, { all: true }).catch(() => [])).map((found) => found.address)
      : (await Promise.all([this.#query<string>(host, "A"), this.#query<string>(host, "AAAA")])).flat();
    return addresses.map((address) => ({ host: address, port, transport, serverName: domain }));
  }

  /** The data of the answers of `type` for `name`, from the cache while their TTL lasts. */
  async #query<T>(name: string, type: RecordType): Promise<T[]> {
    const key = `${type} ${name.toLowerCase()}`;
    const cached = this.#cache.get(key);
    const now = this.#now();
    let answers = cached !== undefined && cached.expires > now ? cached.answers : undefined;
    if (answers === undefined) {
      // A query that fails (no answer in time, a refusal) counts as no records, and is asked again
      // next time: the lookup goes on to what comes next (SRV after NAPTR, addresses after SRV).
      const asked = await this.#ask(name, type).then(
        (found) => found,
        () => undefined,
      );
      answers = asked ?? [];
      if (asked !== undefined) {
        const ttl = Math.min(...asked.map((answer) => ("ttl" in answer ? (answer.ttl ?? 0) : 0)), 300);
        this.#cache.set(key, { expires: now + (asked.length === 0 ? 30 : ttl) * 1000, answers: asked });
      }
    }
    return answers
      .filter((answer) => answer.type === type)
      .map((answer) => (answer as { data: unknown }).data as T);
  }

  #ask(name: string, type: RecordType): Promise<Answer[]> {
    const server = this.#servers[0];
    if (server === undefined) return Promise.reject(new LocateError("no DNS server configured"));
    if (this.#socket === undefined) {
      // dns-socket gives a query (retries + 2) times its timeout before giving up.
      this.#socket = createDnsSocket({ timeout: Math.ceil(this.#queryTimeoutMs / 5), retries: 3 });
      // A socket error fails nothing by itself: the queries in flight time out.
      this.#socket.on("error", () => undefined);
    }
    const socket = this.#socket;
    return new Promise((resolve, reject) => {
      socket.query({ questions: [{ type, name }] }, server.port, server.host, (error, response) => {
        if (error !== null) reject(new LocateError(`DNS ${type} query for ${name} failed: ${error.message}`));
        else resolve((response as Packet).answers ?? []);
      });
    });
  }
}

/** RFC 2782: lowest priority first; within one, weighted random order. */
export function orderSrv<T extends SrvRecord>(records: readonly T[], random = Math.random): T[] {
  const ordered: T[] = [];
  const priorities = [...new Set(records.map((record) => record.priority))].sort((a, b) => a - b);
  for (const priority of priorities) {
    const left = records.filter((record) => record.priority === priority);
    while (left.length > 0) {
      const total = left.reduce((sum, record) => sum + record.weight, 0);
      let pick = random() * total;
      let index = left.findIndex((record) => {
        pick -= record.weight;
        return pick < 0;
      });
      if (index < 0) index = 0;
      ordered.push(...left.splice(index, 1));
    }
  }
  return ordered;
}

function keyOf(target: Destination): string {
  return `${target.transport} ${target.host} ${target.port}`;
}

/** `address`, `address:port` or `[v6]:port`. */
function parseServer(server: string): { host: string; port: number } {
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(server);
  if (bracketed !== null) return { host: bracketed[1] as string, port: Number(bracketed[2] ?? DNS_PORT) };
  if (isIP(server) === 6) return { host: server, port: DNS_PORT };
  const [host = "", port] = server.split(":");
  return { host, port: port === undefined ? DNS_PORT : Number(port) };
}
