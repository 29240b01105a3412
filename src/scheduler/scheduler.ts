/**
 * Starts conferences on time. The schedule is the database itself: every poll claims the pending
 * conferences that are due (so a restart, a reschedule or a delete takes effect at the next poll),
 * each claimed by exactly one instance. It also renews this instance's leases on the conferences it
 * runs (its heartbeat) and its place among the instances alive, takes over the conferences of
 * instances that fell silent past the lease or handed theirs over, and reports the due conferences
 * that no instance had room to start.
 *
 * The lease: a runner's conferences are its own while it renews them; silent for `leaseMs`, they
 * are another's to take. The runner itself counts its lease from when it asked for the renewal, so
 * it knows its lease over before any other instance can think so (onLeases' validForMs), whatever
 * happened to it meanwhile (paused, cut off from the database). An instance takes over others'
 * conferences only once it has itself renewed without a break for a whole lease: after an outage of
 * the database every runner alive has renewed before anyone judges it silent.
 */
import type { Clock, TimerHandle } from "../domain/clock.js";
import type { Conference } from "../domain/conference.js";
import type {
  DelayedConference,
  HeldLease,
  RecoveredConference,
  SchedulerStore,
  TakenOverConference,
} from "./ports.js";

export interface SchedulerLogger {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

export interface SchedulerOptions {
  readonly store: SchedulerStore;
  /** This instance's name as a conference's runner; stable across restarts of the same instance. */
  readonly runner: string;
  /**
   * Where this instance takes calls for the rooms it runs, stored with each conference it claims,
   * and with its heartbeat among the instances alive.
   */
  readonly sipUri?: string | null;
  /** Told the other instances' SIP URIs at start and with each heartbeat, while there is a sipUri. */
  readonly onOtherInstances?: (sipUris: readonly string[]) => void;
  /**
   * How many more participants this instance can take on now; null for no limit. A conference is
   * claimed only when its attendees fit, so a full instance leaves it to another.
   */
  readonly room?: () => number | null;
  readonly logger: SchedulerLogger;
  /** What the polls and heartbeats run on, and what now is. */
  readonly clock: Clock;
  /**
   * Runs a conference this instance has just claimed (state started), with its attendee count, the
   * lease it runs under, and for how long from now that lease is surely this instance's.
   */
  readonly startConference: (
    conference: Conference,
    attendees: number,
    lease: number,
    validForMs: number,
  ) => void;
  /** Runs a conference this instance has just taken over (its room calls back `callBack`), as above. */
  readonly takeOverConference: (conference: TakenOverConference, validForMs: number) => void;
  /**
   * Told after each renewal, asked for at `askedAt`, the leases this instance still holds, and for
   * how long from now they are surely its own (the lease counted from `askedAt`).
   */
  readonly onLeases?: (held: readonly HeldLease[], validForMs: number, askedAt: number) => void;
  /**
   * Told of each conference this instance claims: the seconds from its scheduled start to the claim
   * (a conference made pending after its time counts from that time).
   */
  readonly onStarted?: (lateSeconds: number) => void;
  /** Told of each due conference this instance marked delayed: no instance had room for it. */
  readonly onDelayed?: () => void;
  /** How often due conferences are looked for; a conference starts at most this late. */
  readonly pollIntervalMs?: number;
  /** How often the leases are renewed; a quarter of the lease by default. */
  readonly heartbeatIntervalMs?: number;
  /** A runner silent this long has lost its conferences: another instance takes them over. */
  readonly leaseMs: number;
  /**
   * A conference whose runner was last heard of longer ago than this is ended when found, not taken
   * over: its callers are long gone (every instance was down meanwhile).
   */
  readonly takeOverWithinMs?: number;
  /** An instance silent this long is no longer among the instances alive (their SIP addresses). */
  readonly staleAfterMs?: number;
}

const DEFAULT_POLL_INTERVAL_MS = 250;
const DEFAULT_TAKE_OVER_WITHIN_MS = 5 * 60_000;
const DEFAULT_STALE_AFTER_MS = 30_000;
/**
 * A conference still pending this long after its time was left by every instance polling (each
 * claims a due conference within a poll interval when it has room): all are full.
 */
const DELAYED_AFTER_MS = 5_000;

export class Scheduler {
  readonly #options: SchedulerOptions;
  #pollTimer: TimerHandle | undefined;
  #heartbeatTimer: TimerHandle | undefined;
  #running: Promise<void> | undefined;
  /** The heartbeats in progress (one may outlast the interval). */
  readonly #beats = new Set<Promise<void>>();
  #stopped = false;
  /** Since when this instance has renewed its leases without a break; undefined after a failure. */
  #renewingSince: number | undefined;
  #otherInstances = 0;

  constructor(options: SchedulerOptions) {
    this.#options = options;
  }

  /** The instances alive besides this one, as the last heartbeat found them. */
  get otherInstances(): number {
    return this.#otherInstances;
  }

  /** Takes over what an earlier run of this instance left started, then starts polling. */
  async start(): Promise<void> {
    const now = this.#now();
    this.#renewingSince = now.getTime();
    await this.#takeOver({ ownRunner: this.#options.runner }, now);
    await this.#renewInstance(now);
    this.#schedulePoll(0);
    this.#scheduleBeat();
  }

  /**
   * Hands these conferences over (this instance is stopping, another is alive, and their rooms here
   * are given up): another instance takes them over at its next renewal.
   */
  async handOver(leases: readonly HeldLease[]): Promise<void> {
    await this.#options.store.releaseLeases(this.#options.runner, leases, this.#now());
    for (const { conferenceId } of leases)
      this.#options.logger.info({ conferenceId }, "conference handed over to the other instances");
  }

  /**
   * Stops polling and renewing; a claim or a heartbeat in progress finishes first (a take-over of one
   * would otherwise land after the rooms here were handed over, and take back what they released).
   */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#options.clock.clearTimeout(this.#pollTimer);
    this.#options.clock.clearTimeout(this.#heartbeatTimer);
    await Promise.all([this.#running, ...this.#beats]);
  }

  #schedulePoll(delayMs: number): void {
    if (this.#stopped) return;
    this.#pollTimer = this.#options.clock.setTimeout(() => {
      this.#running = this.#poll().finally(() =>
        this.#schedulePoll(this.#options.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS),
      );
    }, delayMs);
  }

  async #poll(): Promise<void> {
    const { store, runner, logger } = this.#options;
    try {
      for (;;) {
        if (this.#stopped) return;
        const claimant = {
          runner,
          sipUri: this.#options.sipUri ?? null,
          room: this.#options.room?.() ?? null,
        };
        const claimedAt = this.#now();
        const claimed = await store.claimDueConference(claimant, claimedAt);
        if (claimed === undefined) return;
        const { conference, attendees } = claimed;
        logger.info({ conferenceId: conference.id }, "conference started");
        const lateMs = claimedAt.getTime() - Date.parse(conference.scheduledToStartAt);
        this.#options.onStarted?.(Math.max(0, lateMs) / 1000);
        try {
          this.#options.startConference(conference, attendees, claimed.lease, this.#validFor(claimedAt));
        } catch (error) {
          logger.error({ err: error, conferenceId: conference.id }, "conference could not be run");
        }
      }
    } catch (error) {
      logger.warn({ err: error }, "looking for due conferences failed; trying again");
    }
  }

  /** The next heartbeat, one interval on (each on time, whether the last has finished or not). */
  #scheduleBeat(): void {
    if (this.#stopped) return;
    this.#heartbeatTimer = this.#options.clock.setTimeout(
      () => {
        this.#scheduleBeat();
        const beat = this.#beat();
        this.#beats.add(beat);
        void beat.finally(() => this.#beats.delete(beat));
      },
      this.#options.heartbeatIntervalMs ?? this.#options.leaseMs / 4,
    );
  }

  async #beat(): Promise<void> {
    const { store, runner, logger } = this.#options;
    const now = this.#now();
    try {
      const held = await store.renewLeases(runner, now);
      if (this.#stopped) return;
      this.#options.onLeases?.(held, this.#validFor(now), now.getTime());
      this.#renewingSince ??= now.getTime();
      await this.#renewInstance(now);
      this.#logDelayed(await store.markDelayedConferences(new Date(now.getTime() - DELAYED_AFTER_MS), now));
      if (this.#stopped) return;
      // Others' conferences only after a whole lease of renewals: see the lease above.
      const judges = now.getTime() - this.#renewingSince >= this.#options.leaseMs;
      await this.#takeOver(
        judges ? { silentBefore: new Date(now.getTime() - this.#options.leaseMs) } : {},
        now,
      );
    } catch (error) {
      this.#renewingSince = undefined;
      logger.warn({ err: error }, "conference heartbeat failed; trying again");
    }
  }

  /** Takes over the conferences `gone` names and those handed over; ends those gone too long. */
  async #takeOver(gone: { ownRunner?: string; silentBefore?: Date }, now: Date): Promise<void> {
    const { store, runner, logger } = this.#options;
    const claimant = { runner, sipUri: this.#options.sipUri ?? null, room: this.#options.room?.() ?? null };
    const endBefore = new Date(
      now.getTime() - (this.#options.takeOverWithinMs ?? DEFAULT_TAKE_OVER_WITHIN_MS),
    );
    const { takenOver, ended } = await store.takeOverConferences(claimant, { ...gone, endBefore }, now);
    this.#logRecovered(ended);
    for (const conference of takenOver) {
      logger.warn(
        { conferenceId: conference.conference.id, ...conference.recovery },
        conference.recovery.cause === "handed-over"
          ? "conference taken over: its instance handed it over as it stopped; calling its attendees back"
          : "conference taken over: the instance running it fell silent; calling its attendees back",
      );
      try {
        this.#options.takeOverConference(conference, this.#validFor(now));
      } catch (error) {
        logger.error({ err: error, conferenceId: conference.conference.id }, "conference could not be run");
      }
    }
  }

  /** Says this instance is alive at its SIP URI, and learns where the others are. */
  async #renewInstance(now: Date): Promise<void> {
    const { store, runner, sipUri, onOtherInstances } = this.#options;
    if (sipUri === undefined || sipUri === null) return;
    const others = await store.renewSipInstance({ runner, sipUri }, this.#staleBefore(now), now);
    this.#otherInstances = others.length;
    onOtherInstances?.(others);
  }

  #now(): Date {
    return new Date(this.#options.clock.now());
  }

  /** What is left now of a lease whose heartbeat was written as `at` (asked for then). */
  #validFor(at: Date): number {
    return this.#options.leaseMs - (this.#options.clock.now() - at.getTime());
  }

  #staleBefore(now: Date): Date {
    return new Date(now.getTime() - (this.#options.staleAfterMs ?? DEFAULT_STALE_AFTER_MS));
  }

  /** Once per conference (and scheduled start), by the instance that marked it delayed. */
  #logDelayed(delayed: DelayedConference[]): void {
    for (const conference of delayed) {
      this.#options.onDelayed?.();
      this.#options.logger.warn(
        {
          conferenceId: conference.id,
          attendees: conference.attendees,
          scheduledToStartAt: conference.scheduledToStartAt,
        },
        "conference due but not started: no instance has room for it (BRIDGELINE_MAX_PARTICIPANTS); it starts once one has",
      );
    }
  }

  #logRecovered(recovered: RecoveredConference[]): void {
    for (const conference of recovered) {
      this.#options.logger.warn(
        {
          conferenceId: conference.id,
          runner: conference.runner,
          disconnectedAttendees: conference.disconnectedAttendees,
        },
        "conference ended: the instance running it stopped too long ago to call anyone back; its calls were marked disconnected",
      );
    }
  }
}
