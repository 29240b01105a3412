/**
 * Call-setup throughput of the telephony stack against SIPp on loopback: `node --import tsx
 * bench/sip/calls.ts` (BENCH_SECONDS per step, default 5; BENCH_RATES, default
 * "50,100,200,300,400,500,600,800,1000"). SIPp plays a trunk that answers every call (100, 180, 200 with SDP,
 * expecting the ACK, then our BYE and its 200: test/fixtures/sipp/uas-answer.xml); the stack places
 * calls at each rate in turn and hangs each up as soon as it is answered. A step passes when every
 * call was answered and ended, SIPp saw every call follow its script, and the calls completed at
 * >= 90 % of the offered rate. Prints the highest passing rate.
 */
import { Telephony } from "../../src/telephony/telephony.js";
import { Sipp } from "../../test/helpers/sipp.js";
import { percentile } from "../percentile.js";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const RATES = (process.env.BENCH_RATES ?? "50,100,200,300,400,500,600,800,1000").split(",").map(Number);
const TICK_MS = 10;

interface StepResult {
  rate: number;
  calls: number;
  answered: number;
  failures: string[];
  /** Completed calls per second, first INVITE to last BYE answered. */
  achieved: number;
  setupP50: number;
  setupP99: number;
  sippExit: number | null;
}

async function step(rate: number, seconds = SECONDS): Promise<StepResult> {
  const calls = Math.round(rate * seconds);
  const sipp = await Sipp.start({
    scenario: "uas-answer.xml",
    calls,
    timeoutSeconds: seconds * 4 + 30,
    traceMessages: false,
  });
  const telephony = await Telephony.start({
    bindAddress: "127.0.0.1",
    sipPort: 0,
    trunk: `sip:127.0.0.1:${sipp.sipPort}`,
    callerId: "+16045550100",
    rtpPorts: { min: 20000, max: 29999 },
  });
  const setupMs: number[] = [];
  const failures: string[] = [];
  let finished = 0;
  let lastFinishedAt = 0;
  const started = performance.now();
  const allFinished = new Promise<void>((resolve) => {
    const finish = () => {
      finished++;
      lastFinishedAt = performance.now();
      if (finished === calls) resolve();
    };
    let placed = 0;
    const timer = setInterval(() => {
      const due = Math.min(calls, Math.floor(((performance.now() - started) * rate) / 1000) + 1);
      // A late tick catches up by at most two ticks' worth: a stalled loop must show as a lower
      // completed rate, not as a burst no trunk would send.
      const limit = Math.min(due, placed + Math.ceil((rate * TICK_MS * 2) / 1000));
      for (; placed < limit; placed++) {
        const placedAt = performance.now();
        const call = telephony.placeCall("+16045550123");
        call.once("answered", () => {
          setupMs.push(performance.now() - placedAt);
          call.hangup();
        });
        call.once("ended", finish);
        call.once("failed", (failure) => {
          failures.push(`${failure.status} ${failure.reason}`);
          finish();
        });
      }
      if (placed === calls) clearInterval(timer);
    }, TICK_MS);
  });
  const deadline = new Promise<void>((resolve) => setTimeout(resolve, (seconds * 3 + 20) * 1000).unref());
  await Promise.race([allFinished, deadline]);
  if (finished < calls) failures.push(`${calls - finished} calls neither ended nor failed`);
  const { code } = await sipp.result(30_000).catch(() => ({ code: null }));
  if (code !== 0) failures.push(`SIPp exit ${code}: ${sipp.errors().slice(0, 500)}`);
  await telephony.close();
  await sipp.stop();
  setupMs.sort((a, b) => a - b);
  return {
    rate,
    calls,
    answered: setupMs.length,
    failures,
    achieved: (finished * 1000) / Math.max(lastFinishedAt - started, 1),
    setupP50: percentile(setupMs, 0.5),
    setupP99: percentile(setupMs, 0.99),
    sippExit: code,
  };
}

console.log(
  `Call setup against SIPp on loopback, ${SECONDS} s per rate (Node ${process.version}); ` +
    "each call INVITE/100/180/200/ACK then BYE/200",
);
console.log("offered/s   calls  answered  failed  completed/s  setup p50 ms  setup p99 ms  SIPp exit");
// Warm-up (JIT, socket paths), not reported.
await step(50, 1);
let best = 0;
for (const rate of RATES) {
  const result = await step(rate);
  const sustained = result.failures.length === 0 && result.achieved >= rate * 0.9;
  console.log(
    `${String(rate).padStart(9)} ${String(result.calls).padStart(7)} ${String(result.answered).padStart(9)}` +
      ` ${String(result.calls - result.answered).padStart(7)} ${result.achieved.toFixed(1).padStart(12)}` +
      ` ${result.setupP50.toFixed(1).padStart(13)} ${result.setupP99.toFixed(1).padStart(13)}` +
      ` ${String(result.sippExit).padStart(10)}${sustained ? "" : "   <- not sustained"}`,
  );
  for (const failure of new Set(result.failures)) console.log(`    ${failure}`);
  if (!sustained) break;
  best = rate;
}
console.log(`highest sustained rate with zero failures: ${best} call setups/s (target >= 100)`);
if (best < 100) process.exitCode = 1;
