import type { AddressInfo } from "node:net";
import { type ParsedMail, simpleParser } from "mailparser";
import { SMTPServer, type SMTPServerOptions } from "smtp-server";

export interface ReceivedMail {
  /** The SMTP envelope: what the client said in MAIL FROM and RCPT TO. */
  envelope: { from: string; to: string[] };
  raw: string;
  parsed: ParsedMail;
}

export interface MailboxOptions {
  /** Required AUTH PLAIN/LOGIN credentials; omit to accept mail without. */
  auth?: { user: string; pass: string };
  /** RCPT TO addresses answered 550 (refused for good). */
  refuse?: string[];
  /** Hold the reply to each message's DATA this long (a slow server). */
  dataDelayMs?: number;
  /** Listen on this port (to come back where a stopped server was). */
  port?: number;
}

/**
 * A real SMTP server (the smtp-server package) on loopback keeping what it accepted, each message
 * parsed back with mailparser. A message counts as received only once the server has said 250.
 */
export class Mailbox {
  readonly received: ReceivedMail[] = [];
  readonly #server: SMTPServer;
  #waiters: Array<() => void> = [];

  private constructor(options: MailboxOptions) {
    const refused = new Set((options.refuse ?? []).map((address) => address.toLowerCase()));
    const serverOptions: SMTPServerOptions = {
      disabledCommands: options.auth ? ["STARTTLS"] : ["STARTTLS", "AUTH"],
      allowInsecureAuth: true,
      authOptional: options.auth === undefined,
      logger: false,
      onAuth(auth, _session, callback) {
        if (auth.username === options.auth?.user && auth.password === options.auth?.pass) {
          callback(null, { user: auth.username });
        } else {
          callback(new Error("Invalid username or password"));
        }
      },
      onRcptTo(address, _session, callback) {
        if (refused.has(address.address.toLowerCase())) {
          const error = new Error("No such user here") as Error & { responseCode: number };
          error.responseCode = 550;
          callback(error);
          return;
        }
        callback();
      },
      onData: (stream, session, callback) => {
        const chunks: Buffer[] = [];
        stream.on("data", (chunk: Buffer) => chunks.push(chunk));
        stream.on("end", () => {
          const raw = Buffer.concat(chunks).toString("utf8");
          setTimeout(() => {
            simpleParser(raw).then((parsed) => {
              this.received.push({
                envelope: {
                  from: session.envelope.mailFrom ? session.envelope.mailFrom.address : "",
                  to: session.envelope.rcptTo.map((rcpt) => rcpt.address),
                },
                raw,
                parsed,
              });
              callback();
              for (const wake of this.#waiters.splice(0)) wake();
            }, callback);
          }, options.dataDelayMs ?? 0);
        });
      },
    };
    this.#server = new SMTPServer(serverOptions);
  }

  static async start(options: MailboxOptions = {}): Promise<Mailbox> {
    const mailbox = new Mailbox(options);
    await new Promise<void>((resolve, reject) => {
      mailbox.#server.server.once("error", reject);
      mailbox.#server.listen(options.port ?? 0, "127.0.0.1", () => resolve());
    });
    return mailbox;
  }

  get port(): number {
    return (this.#server.server.address() as AddressInfo).port;
  }

  url(credentials?: { user: string; pass: string }): string {
    const auth = credentials
      ? `${encodeURIComponent(credentials.user)}:${encodeURIComponent(credentials.pass)}@`
      : "";
    return `smtp://${auth}127.0.0.1:${this.port}`;
  }

  /** Resolves once `count` messages have arrived; rejects after `timeoutMs`. */
  async waitFor(count: number, timeoutMs = 15_000): Promise<ReceivedMail[]> {
    const deadline = Date.now() + timeoutMs;
    while (this.received.length < count) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`expected ${count} messages, received ${this.received.length}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.#waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    return this.received;
  }

  /** The messages that arrive because of `change`: the next `count` after it. */
  async receiving(count: number, change: () => Promise<unknown>): Promise<ReceivedMail[]> {
    const seen = this.received.length;
    await change();
    return (await this.waitFor(seen + count)).slice(seen);
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.#server.close(() => resolve()));
  }
}
