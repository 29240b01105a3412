/**
 * Sends an outbox: claims due messages, makes an attempt at each through its deliverer, and settles
 * it. A message is claimed before it is attempted, so with several instances on one database each
 * attempt is made once; a failed one is tried again on the deliverer's schedule until its time runs
 * out, and one the receiver refused for good is recorded and left alone. Delivery is at least once:
 * a message whose attempt was cut short (a crash while sending) is claimed and attempted again.
 */
import { performance } from "node:perf_hooks";
import type { Logger } from "pino";
import type { ClaimedMessage, Deliverer, OutboxQueue, Settlement, Verdict } from "./ports.js";

export interface OutboxWorkerOptions<Message extends ClaimedMessage, Outcome, Effect> {
  queue: OutboxQueue<Message, Outcome, Effect>;
  deliverer: Deliverer<Message, Outcome, Effect>;
  /** This instance's name as the claimer of messages; the same across its restarts. */
  worker: string;
  /** Messages claimed and attempted at once (so that one slow receiver does not hold up the rest). */
  batch: number;
  logger: Logger;
  /** The log's words for what the worker does of itself. */
  words: {
    /** Claims left from before a restart put back. */
    restartReleased: string;
    /** Claims of a silent instance put back. */
    staleReleased: string;
    pollFailed: string;
  };
  /** Settled messages are kept this long, then pruned (when the queue keeps them). */
  retentionMs?: number;
  pollMs?: number;
  /** The clock that decides what is due and when to try again (a test moves it on by hours). */
  clock?: () => Date;
}

/** A claim this old belongs to an instance that died while sending (attempts end well before). */
const STALE_CLAIM_MS = 5 * 60_000;
const STALE_CHECK_MS = 30_000;
const PRUNE_EVERY_MS = 10 * 60_000;

export class OutboxWorker<Message extends ClaimedMessage, Outcome, Effect> {
  readonly #options: OutboxWorkerOptions<Message, Outcome, Effect>;
  readonly #clock: () => Date;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #stopping = false;
  #lastStaleCheck = 0;
  #lastPrune = 0;

  constructor(options: OutboxWorkerOptions<Message, Outcome, Effect>) {
    this.#options = options;
    this.#clock = options.clock ?? (() => new Date());
  }

  /** Puts back what this instance had claimed when it last stopped abruptly, then starts polling. */
  async start(): Promise<void> {
    const { queue, worker, logger, words } = this.#options;
    const released = await queue.releaseClaims(worker);
    if (released > 0) logger.warn({ released }, words.restartReleased);
    this.#options.deliverer.announce?.();
    this.#schedule(0);
  }

  /** Stops polling and waits for the attempts in flight; nothing claimed is left behind. */
  async stop(): Promise<void> {
    this.#stopping = true;
    clearTimeout(this.#timer);
    await this.#running;
    this.#options.deliverer.close?.();
  }

  #schedule(delay: number): void {
    if (this.#stopping) return;
    this.#timer = setTimeout(() => {
      this.#running = this.#drain()
        .catch((error: unknown) => this.#options.logger.error({ err: error }, this.#options.words.pollFailed))
        .finally(() => {
          this.#running = undefined;
          this.#schedule(this.#options.pollMs ?? 500);
        });
    }, delay);
  }

  /** Attempts due messages, a batch at a time, until none is due or the worker stops. */
  async #drain(): Promise<void> {
    const { queue, worker, logger, retentionMs } = this.#options;
    const now = this.#clock().getTime();
    if (now - this.#lastStaleCheck > STALE_CHECK_MS) {
      this.#lastStaleCheck = now;
      const released = await queue.releaseStaleClaims(new Date(now - STALE_CLAIM_MS));
      if (released > 0) logger.warn({ released }, this.#options.words.staleReleased);
    }
    if (retentionMs !== undefined && queue.prune !== undefined && now - this.#lastPrune > PRUNE_EVERY_MS) {
      this.#lastPrune = now;
      await queue.prune(new Date(now - retentionMs));
    }
    while (!this.#stopping) {
      const claimed = await queue.claim(worker, this.#clock(), this.#options.batch);
      if (claimed.length === 0) return;
      await Promise.all(claimed.map((message) => this.#attempt(message)));
    }
  }

  async #attempt(message: Message): Promise<void> {
    const { queue, deliverer, worker } = this.#options;
    const at = this.#clock();
    const startedMs = performance.now();
    const outcome = await deliverer.deliver(message);
    const durationMs = performance.now() - startedMs;
    const endedAt = new Date(at.getTime() + durationMs);
    const verdict = deliverer.judge(outcome, endedAt.getTime());
    const settlement = this.#settlement(message, verdict, endedAt.getTime());
    const attempt = { message, outcome, at, endedAt, durationMs, settlement };
    const effect = await queue.settle(worker, attempt);
    deliverer.report(attempt, effect);
  }

  #settlement(message: Message, verdict: Verdict, now: number): Settlement {
    if (verdict.kind === "delivered") return { state: "delivered" };
    if (verdict.kind === "refused") return { state: "refused", reason: verdict.reason };
    const next = this.#options.deliverer.nextAttemptAt(message, now, verdict.retryAfterMs);
    return next === undefined
      ? { state: "expired", reason: verdict.reason }
      : { state: "retry", at: new Date(next), reason: verdict.reason };
  }
}
