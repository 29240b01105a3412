import { parseArgs } from "node:util";
import { DateTime } from "luxon";
import { parseStartTime, timeZoneNamed } from "./domain/time-expression.js";

const USAGE = `usage: bridgeline start
       bridgeline parse-time [EXPRESSION] [--now ISO8601] [--time-zone NAME]`;

/** Where the command reads and writes: the process's own streams, or a test's. */
export interface CliStreams {
  stdin: NodeJS.ReadableStream;
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
}

/** The `bridgeline` command: `start` runs the service, `parse-time` reads start times. */
export async function runCli(args: string[], io: CliStreams = process): Promise<number> {
  const [command, ...rest] = args;
  if (command === "start") {
    // Loaded here so that parse-time does not pay for the whole service.
    const { runFromEnvironment } = await import("./main.js");
    await runFromEnvironment();
    return 0;
  }
  if (command === "parse-time") return parseTime(rest, io);
  io.stderr.write(`${USAGE}\n`);
  return command === undefined || command === "help" || command === "--help" ? 0 : 1;
}

/**
 * Prints the UTC instant an expression names, read exactly as the API reads
 * scheduled-to-start-at. Without an expression, reads one per line from standard input and
 * answers each on its own line; the status is 1 when any could not be read.
 */
async function parseTime(args: string[], io: CliStreams): Promise<number> {
  const fail = (message: string) => {
    io.stderr.write(`error: ${message}\n`);
    return 1;
  };
  let options: { now?: string; "time-zone"?: string };
  let positionals: string[];
  try {
    ({ values: options, positionals } = parseArgs({
      args,
      allowPositionals: true,
      options: { now: { type: "string" }, "time-zone": { type: "string" } },
    }));
  } catch (error) {
    return fail(`${(error as Error).message}\n${USAGE}`);
  }
  const zoneName = options["time-zone"] ?? "UTC";
  const timeZone = timeZoneNamed(zoneName);
  if (!timeZone) return fail(`unknown time zone: "${zoneName}"`);
  // A --now without an offset is wall-clock time in that zone.
  const now = options.now === undefined ? DateTime.now() : DateTime.fromISO(options.now, { zone: timeZone });
  if (!now.isValid) return fail(`--now is not an ISO 8601 date and time: "${options.now}"`);
  const context = { now: now.toJSDate(), timeZone };

  if (positionals.length > 0) {
    const answer = answerFor(positionals.join(" "), context);
    if (answer.startsWith("error: ")) {
      io.stderr.write(`${answer}\n`);
      return 1;
    }
    io.stdout.write(`${answer}\n`);
    return 0;
  }
  const lines = (await readAll(io.stdin)).split(/\r?\n/);
  if (lines.at(-1) === "") lines.pop();
  const answers = lines.map((line) => answerFor(line, context));
  io.stdout.write(answers.map((answer) => `${answer}\n`).join(""));
  return answers.some((answer) => answer.startsWith("error: ")) ? 1 : 0;
}

function answerFor(expression: string, context: { now: Date; timeZone: string }): string {
  const instant = parseStartTime(expression, context);
  // The API's datetime form: UTC, whole seconds.
  return instant
    ? `${instant.toISOString().slice(0, 19)}Z`
    : `error: not a time that can be read: "${expression}"`;
}

async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks).toString("utf8");
}
