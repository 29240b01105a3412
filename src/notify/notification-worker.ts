/**
 * Sends the notification outbox. Each message is claimed before it is sent, so with several
 * instances on one database each message goes out once; a message the server could not take is
 * retried with a doubling wait, and one it refused for good is recorded and left alone.
 */
import type { Logger } from "pino";
import type { Store } from "../store/database.js";
import {
  claimNotifications,
  markForRetry,
  markSent,
  markUndeliverable,
  type QueuedNotification,
  releaseClaims,
  releaseStaleClaims,
} from "../store/notifications.js";
import type { MailDelivery } from "./delivery.js";
import { addressOf, composeMessage, headerSafe, type MessageSettings, mailDomain } from "./message.js";

export interface NotificationWorkerOptions {
  store: Store;
  /** This instance's name as the claimer of messages; the same across its restarts. */
  worker: string;
  delivery: MailDelivery;
  settings: MessageSettings;
  /** Wait before the first retry; it doubles with each attempt up to MAX_RETRY_WAIT_MS. */
  retrySeconds: number;
  logger: Logger;
  pollMs?: number;
}

const MAX_RETRY_WAIT_MS = 3_600_000;
/** A message still failing this long after it was queued is given up. */
const GIVE_UP_AFTER_MS = 72 * 3_600_000;
/** A claim this old belongs to an instance that died while sending (sends time out well before). */
const STALE_CLAIM_MS = 5 * 60_000;
const STALE_CHECK_MS = 30_000;

interface SmtpError {
  code?: string;
  responseCode?: number;
  response?: string;
  message?: string;
}

/** A 5xx reply to the recipient or the message: the server will never take it. */
function isPermanentRefusal(error: SmtpError): boolean {
  return (
    (error.code === "EENVELOPE" || error.code === "EMESSAGE") &&
    error.responseCode !== undefined &&
    error.responseCode >= 500 &&
    error.responseCode < 600
  );
}

export class NotificationWorker {
  readonly #options: NotificationWorkerOptions;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #stopping = false;
  #lastStaleCheck = 0;

  constructor(options: NotificationWorkerOptions) {
    this.#options = options;
  }

  /** Puts back what this instance had claimed when it last stopped abruptly, then starts polling. */
  async start(): Promise<void> {
    const released = await releaseClaims(this.#options.store, this.#options.worker);
    if (released > 0) {
      this.#options.logger.warn(
        { released },
        "notifications claimed before a restart are queued again; one the server had already taken may arrive twice",
      );
    }
    this.#options.logger.info({ target: this.#options.delivery.target }, "notification e-mail delivery");
    this.#schedule(0);
  }

  /** Stops polling and waits for the message being sent; nothing claimed is left behind. */
  async stop(): Promise<void> {
    this.#stopping = true;
    clearTimeout(this.#timer);
    await this.#running;
    this.#options.delivery.close();
  }

  #schedule(delay: number): void {
    if (this.#stopping) return;
    this.#timer = setTimeout(() => {
      this.#running = this.#drain()
        .catch((error: unknown) =>
          this.#options.logger.error({ err: error }, "notification outbox poll failed"),
        )
        .finally(() => {
          this.#running = undefined;
          this.#schedule(this.#options.pollMs ?? 500);
        });
    }, delay);
  }

  /** Sends due messages one claim at a time until none is due or the worker stops. */
  async #drain(): Promise<void> {
    const { store, worker } = this.#options;
    if (Date.now() - this.#lastStaleCheck > STALE_CHECK_MS) {
      this.#lastStaleCheck = Date.now();
      const released = await releaseStaleClaims(store, new Date(Date.now() - STALE_CLAIM_MS));
      if (released > 0)
        this.#options.logger.warn({ released }, "notifications of a silent instance queued again");
    }
    while (!this.#stopping) {
      const [notification] = await claimNotifications(store, worker, new Date(), 1);
      if (notification === undefined) return;
      await this.#send(notification);
    }
  }

  async #send(notification: QueuedNotification): Promise<void> {
    const { store, worker, delivery, settings, logger } = this.#options;
    const { facts } = notification;
    const about =
      facts.kind === "webhook-disabled" ? { webhook: facts.webhook.id } : { conference: facts.conference.id };
    const log = { notification: notification.id, kind: facts.kind, ...about };
    const message = composeMessage(facts, settings);
    try {
      await delivery.send(
        {
          from: settings.from,
          to: { name: headerSafe(facts.recipient.name ?? ""), address: facts.recipient.email },
          subject: message.subject,
          text: message.text,
          html: message.html,
          icalEvent: message.calendar && {
            method: message.calendar.method,
            content: message.calendar.content,
          },
          // The same Message-ID on every attempt, so a receiver can tell a repeat from a new message.
          messageId: `<notification-${notification.id}-${Date.parse(notification.createdAt)}@${mailDomain(settings.from)}>`,
          replyTo: addressOf(settings.from) === settings.supportEmail ? undefined : settings.supportEmail,
        },
        `notification-${notification.id}-${facts.kind}`,
      );
      await markSent(store, notification.id, worker, new Date());
      logger.info(log, "notification e-mail sent");
    } catch (error) {
      const failure = error as SmtpError;
      const reason = failure.response ?? failure.message ?? String(error);
      if (isPermanentRefusal(failure)) {
        await markUndeliverable(store, notification.id, worker, "refused", reason);
        logger.warn({ ...log, reason }, "notification e-mail refused by the server; not retried");
      } else if (Date.now() - Date.parse(notification.createdAt) > GIVE_UP_AFTER_MS) {
        await markUndeliverable(store, notification.id, worker, "failed", reason);
        logger.error({ ...log, reason }, "notification e-mail given up after three days of failures");
      } else {
        const wait = Math.min(
          this.#options.retrySeconds * 1000 * 2 ** (notification.attempts - 1),
          MAX_RETRY_WAIT_MS,
        );
        await markForRetry(store, notification.id, worker, new Date(Date.now() + wait), reason);
        logger.warn(
          { ...log, reason, retryInSeconds: wait / 1000 },
          "notification e-mail not delivered; will retry",
        );
      }
    }
  }
}
