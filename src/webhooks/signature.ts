/**
 * Standard Webhooks signing (symmetric): the secret is `whsec_` and the base64 of 24 random bytes;
 * each request carries webhook-id, webhook-timestamp (Unix seconds) and webhook-signature,
 * `v1,` and the base64 HMAC-SHA256, keyed with the secret's bytes, of `${id}.${timestamp}.${body}`.
 */
import { createHmac, randomBytes } from "node:crypto";

const SECRET_PREFIX = "whsec_";
/** The spec asks for at least 24 bytes (192 bits). */
const SECRET_BYTES = 24;

export function newSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(SECRET_BYTES).toString("base64")}`;
}

/** The webhook-signature value for one attempt. */
export function signature(secret: string, messageId: string, timestampSeconds: number, body: string): string {
  const key = Buffer.from(
    secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret,
    "base64",
  );
  const mac = createHmac("sha256", key).update(`${messageId}.${timestampSeconds}.${body}`).digest("base64");
  return `v1,${mac}`;
}

/** The Standard Webhooks headers of one attempt (the timestamp is the attempt's, not the event's). */
export function signedHeaders(
  secret: string,
  messageId: string,
  at: Date,
  body: string,
): Record<"webhook-id" | "webhook-timestamp" | "webhook-signature", string> {
  const timestampSeconds = Math.floor(at.getTime() / 1000);
  return {
    "webhook-id": messageId,
    "webhook-timestamp": String(timestampSeconds),
    "webhook-signature": signature(secret, messageId, timestampSeconds, body),
  };
}
