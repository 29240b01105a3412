/**
 * The conference mixer alone, paced by the media clock: `node --import tsx bench/media/mixer.ts`.
 * For each room size and rate, synthetic participants (a port that copies a prepared frame: speech-like
 * tones for those who talk, an idle line's ±8 for the others, and a sink that counts what it hears)
 * are mixed every 20 ms for BENCH_SECONDS (default 5), after an unmeasured warm-up, three ways: two
 * talking (the mixer's usual cap of 3), everyone talking with the cap of 3, and everyone talking with
 * no cap (every participant its own N-1 mix, as the mixer did before it had talkers).
 * BENCH_SIZES overrides the room sizes (default 10,100,1000), BENCH_RATES the rates (default 8000,16000).
 */
import { PerformanceObserver } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { MediaClock } from "../../src/telephony/media/media-clock.js";
import { frameSamples, Mixer } from "../../src/telephony/media/mixer.js";

type Rate = 8000 | 16000;

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const SIZES = (process.env.BENCH_SIZES ?? "10,100,1000").split(",").map(Number);
const RATES = (process.env.BENCH_RATES ?? "8000,16000").split(",").map((rate) => {
  if (rate !== "8000" && rate !== "16000") throw new Error(`BENCH_RATES: ${rate} is not 8000 or 16000`);
  return Number(rate) as Rate;
});
const WARM_UP_TICKS = 100;
const USUAL_TALKERS = 2;
const CAP = 3;

// A full collection before and after each run, so heap growth is what the run kept, not its garbage.
setFlagsFromString("--expose-gc");
const collectGarbage = runInNewContext("gc") as () => void;

/** Speech-like test audio: two tones at about -26 dBFS, a different phase per participant. */
function talkFrame(participant: number, rate: Rate): Int16Array {
  return Int16Array.from({ length: frameSamples(rate) }, (_, i) => {
    const t = i / rate + participant * 0.001;
    return Math.round(2000 * Math.sin(2 * Math.PI * 300 * t) + 1000 * Math.sin(2 * Math.PI * 1100 * t));
  });
}

/** What an open line that says nothing sends: A-law's idle codes, ±8 (-72 dBFS). */
function idleFrame(rate: Rate): Int16Array {
  return Int16Array.from({ length: frameSamples(rate) }, (_, i) => (i % 2 === 0 ? 8 : -8));
}

/** An entry tone of 150 ms at 880 Hz, -12 dBFS, at the room's rate. */
function beep(rate: Rate): Int16Array {
  return Int16Array.from({ length: (rate * 150) / 1000 }, (_, i) =>
    Math.round(8200 * Math.sin((2 * Math.PI * 880 * i) / rate)),
  );
}

interface Result {
  ticks: number;
  ownPerTick: number;
  sharedPerTick: number;
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

async function run(size: number, rate: Rate, talking: number, cap: number): Promise<Result> {
  let framesWritten = 0;
  let sharedWritten = 0;
  let mixes = 0;
  const mixer = new Mixer({
    sampleRate: rate,
    talkers: cap,
    onMix: () => {
      mixes++;
    },
  });
  const idle = idleFrame(rate);
  for (let n = 0; n < size; n++) {
    const frame = n < talking ? talkFrame(n, rate) : idle;
    mixer.addParticipant({
      read: (out) => {
        out.set(frame);
        return true;
      },
      write: (_heard, shared) => {
        framesWritten++;
        if (shared) sharedWritten++;
      },
    });
  }
  // An entry tone every second keeps the sound path in the measurement.
  const tone = beep(rate);
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
  const talkers = Math.min(talking, cap);
  if (mixes !== ticks || framesWritten !== ticks * size) {
    throw new Error(
      `${ticks} ticks, but ${mixes} mixes and ${framesWritten} frames written to ${size} participants`,
    );
  }
  // Everyone not mixed gets the shared frame (the sounds go to everyone): the talkers alone their own.
  if (
    mixer.talkerCount !== talkers ||
    sharedWritten !== mixer.sharedFramesWritten ||
    mixer.ownFramesWritten !== ticks * talkers ||
    mixer.sharedFramesWritten !== ticks * (size - talkers)
  ) {
    throw new Error(
      `${talkers} talkers expected; the mixer had ${mixer.talkerCount}, wrote ${mixer.ownFramesWritten} own and ` +
        `${mixer.sharedFramesWritten} shared frames in ${ticks} ticks (ports counted ${sharedWritten} shared)`,
    );
  }
  const sorted = mixTimes.slice(0, measured).sort();
  const lateness = clock.latenessPercentiles();
  return {
    ticks: clock.ticks,
    ownPerTick: mixer.ownFramesWritten / ticks,
    sharedPerTick: mixer.sharedFramesWritten / ticks,
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
  "rate Hz",
  "talking",
  "mixed at most",
  "ticks",
  "own frames/tick",
  "shared frames/tick",
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
  for (const rate of RATES) {
    // A usual room; everyone talking, held to the cap; everyone talking, every one mixed (the old way).
    const cases: [talking: number, cap: number][] = [
      [Math.min(USUAL_TALKERS, size), CAP],
      [size, CAP],
      [size, Number.POSITIVE_INFINITY],
    ];
    for (const [talking, cap] of cases) {
      const r = await run(size, rate, talking, cap);
      const cells = [
        size,
        rate,
        talking,
        cap === Number.POSITIVE_INFINITY ? "all" : cap,
        r.ticks,
        r.ownPerTick.toFixed(2),
        r.sharedPerTick.toFixed(2),
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
}
