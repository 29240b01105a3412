/**
 * Sends the webhook outbox. Each due delivery is claimed before it is sent, so with several instances
 * on one database each attempt is made once; a few are sent at a time, so that one slow receiver does
 * not hold up the others. A failed attempt is tried again on the back-off schedule (domain/webhook.ts)
 * for a day; a webhook none of whose deliveries got through for a day, or whose receiver answered 410,
 * is disabled and its owner told by e-mail. Delivery is at least once: an attempt whose answer was
 * lost (a timeout, a restart while sending) is made again, with the same webhook-id.
 */
import { performance } from "node:perf_hooks";
import type { Logger } from "pino";
import {
  type AttemptOutcome,
  attemptResult,
  describeOutcome,
  failingReason,
  GONE_REASON,
  nextAttemptAt,
  retryAfterMs,
} from "../domain/webhook.js";
import type { Store } from "../store/database.js";
import {
  type AttemptSettlement,
  type ClaimedDelivery,
  claimDeliveries,
  pruneDeliveries,
  recordAttempt,
  releaseDeliveryClaims,
  releaseStaleDeliveryClaims,
} from "../store/webhooks.js";
import { checkDestination, type DestinationPolicy, pinnedLookup } from "./destination.js";
import { postJson } from "./post.js";
import { signedHeaders } from "./signature.js";

export interface WebhookWorkerOptions {
  store: Store;
  /** This instance's name as the claimer of deliveries; the same across its restarts. */
  worker: string;
  destinations: DestinationPolicy;
  /** How long a receiver has to answer an attempt. */
  timeoutMs: number;
  /** The first wait before trying again; later waits are multiples of it (domain RETRY_MULTIPLES). */
  retryBaseMs: number;
  logger: Logger;
  /** Attempts in flight at once. */
  concurrency?: number;
  pollMs?: number;
  /** The clock that decides what is due and when to try again (a test moves it on by hours). */
  clock?: () => Date;
  /** 0 to 1, for the retry jitter. */
  random?: () => number;
  /** Told of every attempt's result (metrics). */
  onAttempt?: (result: "delivered" | "failed" | "gone", seconds: number) => void;
}

/** A claim this old belongs to an instance that died while sending (attempts end well before). */
const STALE_CLAIM_MS = 5 * 60_000;
const STALE_CHECK_MS = 30_000;
/** Delivered and failed deliveries are kept this long in the log. */
export const DELIVERY_LOG_RETENTION_MS = 7 * 24 * 3_600_000;
const PRUNE_EVERY_MS = 10 * 60_000;

export class WebhookWorker {
  readonly #options: WebhookWorkerOptions;
  readonly #clock: () => Date;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #stopping = false;
  #lastStaleCheck = 0;
  #lastPrune = 0;

  constructor(options: WebhookWorkerOptions) {
    this.#options = options;
    this.#clock = options.clock ?? (() => new Date());
  }

  /** Puts back what this instance had claimed when it last stopped abruptly, then starts polling. */
  async start(): Promise<void> {
    const released = await releaseDeliveryClaims(this.#options.store, this.#options.worker);
    if (released > 0) {
      this.#options.logger.warn(
        { released },
        "webhook deliveries claimed before a restart are queued again; a receiver may get one twice (same webhook-id)",
      );
    }
    if (this.#options.destinations.allowPrivate)
      this.#options.logger.warn(
        "webhooks may call private, loopback and link-local addresses (BRIDGELINE_WEBHOOK_ALLOW_PRIVATE)",
      );
    this.#schedule(0);
  }

  /** Stops polling and waits for the attempts in flight; nothing claimed is left behind. */
  async stop(): Promise<void> {
    this.#stopping = true;
    clearTimeout(this.#timer);
    await this.#running;
  }

  #schedule(delay: number): void {
    if (this.#stopping) return;
    this.#timer = setTimeout(() => {
      this.#running = this.#drain()
        .catch((error: unknown) => this.#options.logger.error({ err: error }, "webhook outbox poll failed"))
        .finally(() => {
          this.#running = undefined;
          this.#schedule(this.#options.pollMs ?? 500);
        });
    }, delay);
  }

  /** Sends due deliveries, a batch at a time, until none is due or the worker stops. */
  async #drain(): Promise<void> {
    const { store, worker, logger } = this.#options;
    const now = this.#clock().getTime();
    if (now - this.#lastStaleCheck > STALE_CHECK_MS) {
      this.#lastStaleCheck = now;
      const released = await releaseStaleDeliveryClaims(store, new Date(now - STALE_CLAIM_MS));
      if (released > 0) logger.warn({ released }, "webhook deliveries of a silent instance queued again");
    }
    if (now - this.#lastPrune > PRUNE_EVERY_MS) {
      this.#lastPrune = now;
      await pruneDeliveries(store, new Date(now - DELIVERY_LOG_RETENTION_MS));
    }
    while (!this.#stopping) {
      const claimed = await claimDeliveries(store, worker, this.#clock(), this.#options.concurrency ?? 8);
      if (claimed.length === 0) return;
      await Promise.all(claimed.map((delivery) => this.#attempt(delivery)));
    }
  }

  async #attempt(delivery: ClaimedDelivery): Promise<void> {
    const { store, worker, logger } = this.#options;
    const log = { webhook: delivery.webhookId, delivery: delivery.id, attempt: delivery.attempts };
    const started = this.#clock();
    const startedMs = performance.now();
    const { outcome, retryAfter } = await this.#send(delivery);
    const seconds = (performance.now() - startedMs) / 1000;
    const ended = new Date(started.getTime() + seconds * 1000);
    const result = attemptResult(outcome);
    this.#options.onAttempt?.(result, seconds);
    const settlement = this.#settlement(delivery, result, ended, retryAfter);
    const disabled = await recordAttempt(store, {
      delivery,
      worker,
      attempt: {
        at: started,
        statusCode: "status" in outcome ? outcome.status : null,
        error: "error" in outcome ? outcome.error : null,
        durationMs: seconds * 1000,
      },
      settlement,
      failingReason,
      noticeAt: new Date(),
    });
    if (result === "delivered") logger.debug(log, "webhook delivered");
    else {
      const retry = settlement.state === "pending" ? settlement.nextAttemptAt.toISOString() : undefined;
      logger.warn({ ...log, outcome: describeOutcome(outcome), retry }, "webhook delivery failed");
    }
    if (disabled !== undefined)
      logger.warn({ webhook: delivery.webhookId, reason: disabled }, "webhook disabled");
  }

  #settlement(
    delivery: ClaimedDelivery,
    result: "delivered" | "gone" | "failed",
    ended: Date,
    retryAfter: string | undefined,
  ): AttemptSettlement {
    if (result === "delivered") return { state: "delivered" };
    if (result === "gone") return { state: "gone", reason: GONE_REASON };
    const now = ended.getTime();
    const next = nextAttemptAt({
      createdAt: Date.parse(delivery.createdAt),
      attempts: delivery.attempts,
      now,
      baseMs: this.#options.retryBaseMs,
      random: (this.#options.random ?? Math.random)(),
      retryAfterMs: retryAfterMs(retryAfter, now),
    });
    return next === undefined ? { state: "failed" } : { state: "pending", nextAttemptAt: new Date(next) };
  }

  /** Checks where the URL leads now (it may have changed since the webhook was made), then posts. */
  async #send(
    delivery: ClaimedDelivery,
  ): Promise<{ outcome: AttemptOutcome; retryAfter?: string | undefined }> {
    const url = new URL(delivery.url);
    const destination = await checkDestination(url, this.#options.destinations);
    if ("problem" in destination) return { outcome: { error: `refused: ${destination.problem}` } };
    return postJson(url, {
      // The wall clock's time, whatever the schedule's clock says: receivers compare it with theirs.
      headers: signedHeaders(delivery.secret, delivery.messageId, new Date(), delivery.payload),
      body: delivery.payload,
      timeoutMs: this.#options.timeoutMs,
      lookup: destination.addresses.length > 0 ? pinnedLookup(destination.addresses) : undefined,
    });
  }
}
