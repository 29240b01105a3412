/**
 * Pacing of the calls placed through each trunk, as carriers limit them: at most `calls-per-second`
 * INVITEs a second and `max-channels` calls at once (from the INVITE sent until the call has failed
 * or ended); past either, a carrier answers 503 or 403. A call passes its trunk's gate before its
 * INVITE's server is looked up; calls that must wait queue in order, a trunk's own queue, bounded.
 * Each gate's state is explicit (its channels taken, its queue, when the next call may go, whether
 * it is closed) and its one timer runs on the telephony's Clock. Told in docs/telephony.md#trunk-profiles.
 *
 * Calls per second as fixed spacing, not a token bucket: a call goes at least 1/cps after the one
 * before it went, so 2 calls a second go at 0, 500 and 1000 ms, never two together. A bucket would
 * let a burst of a second's worth go at once after a quiet spell (a room of ten dialled at 10 CPS:
 * ten INVITEs in the same millisecond), and carriers do not all count per whole second: many count
 * over a sliding window, some in tenths of a second, and refuse the burst a bucket allows. Each
 * INVITE leaves once its server is looked up and its media opened, some milliseconds after its
 * turn, more on a loaded machine: the turn is told when its INVITE went (`sent`), and the spacing
 * counts from then too, so that a slow first call's INVITE and the next one's never go together.
 * It costs a room nothing it would notice (the tenth attendee of a room at 10 CPS rings 0.9 s after
 * the first). The spacing counts from when the last turn truly came (or its INVITE went), not when
 * it was due, so a timer that fires late never makes the next early.
 */
import type { Clock, TimerHandle } from "../domain/clock.js";
import type { Trunk } from "./trunk.js";

/** Which limit a call waits for. */
export type PacingLimit = "max-channels" | "calls-per-second";

/** A trunk's limits (its profile's `calls-per-second` and `max-channels`); each left out: no limit. */
export interface PacingLimits {
  /** INVITEs a second, at least MIN_CALLS_PER_SECOND, fractions allowed (0.5: one every 2 s). */
  readonly callsPerSecond?: number;
  /** Calls through the trunk at once, at least 1. */
  readonly maxChannels?: number;
}

/**
 * The slowest rate a trunk may have, one call every 1000 s: a gap longer than Node's timers can
 * wait (2^31 ms, 24.8 days) would fire at once, and no carrier asks for less.
 */
export const MIN_CALLS_PER_SECOND = 0.001;

/** Calls one trunk keeps waiting at most: past it the newest is refused (503 "trunk queue full"). */
export const MAX_QUEUED_CALLS = 1000;
export const QUEUE_FULL = "trunk queue full";
export const SHUTTING_DOWN = "shutting down";

/** What a waiting call is told later (never from within `enter`: its state says what happened there). */
export interface TurnEvents {
  /** Its turn came: its INVITE may go now. */
  go(): void;
  /** It will not go: the gate closed. */
  refused(reason: string): void;
}

/**
 * A call's place at a gate: waiting (for `why`), through (holding a channel), refused (never let
 * in, or dropped at close) or over (its channel or place given back).
 */
export type TurnState =
  | { readonly kind: "waiting"; readonly why: PacingLimit }
  | { readonly kind: "through" }
  | { readonly kind: "refused"; readonly reason: string }
  | { readonly kind: "over" };

/** What `enter` gives back: the turn's state, and how to give back what it holds. */
export interface Turn {
  readonly state: TurnState;
  /**
   * The call has failed or ended (or was hung up while it waited): its channel, or its place in the
   * queue, goes to the next. Idempotent; nothing once refused.
   */
  release(): void;
  /** Its INVITE went now: the next call's goes no sooner than the spacing after it. */
  sent(): void;
}

class GateTurn implements Turn {
  state: TurnState;

  constructor(
    readonly gate: TrunkGate,
    readonly events: TurnEvents,
    state: TurnState,
  ) {
    this.state = state;
  }

  release(): void {
    this.gate.release(this);
  }

  sent(): void {
    this.gate.sent(this);
  }
}

/** One trunk's gate. */
export class TrunkGate {
  readonly #clock: Clock;
  /** Milliseconds from one call going to the next; 0 without a rate. */
  readonly #spacingMs: number;
  readonly #maxChannels: number;
  #channels = 0;
  readonly #queue: GateTurn[] = [];
  /** When the next call may go: the last one's time plus the spacing. */
  #nextAt = Number.NEGATIVE_INFINITY;
  /** Armed while the head of the queue waits for its time (and a channel is free). */
  #timer: TimerHandle | undefined;
  #closed = false;

  constructor(clock: Clock, limits: PacingLimits) {
    const { callsPerSecond, maxChannels } = limits;
    if (
      callsPerSecond !== undefined &&
      !(callsPerSecond >= MIN_CALLS_PER_SECOND && Number.isFinite(callsPerSecond))
    )
      throw new Error(
        `calls per second must be a number of at least ${MIN_CALLS_PER_SECOND}, got ${callsPerSecond}`,
      );
    if (maxChannels !== undefined && !(Number.isInteger(maxChannels) && maxChannels >= 1))
      throw new Error(`max channels must be a whole number of at least 1, got ${maxChannels}`);
    this.#clock = clock;
    this.#spacingMs = callsPerSecond === undefined ? 0 : 1000 / callsPerSecond;
    this.#maxChannels = maxChannels ?? Number.POSITIVE_INFINITY;
  }

  /** Calls holding a channel: let through and not yet failed or ended. */
  get channels(): number {
    return this.#channels;
  }

  /** Calls waiting their turn. */
  get queued(): number {
    return this.#queue.length;
  }

  /**
   * A call asks to go. Its turn says at once whether it went (through), waits (told `go` later, or
   * `refused` at close) or is refused (the queue full, the gate closed).
   */
  enter(events: TurnEvents): Turn {
    if (this.#closed) return new GateTurn(this, events, { kind: "refused", reason: SHUTTING_DOWN });
    if (this.#queue.length === 0 && this.#channels < this.#maxChannels && this.#clock.now() >= this.#nextAt) {
      const turn = new GateTurn(this, events, { kind: "through" });
      this.#take();
      return turn;
    }
    if (this.#queue.length >= MAX_QUEUED_CALLS)
      return new GateTurn(this, events, { kind: "refused", reason: QUEUE_FULL });
    const why: PacingLimit = this.#channels >= this.#maxChannels ? "max-channels" : "calls-per-second";
    const turn = new GateTurn(this, events, { kind: "waiting", why });
    this.#queue.push(turn);
    this.#drain();
    return turn;
  }

  release(turn: GateTurn): void {
    const { kind } = turn.state;
    if (kind === "refused" || kind === "over") return;
    turn.state = { kind: "over" };
    if (kind === "through") this.#channels--;
    else {
      const place = this.#queue.indexOf(turn);
      if (place >= 0) this.#queue.splice(place, 1);
    }
    this.#drain();
  }

  sent(turn: GateTurn): void {
    if (turn.state.kind !== "through") return;
    const nextAt = this.#clock.now() + this.#spacingMs;
    if (nextAt <= this.#nextAt) return;
    this.#nextAt = nextAt;
    // A head already waiting for the earlier time waits for this one.
    this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#drain();
  }

  /** Refuses every waiting call and clears the timer; calls through keep their channels until released. */
  close(): void {
    this.#closed = true;
    this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    const waiting = this.#queue.splice(0);
    for (const turn of waiting) turn.state = { kind: "refused", reason: SHUTTING_DOWN };
    for (const turn of waiting) turn.events.refused(SHUTTING_DOWN);
  }

  #take(): void {
    this.#channels++;
    this.#nextAt = this.#clock.now() + this.#spacingMs;
  }

  /** Lets the queue's head go while a channel is free and its time has come; else waits for it. */
  #drain(): void {
    while (!this.#closed && this.#channels < this.#maxChannels) {
      const head = this.#queue[0];
      if (head === undefined) break;
      const waitMs = this.#nextAt - this.#clock.now();
      if (waitMs > 0) {
        this.#timer ??= this.#clock.setTimeout(() => {
          this.#timer = undefined;
          this.#drain();
        }, waitMs);
        return;
      }
      this.#queue.shift();
      head.state = { kind: "through" };
      this.#take();
      // Its state is set first: a call that fails at once, within go(), gives its channel back.
      head.events.go();
    }
    // Nothing waits for a time now (no one waiting, or every channel taken: a release drains again).
    this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}

/** A trunk's figures, for the metrics: by its URI. */
export interface TrunkPacingStats {
  readonly trunk: string;
  /** Calls waiting their turn. */
  readonly queued: number;
  /** Calls through it now: from the INVITE sent until failed or ended. */
  readonly channels: number;
}

/** Every trunk's gate (a trunk without limits has one too, letting every call through: its channels are counted). */
export class TrunkPacing {
  readonly #gates: ReadonlyMap<Trunk, TrunkGate>;

  constructor(clock: Clock, trunks: readonly Trunk[]) {
    this.#gates = new Map(trunks.map((trunk) => [trunk, new TrunkGate(clock, trunk)]));
  }

  /** The gate of `trunk`: one of those given, else a throw (a trunk not in the dial plan). */
  gate(trunk: Trunk): TrunkGate {
    const gate = this.#gates.get(trunk);
    if (gate === undefined) throw new Error(`no gate for the trunk ${trunk.uri}`);
    return gate;
  }

  stats(): TrunkPacingStats[] {
    return [...this.#gates].map(([trunk, gate]) => ({
      trunk: trunk.uri,
      queued: gate.queued,
      channels: gate.channels,
    }));
  }

  close(): void {
    for (const gate of this.#gates.values()) gate.close();
  }
}
