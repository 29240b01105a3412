/**
 * A drift-free tick source for the 20 ms media frame pace. Tick n is due at start + n * interval on
 * `performance.now()`, and each wait is timed to the next due tick (setInterval would add each
 * callback's lateness to all later ticks). When the event loop was blocked, the overdue ticks run back
 * to back, so the number of ticks keeps up with wall time; past `maxCatchUpTicks` the oldest overdue
 * ticks are skipped and counted instead, so a long stall does not become a burst of stale frames.
 */

export interface MediaClockOptions {
  /** Milliseconds between ticks, default 20. */
  intervalMs?: number;
  /** Most overdue ticks run back to back after a stall, default 5 (100 ms of frames); the rest are skipped. */
  maxCatchUpTicks?: number;
  onTick: () => void;
}

export interface LatenessPercentiles {
  /** Milliseconds each tick ran after its due time, over the last `LATENESS_WINDOW` ticks; 0 before any tick. */
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
}

/** Lateness is kept for this many of the most recent ticks (60 s at 20 ms). */
export const LATENESS_WINDOW = 3000;

/** Upper bounds (ms) of the lateness histogram's buckets; one more bucket takes the rest. */
export const LATENESS_BUCKETS_MS: readonly number[] = [0.5, 1, 2, 5, 10, 20, 50, 100];

/** Every tick's lateness since the clock was made, counted into LATENESS_BUCKETS_MS (for metrics). */
export interface LatenessHistogram {
  /** Ticks per bucket, not cumulative; the last is the ticks later than the last bound. */
  readonly counts: readonly number[];
  readonly sumMs: number;
  readonly count: number;
}

export class MediaClock {
  readonly #intervalMs: number;
  readonly #maxCatchUpTicks: number;
  readonly #onTick: () => void;
  #timer: NodeJS.Timeout | undefined;
  #running = false;
  /** Counts start() calls, so a batch of ticks notices a stop() and start() made by onTick. */
  #run = 0;
  /** performance.now() at start(): tick n is due at #origin + n * #intervalMs. */
  #origin = 0;
  #nextTick = 1;
  #ticks = 0;
  #skipped = 0;
  readonly #lateness = new Float64Array(LATENESS_WINDOW);
  #latenessCount = 0;
  #latenessNext = 0;
  readonly #latenessBuckets = new Float64Array(LATENESS_BUCKETS_MS.length + 1);
  #latenessSumMs = 0;

  constructor(options: MediaClockOptions) {
    const { intervalMs = 20, maxCatchUpTicks = 5, onTick } = options;
    if (!(intervalMs > 0)) throw new RangeError("intervalMs must be positive");
    if (!(maxCatchUpTicks >= 1)) throw new RangeError("maxCatchUpTicks must be at least 1");
    this.#intervalMs = intervalMs;
    this.#maxCatchUpTicks = maxCatchUpTicks;
    this.#onTick = onTick;
  }

  /** Ticks run since construction. */
  get ticks(): number {
    return this.#ticks;
  }

  /** Ticks skipped because more than `maxCatchUpTicks` were overdue at once. */
  get skipped(): number {
    return this.#skipped;
  }

  get running(): boolean {
    return this.#running;
  }

  /** Starts ticking: the first tick is due one interval from now. No-op while running. */
  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#run++;
    this.#origin = performance.now();
    this.#nextTick = 1;
    this.#schedule(this.#origin);
  }

  /** Stops ticking; no-op when stopped. Safe to call from onTick. */
  stop(): void {
    this.#running = false;
    if (this.#timer !== undefined) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
  }

  /** Starts a new lateness record: the percentiles cover the ticks from now on. */
  resetLateness(): void {
    this.#latenessCount = 0;
    this.#latenessNext = 0;
  }

  latenessPercentiles(): LatenessPercentiles {
    const count = this.#latenessCount;
    if (count === 0) return { p50: 0, p99: 0, max: 0 };
    const sorted = this.#lateness.slice(0, count).sort();
    const at = (fraction: number): number => sorted[Math.min(count - 1, Math.floor(fraction * count))] ?? 0;
    return { p50: at(0.5), p99: at(0.99), max: sorted[count - 1] ?? 0 };
  }

  latenessHistogram(): LatenessHistogram {
    return { counts: [...this.#latenessBuckets], sumMs: this.#latenessSumMs, count: this.#ticks };
  }

  #schedule(now: number): void {
    const due = this.#origin + this.#nextTick * this.#intervalMs;
    // Node's timers count whole milliseconds from the event loop's cached time, so one can fire a
    // little before `due`; the wait is rounded up, and an early wake-up just waits again.
    this.#timer = setTimeout(this.#fire, Math.max(0, Math.ceil(due - now)));
    this.#timer.unref();
  }

  readonly #fire = (): void => {
    this.#timer = undefined;
    if (!this.#running) return;
    const now = performance.now();
    let overdue = Math.max(0, Math.floor((now - this.#origin) / this.#intervalMs) - this.#nextTick + 1);
    if (overdue > this.#maxCatchUpTicks) {
      const skip = overdue - this.#maxCatchUpTicks;
      this.#nextTick += skip;
      this.#skipped += skip;
      overdue = this.#maxCatchUpTicks;
    }
    const origin = this.#origin;
    const run = this.#run;
    const firstTick = this.#nextTick;
    this.#nextTick += overdue;
    // The next wait is armed before the ticks run, so their own run time does not delay it and a
    // throwing onTick does not stop the clock.
    this.#schedule(now);
    for (let i = 0; i < overdue && this.#running && this.#run === run; i++) {
      this.#recordLateness(performance.now() - (origin + (firstTick + i) * this.#intervalMs));
      this.#ticks++;
      this.#onTick();
    }
  };

  #recordLateness(ms: number): void {
    let bucket = 0;
    while (bucket < LATENESS_BUCKETS_MS.length && ms > (LATENESS_BUCKETS_MS[bucket] as number)) bucket++;
    this.#latenessBuckets[bucket] = (this.#latenessBuckets[bucket] as number) + 1;
    this.#latenessSumMs += ms;
    this.#lateness[this.#latenessNext] = ms;
    this.#latenessNext = (this.#latenessNext + 1) % LATENESS_WINDOW;
    if (this.#latenessCount < LATENESS_WINDOW) this.#latenessCount++;
  }
}
