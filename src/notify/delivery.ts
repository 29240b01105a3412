/**
 * Where composed messages go: an SMTP server (BRIDGELINE_SMTP_URL) through nodemailer, or, without
 * one, .eml files in the data directory's mail folder that a newcomer can open to see what would
 * have been sent.
 */
import fs from "node:fs/promises";
import path from "node:path";
import type { Transporter } from "nodemailer";
import type Mail from "nodemailer/lib/mailer/index.js";

export interface MailDelivery {
  /** Resolves once the server has accepted the message (or the file is complete); throws otherwise. */
  send(message: Mail.Options, name: string): Promise<void>;
  close(): void;
  /** Where messages go, for the log; never the credentials. */
  readonly target: string;
}

/**
 * A nodemailer transport made at the first message: nodemailer is some forty modules, loaded then
 * rather than at start, which it would slow down for a service that may send no mail for hours.
 */
function lazyTransport<Info>(
  make: (nodemailer: typeof import("nodemailer")["default"]) => Transporter<Info>,
): { sendMail(message: Mail.Options): Promise<Info>; close(): void } {
  let transport: Promise<Transporter<Info>> | undefined;
  return {
    async sendMail(message) {
      transport ??= import("nodemailer").then((module) => make(module.default));
      return (await transport).sendMail(message);
    },
    close: () => void transport?.then((made) => made.close()),
  };
}

export function smtpDelivery(url: string): MailDelivery {
  const transport = lazyTransport((nodemailer) =>
    nodemailer.createTransport({
      url,
      // Fail over to the retry schedule rather than hang on an unreachable or stalled server.
      connectionTimeout: 10_000,
      greetingTimeout: 10_000,
      socketTimeout: 60_000,
    }),
  );
  const target = new URL(url);
  return {
    target: `${target.protocol}//${target.host}`,
    async send(message) {
      await transport.sendMail(message);
    },
    close: () => transport.close(),
  };
}

export function fileDelivery(directory: string): MailDelivery {
  const transport = lazyTransport((nodemailer) =>
    nodemailer.createTransport({ streamTransport: true, buffer: true, newline: "windows" }),
  );
  return {
    target: directory,
    async send(message, name) {
      const info = await transport.sendMail(message);
      await fs.mkdir(directory, { recursive: true });
      const file = path.join(directory, `${name}.eml`);
      // Written whole or not at all: a reader never sees half a message, a retry overwrites.
      const partial = `${file}.partial`;
      await fs.writeFile(partial, info.message as Buffer);
      await fs.rename(partial, file);
    },
    close: () => transport.close(),
  };
}
