/**
 * What the outbox worker needs of the world, in its own types: a queue it claims messages from and
 * settles them in (the store's adapters, one per outbox), and a deliverer that makes one attempt and
 * says what its outcome means (e-mail over SMTP in notify/, webhooks over HTTP in webhooks/). The
 * messages of the two outboxes are described here too, so that their store adapters and deliverers
 * meet on these types rather than on each other.
 */
import type { OutboxFacts } from "../domain/notification.js";
import type { AttemptOutcome } from "../domain/webhook.js";

/** A message claimed by one worker for one attempt. */
export interface ClaimedMessage {
  readonly id: number;
  /** When it was queued (ISO 8601): how long it is tried counts from then. */
  readonly createdAt: string;
  /** Attempts so far, this one included. */
  readonly attempts: number;
}

/** What an attempt's outcome means, as its deliverer reads it. */
export type Verdict =
  | { readonly kind: "delivered" }
  /** The receiver will never take it (a 5xx for the address or the message, a 410): not tried again. */
  | { readonly kind: "refused"; readonly reason: string }
  /** Tried again on the deliverer's schedule, not before the wait the receiver asked for, if it did. */
  | { readonly kind: "failed"; readonly reason: string; readonly retryAfterMs?: number | undefined };

/** What becomes of a claimed message after its attempt. */
export type Settlement =
  | { readonly state: "delivered" }
  | { readonly state: "retry"; readonly at: Date; readonly reason: string }
  | { readonly state: "refused"; readonly reason: string }
  /** Given up: it failed until its time to be tried ran out. */
  | { readonly state: "expired"; readonly reason: string };

/** An attempt made and what became of its message. */
export interface SettledAttempt<Message, Outcome> {
  readonly message: Message;
  readonly outcome: Outcome;
  /** When it started and ended, on the outbox's clock. */
  readonly at: Date;
  readonly endedAt: Date;
  readonly durationMs: number;
  readonly settlement: Settlement;
}

/**
 * One outbox's queue. A message is claimed by one worker at a time (with several instances on one
 * database too), and only its claimer may settle it.
 */
export interface OutboxQueue<Message extends ClaimedMessage, Outcome, Effect> {
  /** Claims up to `limit` messages due at `now` for `worker`, counting the attempt, oldest first. */
  claim(worker: string, now: Date, limit: number): Promise<Message[]>;
  /**
   * Records the attempt and settles its message, only while `worker` still holds its claim; returns
   * what else settling it did, for the log (for a webhook: why it was disabled).
   */
  settle(worker: string, attempt: SettledAttempt<Message, Outcome>): Promise<Effect | undefined>;
  /** Puts back what `worker` had claimed (left over from before its restart); returns how many. */
  releaseClaims(worker: string): Promise<number>;
  /** Puts back messages claimed before `before`: their claimer died while sending. */
  releaseStaleClaims(before: Date): Promise<number>;
  /** Deletes settled messages last changed before `before`, where settled ones are kept as a log. */
  prune?(before: Date): Promise<number>;
}

export interface Deliverer<Message extends ClaimedMessage, Outcome, Effect> {
  /** Makes one attempt; a failure is an outcome, not a throw. */
  deliver(message: Message): Promise<Outcome>;
  /** What the outcome means; `now` is when the attempt ended. */
  judge(outcome: Outcome, now: number): Verdict;
  /**
   * When to try a failed message again, the attempt having ended at `now` (ms); undefined when its
   * time to be tried has run out.
   */
  nextAttemptAt(message: Message, now: number, retryAfterMs: number | undefined): number | undefined;
  /** Logs an attempt once settled, with what else settling it did. */
  report(attempt: SettledAttempt<Message, Outcome>, effect: Effect | undefined): void;
  /** Logs how it delivers, when the worker starts. */
  announce?(): void;
  /** Lets go of its connections, when the worker has stopped. */
  close?(): void;
}

/** A message of the notification outbox: an e-mail to write from its facts and send. */
export interface QueuedNotification extends ClaimedMessage {
  readonly facts: OutboxFacts;
}

/** A delivery of the webhook outbox, with where it goes and how it is signed. */
export interface ClaimedDelivery extends ClaimedMessage {
  readonly webhookId: number;
  /** The webhook-id header: the same on every attempt. */
  readonly messageId: string;
  readonly payload: string;
  readonly url: string;
  readonly secret: string;
}

/** What a webhook delivery attempt came to on the wire. */
export interface DeliveryOutcome {
  readonly outcome: AttemptOutcome;
  /** The receiver's Retry-After, as sent. */
  readonly retryAfter?: string | undefined;
}
