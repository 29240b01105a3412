/**
 * A room's store writes, carried out one after another in the order the calls produced them. A write
 * that fails because the database cannot be reached (PostgreSQL restarting, a failover) is tried
 * again, and the writes after it wait, so that they all land in order once it is back; a write that
 * fails for any other reason is logged and the next goes on.
 */
import type { Clock } from "../domain/clock.js";

export interface OrderedWritesOptions {
  /** What the waits before a retry run on. */
  readonly clock: Clock;
  /** Told of a write given up (it failed for a reason that waiting does not mend). */
  readonly onError: (error: unknown) => void;
  /** Whether a failure may pass with time (the database unreachable): then the write is retried. */
  readonly retryable: (error: unknown) => boolean;
  /** Told once per outage, at its first failed attempt, and again when the write has landed. */
  readonly onRetrying?: (error: unknown) => void;
  readonly onRecovered?: (attempts: number) => void;
}

/** The first wait before a write is tried again; it doubles up to the longest. */
const FIRST_RETRY_MS = 250;
const LONGEST_RETRY_MS = 5_000;

export class OrderedWrites {
  #writes: Promise<unknown> = Promise.resolve();
  #stateWrites = 0;
  readonly #options: OrderedWritesOptions;

  constructor(options: OrderedWritesOptions) {
    this.#options = options;
  }

  /**
   * Counts the room's own changes of state as they are queued: a refresh that read the store while
   * one was on its way would read it stale, and leaves the room's controls as they are.
   */
  get stateWrites(): number {
    return this.#stateWrites;
  }

  /** A change of the room's state. */
  queue(write: () => Promise<unknown>): void {
    this.#stateWrites++;
    this.append(write);
  }

  /** A write that changes no state (an event), after those queued before it. */
  append(write: () => Promise<unknown>): void {
    this.#writes = this.#writes.then(() => this.#untilDone(write)).catch(this.#options.onError);
  }

  /** Resolves once every write queued so far is done. */
  async settled(): Promise<void> {
    await this.#writes;
  }

  async #untilDone(write: () => Promise<unknown>): Promise<void> {
    let waitMs = FIRST_RETRY_MS;
    for (let attempt = 1; ; attempt++) {
      try {
        await write();
        if (attempt > 1) this.#options.onRecovered?.(attempt);
        return;
      } catch (error) {
        if (!this.#options.retryable(error)) throw error;
        if (attempt === 1) this.#options.onRetrying?.(error);
      }
      await new Promise<void>((resolve) => this.#options.clock.setTimeout(resolve, waitMs));
      waitMs = Math.min(2 * waitMs, LONGEST_RETRY_MS);
    }
  }
}
