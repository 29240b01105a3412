/**
 * Starts conferences on time. The schedule is the database itself: every poll claims the pending
 * conferences that are due (so a restart, a reschedule or a delete takes effect at the next poll),
 * each claimed by exactly one instance. It also keeps this instance's heartbeat on the conferences it
 * runs and among the instances alive, ends the conferences of instances that died, and reports the
 * due conferences that no instance had room to start.
 */
import type { Clock, TimerHandle } from "../domain/clock.js";
import type { Conference } from "../domain/conference.js";
import type { DelayedConference, RecoveredConference, SchedulerStore } from "./ports.js";

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
  /** Runs a conference this instance has just claimed (state started), with its attendee count. */
  readonly startConference: (conference: Conference, attendees: number) => void;
  /** How often due conferences are looked for; a conference starts at most this late. */
  readonly pollIntervalMs?: number;
  readonly heartbeatIntervalMs?: number;
  /** A runner silent for this long is taken for dead and its conferences ended. */
  readonly staleAfterMs?: number;
}

const DEFAULT_POLL_INTERVAL_MS = 250;
const DEFAULT_HEARTBEAT_INTERVAL_MS = 5_000;
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
  #stopped = false;

  constructor(options: SchedulerOptions) {
    this.#options = options;
  }

  /** Ends what an earlier run of this instance left started, then starts polling. */
  async start(): Promise<void> {
    const now = this.#now();
    const recovered = await this.#options.store.recoverAbandonedConferences(
      { ownRunner: this.#options.runner, staleBefore: this.#staleBefore(now) },
      now,
    );
    this.#logRecovered(recovered);
    await this.#renewInstance(now);
    this.#schedulePoll(0);
    this.#scheduleBeat();
  }

  /** Stops polling; a claim in progress finishes first. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#options.clock.clearTimeout(this.#pollTimer);
    this.#options.clock.clearTimeout(this.#heartbeatTimer);
    await this.#running;
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
        const claimed = await store.claimDueConference(claimant, this.#now());
        if (claimed === undefined) return;
        const { conference, attendees } = claimed;
        logger.info({ conferenceId: conference.id }, "conference started");
        try {
          this.#options.startConference(conference, attendees);
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
    this.#heartbeatTimer = this.#options.clock.setTimeout(() => {
      this.#scheduleBeat();
      void this.#beat();
    }, this.#options.heartbeatIntervalMs ?? DEFAULT_HEARTBEAT_INTERVAL_MS);
  }

  async #beat(): Promise<void> {
    const { store, runner, logger } = this.#options;
    const now = this.#now();
    try {
      await store.renewHeartbeat(runner, now);
      await this.#renewInstance(now);
      this.#logDelayed(await store.markDelayedConferences(new Date(now.getTime() - DELAYED_AFTER_MS), now));
      this.#logRecovered(
        await store.recoverAbandonedConferences({ staleBefore: this.#staleBefore(now) }, now),
      );
    } catch (error) {
      logger.warn({ err: error }, "conference heartbeat failed; trying again");
    }
  }

  /** Says this instance is alive at its SIP URI, and learns where the others are. */
  async #renewInstance(now: Date): Promise<void> {
    const { store, runner, sipUri, onOtherInstances } = this.#options;
    if (sipUri === undefined || sipUri === null) return;
    const others = await store.renewSipInstance({ runner, sipUri }, this.#staleBefore(now), now);
    onOtherInstances?.(others);
  }

  #now(): Date {
    return new Date(this.#options.clock.now());
  }

  #staleBefore(now: Date): Date {
    return new Date(now.getTime() - (this.#options.staleAfterMs ?? DEFAULT_STALE_AFTER_MS));
  }

  /** Once per conference (and scheduled start), by the instance that marked it delayed. */
  #logDelayed(delayed: DelayedConference[]): void {
    for (const conference of delayed) {
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
        "conference ended: the instance running it stopped; its calls were marked disconnected",
      );
    }
  }
}
