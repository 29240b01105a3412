/**
 * The conference mixer alone, paced by the media clock: `node --import tsx bench/media/mixer.ts`.
 * For each room size, synthetic participants (a port that copies a prepared frame, or says nothing,
 * and a sink that touches what it hears) are mixed every 20 ms for BENCH_SECONDS (default 5), after an
 * unmeasured warm-up. BENCH_SIZES overrides the room sizes (default 10,100,500,1000).
 */
import { PerformanceObserver } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { MediaClock } from "../../src/telephony/media/media-clock.js";
import { FRAME_SAMPLES, Mixer } from "../../src/telephony/media/mixer.js";
import { entryTone } from "../../src/telephony/media/tones.js";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const SIZES = (process.env.BENCH_SIZES ?? "10,100,500,1000").split(",").map(Number);
const WARM_UP_TICKS = 100;

// A full collection before and after each run, so heap growth is what the run kept, not its garbage.
setFlagsFromString("--expose-gc");
const collectGarbage = runInNewContext("gc") as () => void;

/** Speech-like test audio: two tones at about -20 dBFS, a different phase per participant. */
function talkFrame(participant: number): Int16Array {
  return Int16Array.from({ length: FRAME_SAMPLES }, (_, i) => {
    const t = i / 8000 + participant * 0.001;
    return Math.round(2000 * Math.sin(2 * Math.PI * 300 * t) + 1000 * Math.sin(2 * Math.PI * 1100 * t));
  });
}

interface Result {
  size: number;
  talkers: number;
  ticks: number;
  mixP50: number;
  mixP99: number;
  cpuPercent: number;
  lateP50: number;
  lateP99: number;
  lateMax: number;
  skipped: number;
  heapGrowthKb: number;
  collections: number;
}

function percentile(sorted: Float64Array, fraction: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(fraction * sorted.length))] ?? 0;
}

async function run(size: number, talkers: number): Promise<Result> {
  let framesWritten = 0;
  let mixes = 0;
  const mixer = new Mixer({
    onMix: () => {
      mixes++;
    },
  });
  for (let n = 0; n < size; n++) {
    const frame = talkFrame(n);
    const talks = n < talkers;
    mixer.addParticipant({
      read: (out) => {
        if (talks) out.set(frame);
        return talks;
      },
      write: () => {
        framesWritten++;
      },
    });
  }
  // An entry tone every second keeps the sound path in the measurement.
  const tone = entryTone();
  for (let tick = 0; tick < WARM_UP_TICKS; tick++) mixer.tick();

  const expectedTicks = Math.ceil((SECONDS * 1000) / 20) + 10;
  const mixTimes = new Float64Array(expectedTicks);
  let measured = 0;
  let collections = 0;
  const observer = new PerformanceObserver((list) => {
    collections += list.getEntries().length;
  });
  collectGarbage();
  const heapBefore = process.memoryUsage().heapUsed;
  observer.observe({ entryTypes: ["gc"] });
  const cpuBefore = process.cpuUsage();
  const wallBefore = performance.now();
  const clock = new MediaClock({
    onTick: () => {
      if (clock.ticks % 50 === 0) mixer.play(tone);
      const start = performance.now();
      mixer.tick();
      if (measured < mixTimes.length) mixTimes[measured++] = (performance.now() - start) * 1000;
    },
  });
  clock.start();
  await sleep(SECONDS * 1000);
  clock.stop();
  const wall = performance.now() - wallBefore;
  const cpu = process.cpuUsage(cpuBefore);
  await sleep(100); // garbage collection entries reach the observer a little later
  observer.disconnect();
  collectGarbage();
  const heapAfter = process.memoryUsage().heapUsed;

  const ticks = WARM_UP_TICKS + clock.ticks;
  if (mixes !== ticks || framesWritten !== ticks * size) {
    throw new Error(
      `${ticks} ticks, but ${mixes} mixes and ${framesWritten} frames written to ${size} participants`,
    );
  }
  const sorted = mixTimes.slice(0, measured).sort();
  const lateness = clock.latenessPercentiles();
  return {
    size,
    talkers,
    ticks: clock.ticks,
    mixP50: percentile(sorted, 0.5),
    mixP99: percentile(sorted, 0.99),
    cpuPercent: ((cpu.user + cpu.system) / 1000 / wall) * 100,
    lateP50: lateness.p50,
    lateP99: lateness.p99,
    lateMax: lateness.max,
    skipped: clock.skipped,
    heapGrowthKb: (heapAfter - heapBefore) / 1024,
    collections,
  };
}

const header = [
  "participants",
  "talking",
  "ticks",
  "mix p50 µs",
  "mix p99 µs",
  "CPU % of a core",
  "late p50 ms",
  "late p99 ms",
  "late max ms",
  "skipped",
  "heap growth KB",
  "GCs",
];
console.log(`Mixer, ${SECONDS} s per row, Node ${process.version}`);
console.log(`| ${header.join(" | ")} |`);
console.log(`|${header.map(() => " ---: ").join("|")}|`);
for (const size of SIZES) {
  // Everyone talking is the worst case (everyone hears a mix of their own); three is a usual room.
  for (const talkers of [size, Math.min(3, size)]) {
    const r = await run(size, talkers);
    const cells = [
      r.size,
      r.talkers,
      r.ticks,
      r.mixP50.toFixed(0),
      r.mixP99.toFixed(0),
      r.cpuPercent.toFixed(1),
      r.lateP50.toFixed(2),
      r.lateP99.toFixed(2),
      r.lateMax.toFixed(2),
      r.skipped,
      r.heapGrowthKb.toFixed(0),
      r.collections,
    ];
    console.log(`| ${cells.join(" | ")} |`);
  }
}
