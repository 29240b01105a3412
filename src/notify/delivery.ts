/**
 * Where composed messages go: an SMTP server (BRIDGELINE_SMTP_URL) through nodemailer, or, without
 * one, .eml files in the data directory's mail folder that a newcomer can open to see what would
 * have been sent.
 */
import fs from "node:fs/promises";
import path from "node:path";
import nodemailer from "nodemailer";
import type Mail from "nodemailer/lib/mailer/index.js";

export interface MailDelivery {
  /** Resolves once the server has accepted the message (or the file is complete); throws otherwise. */
  send(message: Mail.Options, name: string): Promise<void>;
  close(): void;
  /** Where messages go, for the log; never the credentials. */
  readonly target: string;
}

export function smtpDelivery(url: string): MailDelivery {
  const transport = nodemailer.createTransport({
    url,
    // Fail over to the retry schedule rather than hang on an unreachable or stalled server.
    connectionTimeout: 10_000,
    greetingTimeout: 10_000,
    socketTimeout: 60_000,
  });
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
  const transport = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: "windows" });
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
