/**
 * Time-expression benchmark (`npm run bench:time`): the median time parseStartTime takes per
 * expression over the test table (test/domain/time-expression.cases.ts), each expression read in
 * its own zone at its own fixed `now`, exactly as the API reads scheduled-to-start-at.
 *
 * The whole table is first read WARMUP_ROUNDS times (BENCH_WARMUP_ROUNDS, default 50, so that the
 * JIT has compiled the reader), then each expression is timed over MEASURED_ROUNDS reads
 * (BENCH_ROUNDS, default 200); its time is the mean of those. Exits 1 when the median misses the
 * target.
 */
import { DateTime } from "luxon";
import { parseStartTime, type TimeContext, timeZoneNamed } from "../../src/domain/time-expression.js";
import { CASES, CONTEXTS, UNREADABLE } from "../../test/domain/time-expression.cases.js";

const WARMUP_ROUNDS = Number(process.env.BENCH_WARMUP_ROUNDS ?? 50);
const MEASURED_ROUNDS = Number(process.env.BENCH_ROUNDS ?? 200);
if (
  !(
    Number.isInteger(WARMUP_ROUNDS) &&
    WARMUP_ROUNDS >= 0 &&
    Number.isInteger(MEASURED_ROUNDS) &&
    MEASURED_ROUNDS >= 1
  )
)
  throw new Error(
    `BENCH_WARMUP_ROUNDS must be 0 or more and BENCH_ROUNDS 1 or more, got ${WARMUP_ROUNDS} and ${MEASURED_ROUNDS}`,
  );
const TARGET_MEDIAN_MS = 0.5;

interface Timing {
  expression: string;
  milliseconds: number;
}

function contextOf(name: keyof typeof CONTEXTS): TimeContext {
  const { timeZone, now } = CONTEXTS[name];
  const zone = timeZoneNamed(timeZone);
  if (!zone) throw new Error(`no zone for ${timeZone}`);
  return { now: DateTime.fromISO(now, { zone }).toJSDate(), timeZone: zone };
}

function time(expression: string, context: TimeContext): Timing {
  const started = process.hrtime.bigint();
  for (let round = 0; round < MEASURED_ROUNDS; round += 1) parseStartTime(expression, context);
  const elapsed = Number(process.hrtime.bigint() - started) / 1e6;
  return { expression, milliseconds: elapsed / MEASURED_ROUNDS };
}

function percentile(sorted: Timing[], fraction: number): Timing {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))] as Timing;
}

const table = [...CASES, ...UNREADABLE].map(({ expression, context }) => ({
  expression,
  context: contextOf(context),
}));
for (let round = 0; round < WARMUP_ROUNDS; round += 1) {
  for (const { expression, context } of table) parseStartTime(expression, context);
}
const timings = table
  .map(({ expression, context }) => time(expression, context))
  .sort((a, b) => a.milliseconds - b.milliseconds);

const format = (timing: Timing) =>
  `${timing.milliseconds.toFixed(3)} ms  ${JSON.stringify(timing.expression)}`;
const median = percentile(timings, 0.5);
console.log(
  `time expressions: ${timings.length} (${CASES.length} readable, ${UNREADABLE.length} unreadable), ${WARMUP_ROUNDS} warm-up rounds, ${MEASURED_ROUNDS} measured reads each`,
);
console.log(`median  ${format(median)}`);
console.log(`p90     ${format(percentile(timings, 0.9))}`);
console.log(`max     ${format(timings.at(-1) as Timing)}`);
console.log("slowest:");
for (const timing of timings.slice(-5).reverse()) console.log(`  ${format(timing)}`);
const met = median.milliseconds < TARGET_MEDIAN_MS;
console.log(`target: median under ${TARGET_MEDIAN_MS} ms: ${met ? "met" : "MISSED"}`);
if (!met) process.exitCode = 1;
