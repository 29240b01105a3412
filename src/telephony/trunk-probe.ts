/**
 * Whether the trunks are up: every server of every trunk (each address its first hop's RFC 3263
 * lookup gives: the outbound proxy's when it has one, else the trunk's) is sent an OPTIONS every
 * `interval` (RFC 3261 section 11, out of dialog), as Asterisk's `qualify_frequency` and Kamailio's
 * dispatcher probing do. Each server is a small state machine, unknown → up or down, moved by
 * consecutive answers and silences; a trunk is down when every server it has is. Timers run on the
 * telephony's Clock. The choices (what counts as an answer, the defaults) are argued in
 * docs/telephony.md#trunk-health.
 */
import type { Clock, TimerHandle } from "../domain/clock.js";
import type { Hop } from "./dial-plan.js";
import type { Destination } from "./sip/transport/sip-transport.js";
import type { Trunk } from "./trunk.js";

/** How a trunk's servers are probed; times in milliseconds. */
export interface ProbeSettings {
  /** From one OPTIONS to the next; 0: not probed. */
  readonly intervalMs: number;
  /** How long an OPTIONS may go unanswered before it counts as failed (at most the interval). */
  readonly timeoutMs: number;
  /** Consecutive answers that bring a server up. */
  readonly upAfter: number;
  /** Consecutive failures that take a server down. */
  readonly downAfter: number;
}

export const DEFAULT_PROBE_SETTINGS: ProbeSettings = {
  intervalMs: 30_000,
  timeoutMs: 5000,
  upAfter: 1,
  downAfter: 2,
};

/** A trunk's own probe settings (its profile's `options:`) over the service's. */
export function probeSettingsOf(
  service: ProbeSettings,
  own: Partial<ProbeSettings> | null | undefined,
): ProbeSettings | undefined {
  const settings = { ...service, ...own };
  if (settings.intervalMs <= 0) return undefined;
  // A timeout the trunk did not set is the service's, cut to its interval.
  return { ...settings, timeoutMs: Math.min(settings.timeoutMs, settings.intervalMs) };
}

export type ServerHealth = "unknown" | "up" | "down";

/** The moves a server's health may make: unknown is left once and never returned to. */
const MOVES: Readonly<Record<ServerHealth, readonly ServerHealth[]>> = {
  unknown: ["up", "down"],
  up: ["down"],
  down: ["up"],
};

/**
 * How one OPTIONS went: `ok` any final response but 408 and 503 (the server's SIP stack answers,
 * even to refuse us), `unavailable` 408 or 503, `timeout` nothing within the timeout, `error` not
 * sent or its transaction failed (a refused connection, a TLS failure, an ICMP unreachable).
 */
export type ProbeResult = "ok" | "unavailable" | "timeout" | "error";

/** What sending one OPTIONS came to (the timeout is the probe's own). */
export type ProbeAnswer =
  | { readonly result: "ok"; readonly status: number }
  | { readonly result: "unavailable" | "error"; readonly reason: string };

/** What one server's probe tells, as it happens. */
export interface ServerProbeEvents {
  /** Each OPTIONS's outcome; the round trip of an answered one. */
  probed(result: ProbeResult, rttMs: number | undefined, detail: string): void;
  /** A move of its health, with the last outcome's detail (the RTT, or why it failed). */
  moved(health: "up" | "down", detail: string): void;
}

/**
 * One server: an OPTIONS now and every `intervalMs` after, each bounded by `timeoutMs`; `upAfter`
 * answers in a row bring it up, `downAfter` failures in a row take it down. `stop()` clears every
 * timer, and an answer that arrives after is ignored.
 */
export class ServerProbe {
  #health: ServerHealth = "unknown";
  #answered = 0;
  #failed = 0;
  /** The OPTIONS waited for, by its number; undefined between one's outcome and the next. */
  #waiting: number | undefined;
  #sent = 0;
  #next: TimerHandle | undefined;
  #deadline: TimerHandle | undefined;
  #stopped = false;

  constructor(
    private readonly clock: Clock,
    private readonly settings: ProbeSettings,
    private readonly send: () => Promise<ProbeAnswer>,
    private readonly events: ServerProbeEvents,
  ) {}

  get health(): ServerHealth {
    return this.#health;
  }

  start(): void {
    this.#probe();
  }

  stop(): void {
    this.#stopped = true;
    this.#waiting = undefined;
    this.clock.clearTimeout(this.#next);
    this.clock.clearTimeout(this.#deadline);
    this.#next = undefined;
    this.#deadline = undefined;
  }

  #probe(): void {
    if (this.#stopped) return;
    // A timeout as long as the interval falls due with the next OPTIONS: the last one is over.
    if (this.#waiting !== undefined) this.#timedOut(this.#waiting);
    const number = ++this.#sent;
    const sentAt = this.clock.now();
    this.#waiting = number;
    this.#next = this.clock.setTimeout(() => this.#probe(), this.settings.intervalMs);
    this.#deadline = this.clock.setTimeout(() => this.#timedOut(number), this.settings.timeoutMs);
    this.send().then(
      (answer) =>
        answer.result === "ok"
          ? this.#outcome(number, "ok", this.clock.now() - sentAt, `${answer.status} answered`)
          : this.#outcome(number, answer.result, undefined, answer.reason),
      (error: unknown) =>
        this.#outcome(number, "error", undefined, error instanceof Error ? error.message : String(error)),
    );
  }

  #timedOut(number: number): void {
    this.#outcome(number, "timeout", undefined, `no answer in ${this.settings.timeoutMs / 1000} s`);
  }

  #outcome(number: number, result: ProbeResult, rttMs: number | undefined, detail: string): void {
    // Stopped, timed out already, or an answer to an OPTIONS given up on: not this probe's news.
    if (this.#stopped || this.#waiting !== number) return;
    this.#waiting = undefined;
    this.clock.clearTimeout(this.#deadline);
    this.#deadline = undefined;
    const said = rttMs === undefined ? detail : `${detail} in ${Math.round(rttMs)} ms`;
    this.events.probed(result, rttMs, said);
    if (result === "ok") {
      this.#answered++;
      this.#failed = 0;
      if (this.#health !== "up" && this.#answered >= this.settings.upAfter) this.#move("up", said);
    } else {
      this.#failed++;
      this.#answered = 0;
      if (this.#health !== "down" && this.#failed >= this.settings.downAfter) this.#move("down", said);
    }
  }

  #move(health: "up" | "down", detail: string): void {
    if (!MOVES[this.#health].includes(health))
      throw new Error(`a trunk server cannot go from ${this.#health} to ${health}`);
    this.#health = health;
    this.events.moved(health, detail);
  }
}

/** A server as the log, the metrics and readiness name it: `UDP 192.0.2.10:5060`. */
export function serverName(destination: Destination): string {
  const host = destination.host.includes(":") ? `[${destination.host}]` : destination.host;
  return `${destination.transport} ${host}:${destination.port}`;
}

/** Told of every probe and every move, by trunk URI and server name: the metrics. */
export interface TrunkProbeObserver {
  probed(trunk: string, server: string, result: ProbeResult, rttSeconds: number | undefined): void;
  moved(trunk: string, server: string, health: "up" | "down"): void;
}

interface ProbeLogger {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

export interface TrunkProbesOptions {
  readonly clock: Clock;
  /** The trunks to probe, each with its first hop and settings. */
  readonly trunks: readonly {
    readonly trunk: Trunk;
    readonly first: Hop;
    readonly settings: ProbeSettings;
  }[];
  /** The servers of a first hop (RFC 3263). */
  readonly locate: (hop: Hop) => Promise<Destination[]>;
  /** Sends one OPTIONS to a server of the hop. */
  readonly sendOptions: (hop: Hop, server: Destination) => Promise<ProbeAnswer>;
  /** Told of a server gone down (at every failure while down) and of one back up: the locator. */
  readonly markDown: (server: Destination) => void;
  readonly markUp: (server: Destination) => void;
  readonly logger?: ProbeLogger;
  readonly observer?: TrunkProbeObserver;
}

/** A trunk's servers' health, for readiness; `lookupFailed` while its servers cannot be found. */
export interface TrunkHealth {
  readonly uri: string;
  readonly lookupFailed: boolean;
  readonly servers: readonly { readonly server: string; readonly health: ServerHealth }[];
}

/**
 * How often a trunk's servers are looked up again (RFC 3263): a carrier's DNS that moves its
 * servers is followed within this, the servers gone no longer probed, the new ones probed.
 */
export const LOOKUP_REFRESH_MS = 5 * 60_000;

/**
 * Every trunk's servers, probed; each trunk's servers are looked up again every LOOKUP_REFRESH_MS,
 * and every interval while its lookup fails (the trunk counted down meanwhile).
 */
export class TrunkProbes {
  readonly #options: TrunkProbesOptions;
  readonly #probes = new Map<Trunk, { server: string; probe: ServerProbe }[]>();
  /** The next lookup of each trunk's servers. */
  readonly #lookups = new Map<Trunk, TimerHandle>();
  /** Trunks whose last lookup failed: no server of theirs can be called. */
  readonly #lookupFailed = new Set<Trunk>();
  #stopped = false;

  constructor(options: TrunkProbesOptions) {
    this.#options = options;
  }

  start(): void {
    for (const each of this.#options.trunks) this.#locate(each);
  }

  /** Clears every timer: no OPTIONS leaves after. */
  stop(): void {
    this.#stopped = true;
    for (const timer of this.#lookups.values()) this.#options.clock.clearTimeout(timer);
    this.#lookups.clear();
    for (const probes of this.#probes.values()) for (const { probe } of probes) probe.stop();
  }

  /** The trunks every server of which is down, and those whose servers cannot be found. */
  downTrunks(): ReadonlySet<Trunk> {
    const down = new Set<Trunk>(this.#lookupFailed);
    for (const [trunk, probes] of this.#probes)
      if (probes.length > 0 && probes.every(({ probe }) => probe.health === "down")) down.add(trunk);
    return down;
  }

  /** Each probed trunk's servers (none yet while its lookup has not succeeded). */
  health(): TrunkHealth[] {
    return this.#options.trunks.map(({ trunk }) => ({
      uri: trunk.uri,
      lookupFailed: this.#lookupFailed.has(trunk),
      servers: (this.#probes.get(trunk) ?? []).map(({ server, probe }) => ({ server, health: probe.health })),
    }));
  }

  #locate(each: TrunkProbesOptions["trunks"][number]): void {
    const { trunk, first, settings } = each;
    const { logger, clock } = this.#options;
    const again = (ms: number) =>
      this.#lookups.set(
        trunk,
        clock.setTimeout(() => {
          this.#lookups.delete(trunk);
          if (!this.#stopped) this.#locate(each);
        }, ms),
      );
    this.#options.locate(first).then(
      (servers) => {
        if (this.#stopped) return;
        this.#lookupFailed.delete(trunk);
        // Servers still named keep their probes (and health); gone ones stop; new ones start.
        const before = new Map((this.#probes.get(trunk) ?? []).map((each) => [each.server, each]));
        const probes = [...new Map(servers.map((server) => [serverName(server), server]))].map(
          ([name, server]) =>
            before.get(name) ?? {
              server: name,
              probe: this.#probe(trunk.uri, name, server, first, settings),
            },
        );
        const kept = new Set(probes);
        for (const gone of before.values()) if (!kept.has(gone)) gone.probe.stop();
        this.#probes.set(trunk, probes);
        for (const each of probes) if (before.get(each.server) !== each) each.probe.start();
        again(LOOKUP_REFRESH_MS);
      },
      (error: unknown) => {
        if (this.#stopped) return;
        // Servers found before keep being probed (a refresh that fails moves nothing); a trunk never
        // found has none to call.
        if (!this.#probes.has(trunk)) this.#lookupFailed.add(trunk);
        logger?.warn(
          { trunk: trunk.uri, err: error },
          `a trunk's servers could not be looked up to probe them: trying again in ${settings.intervalMs / 1000} s`,
        );
        again(settings.intervalMs);
      },
    );
  }

  #probe(trunk: string, name: string, server: Destination, first: Hop, settings: ProbeSettings): ServerProbe {
    const { logger, observer } = this.#options;
    const probe: ServerProbe = new ServerProbe(
      this.#options.clock,
      settings,
      () => this.#options.sendOptions(first, server),
      {
        probed: (result, rttMs) => {
          observer?.probed(trunk, name, result, rttMs === undefined ? undefined : rttMs / 1000);
          // Kept marked while down: the locator forgets a mark after its own time.
          if (result !== "ok" && probe.health === "down") this.#options.markDown(server);
        },
        moved: (health, detail) => {
          observer?.moved(trunk, name, health);
          if (health === "down") {
            this.#options.markDown(server);
            logger?.warn({ trunk, server: name, reason: detail }, "a trunk server is down: tried last");
          } else {
            this.#options.markUp(server);
            logger?.info({ trunk, server: name, answer: detail }, "a trunk server is up");
          }
        },
      },
    );
    return probe;
  }
}

/** What readiness says of the trunks: each with servers down named, and whether calls can go out. */
export interface TrunksReadiness {
  /** `ok` none down; `degraded` some trunk has servers down; `down` as the mode counts it. */
  readonly state: "ok" | "degraded" | "down";
  readonly text: string;
}

/**
 * The trunks' readiness: `any` (the default) down only when every probed trunk is down (no route
 * can carry a call); `all` down when any trunk is. A trunk with some of its servers down is named
 * either way.
 */
export function trunksReadiness(health: readonly TrunkHealth[], mode: "any" | "all"): TrunksReadiness {
  const named: string[] = [];
  let trunksDown = 0;
  for (const { uri, lookupFailed, servers } of health) {
    // Its servers cannot be found: no call can go through it.
    if (lookupFailed) {
      trunksDown++;
      named.push(`${uri} (servers not found)`);
      continue;
    }
    const down = servers.filter((server) => server.health === "down").length;
    if (down === 0) continue;
    const all = down === servers.length;
    if (all) trunksDown++;
    const count = `${down} server${down === 1 ? "" : "s"} down`;
    named.push(`${uri} (${all ? count : `${count} of ${servers.length}`})`);
  }
  if (named.length === 0) return { state: "ok", text: "ok" };
  const failed = mode === "all" ? trunksDown > 0 : trunksDown === health.length;
  return failed
    ? { state: "down", text: `down: ${named.join("; ")}` }
    : { state: "degraded", text: `degraded: ${named.join("; ")}` };
}
