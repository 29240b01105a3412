import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import path from "node:path";
import { Readable, Writable } from "node:stream";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { DateTime } from "luxon";
import { runCli } from "../src/cli.js";
import { parseStartTime } from "../src/domain/time-expression.js";
import { CASES, CONTEXTS } from "./domain/time-expression.cases.js";

const BRIDGELINE = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "bin", "bridgeline.js");

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the real `bridgeline` executable, feeding `input` to its standard input. */
function bridgeline(args: string[], input = ""): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BRIDGELINE, ...args]);
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
    });
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
    });
    child.on("error", reject);
    child.on("close", (status) => resolve({ status, stdout, stderr }));
    child.stdin.end(input);
  });
}

/** Runs the command in this process on streams of its own (a process start costs a second). */
async function cli(args: string[], input = ""): Promise<Run> {
  const collected = { stdout: "", stderr: "" };
  const collector = (name: "stdout" | "stderr") =>
    new Writable({
      write(chunk, _encoding, done) {
        collected[name] += String(chunk);
        done();
      },
    });
  const status = await runCli(args, {
    stdin: Readable.from([input]),
    stdout: collector("stdout"),
    stderr: collector("stderr"),
  });
  return { status, ...collected };
}

describe("bridgeline parse-time", () => {
  it("prints the UTC instant of one expression read in a spec time zone", async () => {
    const run = await bridgeline([
      "parse-time",
      "tomorrow at 9am",
      "--now",
      "2024-02-14T14:00",
      "--time-zone",
      "Newfoundland",
    ]);
    assert.deepEqual(run, { status: 0, stdout: "2024-02-15T12:30:00Z\n", stderr: "" });
  });

  it("reads standard input line by line, one answer per line, exactly as the API does", async () => {
    const { timeZone, now } = CONTEXTS.eastern;
    const examples = CASES.filter((example) => example.context === "eastern").map(
      (example) => example.expression,
    );
    const lines = [...examples.slice(0, 3), "next blursday", ...examples.slice(3)];
    const run = await bridgeline(
      ["parse-time", "--now", now, "--time-zone", timeZone],
      `${lines.join("\n")}\n`,
    );
    const context = {
      now: DateTime.fromISO(now, { zone: "America/New_York" }).toJSDate(),
      timeZone: "America/New_York",
    };
    const expected = lines.map((line) => {
      const instant = parseStartTime(line, context);
      return instant
        ? `${instant.toISOString().slice(0, 19)}Z`
        : `error: not a time that can be read: "${line}"`;
    });
    assert.ok(expected.filter((answer) => !answer.startsWith("error")).length >= 10);
    assert.deepEqual(run.stdout.split("\n").slice(0, -1), expected);
    assert.equal(run.status, 1);
  });

  it("accepts IANA zone names and a --now with an offset", async () => {
    const run = await cli([
      "parse-time",
      "tomorrow at 9am",
      "--now",
      "2024-02-14T17:30:00Z",
      "--time-zone",
      "America/St_Johns",
    ]);
    assert.deepEqual(run, { status: 0, stdout: "2024-02-15T12:30:00Z\n", stderr: "" });
  });

  it("reads in UTC without --time-zone and takes an unquoted expression", async () => {
    const run = await cli(["parse-time", "friday", "13:00", "--now", "2006-08-16T14:00:00Z"]);
    assert.deepEqual(run, { status: 0, stdout: "2006-08-18T13:00:00Z\n", stderr: "" });
  });

  it("reads relative to the current time without --now", async () => {
    const before = Date.now();
    const run = await cli(["parse-time", "now"]);
    const shown = Date.parse(run.stdout.trim());
    assert.ok(shown >= before - 1000 && shown <= Date.now(), run.stdout);
  });

  it("answers an unreadable expression with an error and status 1", async () => {
    const run = await cli(["parse-time", "next blursday"]);
    assert.deepEqual(run, {
      status: 1,
      stdout: "",
      stderr: 'error: not a time that can be read: "next blursday"\n',
    });
  });

  it("refuses an unknown time zone, a --now that is not ISO 8601 and unknown options", async () => {
    const zone = await cli(["parse-time", "now", "--time-zone", "Atlantis"]);
    assert.deepEqual(zone, { status: 1, stdout: "", stderr: 'error: unknown time zone: "Atlantis"\n' });
    const now = await cli(["parse-time", "now", "--now", "yesterday"]);
    assert.equal(now.status, 1);
    assert.match(now.stderr, /--now is not an ISO 8601 date and time: "yesterday"/);
    const option = await cli(["parse-time", "now", "--tz", "UTC"]);
    assert.equal(option.status, 1);
    assert.match(option.stderr, /--tz/);
  });

  it("exits 0 when every line of standard input was read, whatever the line endings", async () => {
    const run = await cli(["parse-time", "--now", "2006-08-16T14:00:00Z"], "today\r\n5/27/1979\n");
    assert.deepEqual(run, { status: 0, stdout: "2006-08-16T19:00:00Z\n1979-05-27T12:00:00Z\n", stderr: "" });
  });
});

describe("bridgeline", () => {
  it("lists start and parse-time in its usage", async () => {
    const run = await cli(["--help"]);
    assert.equal(run.status, 0);
    assert.match(run.stderr, /bridgeline start\n/);
    assert.match(run.stderr, /bridgeline parse-time \[EXPRESSION\] \[--now ISO8601\] \[--time-zone NAME\]/);
  });

  it("refuses an unknown command", async () => {
    const run = await cli(["frobnicate"]);
    assert.equal(run.status, 1);
    assert.match(run.stderr, /usage:/);
  });
});
