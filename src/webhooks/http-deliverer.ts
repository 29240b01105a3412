/**
 * The webhook outbox's deliverer: checks where a delivery's URL leads, then posts it signed. A few
 * are sent at a time, so that one slow receiver does not hold up the others. A failed attempt is
 * tried again on the back-off schedule (domain/webhook.ts) for a day; a webhook none of whose
 * deliveries got through for a day, or whose receiver answered 410, is disabled and its owner told
 * by e-mail (store/webhook-outbox.ts). Delivery is at least once: an attempt whose answer was lost
 * (a timeout, a restart while sending) is made again, with the same webhook-id.
 */
import { performance } from "node:perf_hooks";
import type { Logger } from "pino";
import { attemptResult, describeOutcome, nextAttemptAt, retryAfterMs } from "../domain/webhook.js";
import { OutboxWorker } from "../outbox/outbox-worker.js";
import type { ClaimedDelivery, Deliverer, DeliveryOutcome, OutboxQueue } from "../outbox/ports.js";
import { checkDestination, type DestinationPolicy, pinnedLookup } from "./destination.js";
import { postJson } from "./post.js";
import { signedHeaders } from "./signature.js";

export interface WebhookWorkerOptions {
  queue: OutboxQueue<ClaimedDelivery, DeliveryOutcome, string>;
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
  /** Told of every delivery that got through: the seconds since it was queued (metrics). */
  onDelivered?: (sinceQueuedSeconds: number) => void;
}

/** Delivered and failed deliveries are kept this long in the log. */
export const DELIVERY_LOG_RETENTION_MS = 7 * 24 * 3_600_000;

/** The outbox worker that sends webhook deliveries. */
export function webhookWorker(
  options: WebhookWorkerOptions,
): OutboxWorker<ClaimedDelivery, DeliveryOutcome, string> {
  return new OutboxWorker({
    queue: options.queue,
    deliverer: httpDeliverer(options),
    worker: options.worker,
    batch: options.concurrency ?? 8,
    logger: options.logger,
    words: {
      restartReleased:
        "webhook deliveries claimed before a restart are queued again; a receiver may get one twice (same webhook-id)",
      staleReleased: "webhook deliveries of a silent instance queued again",
      pollFailed: "webhook outbox poll failed",
    },
    retentionMs: DELIVERY_LOG_RETENTION_MS,
    pollMs: options.pollMs,
    clock: options.clock,
  });
}

function httpDeliverer(options: WebhookWorkerOptions): Deliverer<ClaimedDelivery, DeliveryOutcome, string> {
  const { logger } = options;
  return {
    async deliver(delivery) {
      const startedMs = performance.now();
      const result = await post(delivery, options);
      // Counted before the attempt is settled: whoever sees it settled sees it counted.
      const attempt = attemptResult(result.outcome);
      options.onAttempt?.(attempt, (performance.now() - startedMs) / 1000);
      // Queued at the wall clock's time, whatever the schedule's clock says.
      if (attempt === "delivered")
        options.onDelivered?.(Math.max(0, Date.now() - Date.parse(delivery.createdAt)) / 1000);
      return result;
    },

    judge({ outcome, retryAfter }, now) {
      const result = attemptResult(outcome);
      if (result === "delivered") return { kind: "delivered" };
      const reason = describeOutcome(outcome);
      if (result === "gone") return { kind: "refused", reason };
      return { kind: "failed", reason, retryAfterMs: retryAfterMs(retryAfter, now) };
    },

    nextAttemptAt({ createdAt, attempts }, now, retryAfter) {
      return nextAttemptAt({
        createdAt: Date.parse(createdAt),
        attempts,
        now,
        baseMs: options.retryBaseMs,
        random: (options.random ?? Math.random)(),
        retryAfterMs: retryAfter,
      });
    },

    report({ message, outcome, settlement }, disabled) {
      const log = { webhook: message.webhookId, delivery: message.id, attempt: message.attempts };
      if (settlement.state === "delivered") logger.debug(log, "webhook delivered");
      else {
        const retry = settlement.state === "retry" ? settlement.at.toISOString() : undefined;
        logger.warn({ ...log, outcome: describeOutcome(outcome.outcome), retry }, "webhook delivery failed");
      }
      if (disabled !== undefined)
        logger.warn({ webhook: message.webhookId, reason: disabled }, "webhook disabled");
    },

    announce() {
      if (options.destinations.allowPrivate)
        logger.warn(
          "webhooks may call private, loopback and link-local addresses (BRIDGELINE_WEBHOOK_ALLOW_PRIVATE)",
        );
    },
  };
}

/** Checks where the URL leads now (it may have changed since the webhook was made), then posts. */
async function post(delivery: ClaimedDelivery, options: WebhookWorkerOptions): Promise<DeliveryOutcome> {
  const url = new URL(delivery.url);
  const destination = await checkDestination(url, options.destinations);
  if ("problem" in destination) return { outcome: { error: `refused: ${destination.problem}` } };
  return postJson(url, {
    // The wall clock's time, whatever the schedule's clock says: receivers compare it with theirs.
    headers: signedHeaders(delivery.secret, delivery.messageId, new Date(), delivery.payload),
    body: delivery.payload,
    timeoutMs: options.timeoutMs,
    lookup: destination.addresses.length > 0 ? pinnedLookup(destination.addresses) : undefined,
  });
}
