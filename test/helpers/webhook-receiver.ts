/**
 * A webhook receiver for tests: a real HTTP server that records every request and answers as the
 * test says (a status, or no answer for a while), and the receiver's side of Standard Webhooks,
 * written from the specification rather than taken from the service.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";

export interface ReceivedWebhook {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  /** What the receiver answered: a status, or "no answer" when it held the request past the sender's patience. */
  answer: number | "no answer";
  /** The parsed body. */
  payload: { type: string; timestamp: string; data: Record<string, unknown> & { eventId: number } };
}

/** How to answer a request: a status, or hold it for `holdMs` and then answer 200 (too late). */
export type Answer = number | { holdMs: number };

export class WebhookReceiver {
  readonly received: ReceivedWebhook[] = [];
  #answer: (request: Omit<ReceivedWebhook, "answer">) => Answer = () => 204;

  private constructor(
    private readonly server: http.Server,
    readonly url: string,
  ) {}

  static async start(): Promise<WebhookReceiver> {
    const server = http.createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const receiver = new WebhookReceiver(
      server,
      `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    );
    server.on("request", (request, response) => receiver.#handle(request, response));
    return receiver;
  }

  /** Decides every answer from now on. */
  answer(decide: (request: Omit<ReceivedWebhook, "answer">) => Answer): void {
    this.#answer = decide;
  }

  /** The requests whose answer was a 2xx that reached the sender. */
  accepted(path?: string): ReceivedWebhook[] {
    return this.received.filter(
      (request) =>
        typeof request.answer === "number" &&
        request.answer >= 200 &&
        request.answer < 300 &&
        (path === undefined || request.path === path),
    );
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  #handle(request: http.IncomingMessage, response: http.ServerResponse): void {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      const seen = { path: request.url ?? "", headers: request.headers, body, payload: JSON.parse(body) };
      const answer = this.#answer(seen);
      if (typeof answer === "number") {
        this.received.push({ ...seen, answer });
        response.writeHead(answer).end();
      } else {
        this.received.push({ ...seen, answer: "no answer" });
        setTimeout(() => {
          if (!response.destroyed) response.writeHead(200).end();
        }, answer.holdMs);
      }
    });
  }
}

/**
 * Verifies a request the Standard Webhooks way: the three headers present, the timestamp within five
 * minutes of now, and one of the `v1,` signatures equal (in constant time) to the base64 HMAC-SHA256,
 * keyed with the secret's base64 bytes, of `${id}.${timestamp}.${body}`. Returns why not, or undefined.
 */
export function verifyStandardWebhook(
  secret: string,
  headers: http.IncomingHttpHeaders,
  body: string,
  nowMs = Date.now(),
): string | undefined {
  const id = headers["webhook-id"];
  const timestamp = headers["webhook-timestamp"];
  const signatures = headers["webhook-signature"];
  if (typeof id !== "string" || typeof timestamp !== "string" || typeof signatures !== "string")
    return "a webhook- header is missing";
  if (!/^\d+$/.test(timestamp) || Math.abs(nowMs / 1000 - Number(timestamp)) > 300)
    return `timestamp ${timestamp} is not within five minutes of now`;
  const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64");
  const expected = createHmac("sha256", key).update(`${id}.${timestamp}.${body}`).digest();
  const matches = signatures.split(" ").some((entry) => {
    const [version, mac = ""] = entry.split(",");
    const given = Buffer.from(mac, "base64");
    return version === "v1" && given.length === expected.length && timingSafeEqual(given, expected);
  });
  return matches ? undefined : "no signature matches";
}
