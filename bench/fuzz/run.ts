/**
 * npm run bench:fuzz -- <seconds> [--seed N] [--only sip-udp,sip-tcp,sdp,rtp,rtcp,rtp-events,api-xml]
 *                       [--parallel] [--settle S] [--media-threads N]
 * Fuzzes the running service for <seconds> per target (one after another, or all at once with
 * --parallel), prints the figures and exits 1 on any failure. The seed (random unless given) is
 * printed: the same seed sends the same inputs again.
 */
import { parseArgs } from "node:util";
import { describe, runFuzz, TARGET_NAMES } from "./fuzz.js";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    seed: { type: "string" },
    only: { type: "string" },
    parallel: { type: "boolean", default: false },
    settle: { type: "string" },
    "media-threads": { type: "string" },
  },
});
const seconds = Number(positionals[0]);
if (!(seconds > 0)) {
  process.stderr.write(
    `usage: npm run bench:fuzz -- <seconds> [--seed N] [--only ${TARGET_NAMES.join(",")}] [--parallel] [--settle S] [--media-threads N]\n`,
  );
  process.exit(2);
}
const seed = values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(values.seed);
const report = await runFuzz({
  seconds,
  seed,
  only: values.only?.split(",").map((name) => name.trim()),
  parallel: values.parallel,
  // SIP transactions (Timer J, 32 s) and calls the inputs set up outlive the inputs.
  settleSeconds: values.settle === undefined ? Math.min(40, seconds) : Number(values.settle),
  mediaThreads: values["media-threads"] === undefined ? 0 : Number(values["media-threads"]),
  log: (line) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${line}\n`),
});
process.stdout.write(`${describe(report)}\n`);
process.exit(report.failures.length === 0 ? 0 : 1);
