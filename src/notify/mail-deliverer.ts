/**
 * The notification outbox's deliverer: writes each message from its facts and hands it to the mail
 * server (or the mail folder). A message the server could not take is retried with a doubling wait
 * for three days; one it refused for good (a 5xx for the recipient or the message) is not retried.
 */
import type { Logger } from "pino";
import { OutboxWorker } from "../outbox/outbox-worker.js";
import type { Deliverer, OutboxQueue, QueuedNotification } from "../outbox/ports.js";
import type { MailDelivery } from "./delivery.js";
import { addressOf, composeMessage, headerSafe, type MessageSettings, mailDomain } from "./message.js";

export interface NotificationWorkerOptions {
  queue: OutboxQueue<QueuedNotification, MailOutcome, never>;
  /** This instance's name as the claimer of messages; the same across its restarts. */
  worker: string;
  delivery: MailDelivery;
  settings: MessageSettings;
  /** Wait before the first retry; it doubles with each attempt up to MAX_RETRY_WAIT_MS. */
  retrySeconds: number;
  logger: Logger;
  pollMs?: number;
}

/** What handing a message to the server came to. */
export type MailOutcome =
  | { readonly sent: true }
  /** refused: the server will never take it. */
  | { readonly sent: false; readonly refused: boolean; readonly reason: string };

const MAX_RETRY_WAIT_MS = 3_600_000;
/** A message still failing this long after it was queued is given up. */
const GIVE_UP_AFTER_MS = 72 * 3_600_000;

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

/** The outbox worker that sends notification e-mails, one message at a time. */
export function notificationWorker(
  options: NotificationWorkerOptions,
): OutboxWorker<QueuedNotification, MailOutcome, never> {
  return new OutboxWorker({
    queue: options.queue,
    deliverer: mailDeliverer(options),
    worker: options.worker,
    batch: 1,
    logger: options.logger,
    words: {
      restartReleased:
        "notifications claimed before a restart are queued again; one the server had already taken may arrive twice",
      staleReleased: "notifications of a silent instance queued again",
      pollFailed: "notification outbox poll failed",
    },
    pollMs: options.pollMs,
  });
}

function mailDeliverer(
  options: NotificationWorkerOptions,
): Deliverer<QueuedNotification, MailOutcome, never> {
  const { delivery, settings, logger } = options;
  return {
    async deliver({ id, createdAt, facts }) {
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
            messageId: `<notification-${id}-${Date.parse(createdAt)}@${mailDomain(settings.from)}>`,
            replyTo: addressOf(settings.from) === settings.supportEmail ? undefined : settings.supportEmail,
          },
          `notification-${id}-${facts.kind}`,
        );
        return { sent: true };
      } catch (error) {
        const failure = error as SmtpError;
        const reason = failure.response ?? failure.message ?? String(error);
        return { sent: false, refused: isPermanentRefusal(failure), reason };
      }
    },

    judge(outcome) {
      if (outcome.sent) return { kind: "delivered" };
      return { kind: outcome.refused ? "refused" : "failed", reason: outcome.reason };
    },

    nextAttemptAt({ createdAt, attempts }, now) {
      if (now - Date.parse(createdAt) > GIVE_UP_AFTER_MS) return undefined;
      return now + Math.min(options.retrySeconds * 1000 * 2 ** (attempts - 1), MAX_RETRY_WAIT_MS);
    },

    report({ message, endedAt, settlement }) {
      const { facts } = message;
      const about =
        facts.kind === "webhook-disabled"
          ? { webhook: facts.webhook.id }
          : { conference: facts.conference.id };
      const log = { notification: message.id, kind: facts.kind, ...about };
      switch (settlement.state) {
        case "delivered":
          logger.info(log, "notification e-mail sent");
          break;
        case "refused":
          logger.warn(
            { ...log, reason: settlement.reason },
            "notification e-mail refused by the server; not retried",
          );
          break;
        case "expired":
          logger.error(
            { ...log, reason: settlement.reason },
            "notification e-mail given up after three days of failures",
          );
          break;
        case "retry":
          logger.warn(
            {
              ...log,
              reason: settlement.reason,
              retryInSeconds: (settlement.at.getTime() - endedAt.getTime()) / 1000,
            },
            "notification e-mail not delivered; will retry",
          );
      }
    },

    announce() {
      logger.info({ target: delivery.target }, "notification e-mail delivery");
    },

    close() {
      delivery.close();
    },
  };
}
