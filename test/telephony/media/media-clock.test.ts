import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { MediaClock } from "../../../src/telephony/media/media-clock.js";

function busyWait(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // Holds the event loop, as a long synchronous job would.
  }
}

/** Runs a clock for `ms` of wall time; returns it stopped, with the elapsed milliseconds. */
async function runFor(
  ms: number,
  options: { maxCatchUpTicks?: number; onTick?: (clock: MediaClock) => void } = {},
): Promise<{ clock: MediaClock; elapsed: number }> {
  const clock: MediaClock = new MediaClock({
    maxCatchUpTicks: options.maxCatchUpTicks,
    onTick: () => options.onTick?.(clock),
  });
  const started = performance.now();
  clock.start();
  await sleep(ms);
  const elapsed = performance.now() - started;
  clock.stop();
  return { clock, elapsed };
}

describe("MediaClock", () => {
  // A loaded machine (the suite runs two files at a time beside real phones) can hold the process up
  // for tens of milliseconds: catch-up limits are set so that such a hold-up is caught up, not skipped.
  it("ticks every 20 ms in step with wall time and reports its lateness", async () => {
    const { clock, elapsed } = await runFor(1000, { maxCatchUpTicks: 100 });
    assert.ok(Math.abs(clock.ticks - Math.floor(elapsed / 20)) <= 3, `${clock.ticks} ticks in ${elapsed} ms`);
    assert.equal(clock.skipped, 0);
    const lateness = clock.latenessPercentiles();
    assert.ok(lateness.p50 >= 0 && lateness.p50 <= lateness.p99 && lateness.p99 <= lateness.max);
  });

  it("runs the ticks missed while the event loop was blocked back to back", async () => {
    // A catch-up limit well above the 5 ticks a 100 ms block holds up, so a loaded machine cannot make
    // the clock skip.
    let blocked = false;
    const { clock, elapsed } = await runFor(2000, {
      maxCatchUpTicks: 100,
      onTick: (clock) => {
        if (!blocked && clock.ticks === 50) {
          blocked = true;
          busyWait(100);
        }
      },
    });
    assert.ok(blocked);
    assert.equal(clock.skipped, 0);
    assert.ok(Math.abs(clock.ticks - Math.floor(elapsed / 20)) <= 3, `${clock.ticks} ticks in ${elapsed} ms`);
    // The tick due just after the block began ran about 80 ms late.
    assert.ok(clock.latenessPercentiles().max >= 60, `max lateness ${clock.latenessPercentiles().max} ms`);
  });

  it("does not drift when every tick takes time", async () => {
    const { clock, elapsed } = await runFor(1000, { maxCatchUpTicks: 100, onTick: () => busyWait(8) });
    assert.ok(Math.abs(clock.ticks - Math.floor(elapsed / 20)) <= 3, `${clock.ticks} ticks in ${elapsed} ms`);
  });

  it("skips what is overdue past the catch-up limit, and counts it", async () => {
    let blocked = false;
    const { clock, elapsed } = await runFor(1000, {
      maxCatchUpTicks: 5,
      onTick: (clock) => {
        if (!blocked && clock.ticks === 10) {
          blocked = true;
          busyWait(300);
        }
      },
    });
    // 300 ms holds up 15 ticks: 5 run, about 10 are skipped.
    assert.ok(clock.skipped >= 8, `${clock.skipped} skipped`);
    const expected = Math.floor(elapsed / 20);
    assert.ok(
      Math.abs(clock.ticks + clock.skipped - expected) <= 3,
      `${clock.ticks} ticks and ${clock.skipped} skipped in ${elapsed} ms`,
    );
  });

  it("stops, also from inside a tick, and stop() may be called again", async () => {
    let ticksAfterStop = 0;
    let stopped = false;
    const clock: MediaClock = new MediaClock({
      onTick: () => {
        if (stopped) ticksAfterStop++;
        if (clock.ticks === 3) {
          clock.stop();
          stopped = true;
        }
      },
    });
    clock.start();
    await sleep(200);
    assert.equal(clock.ticks, 3);
    assert.equal(ticksAfterStop, 0);
    assert.equal(clock.running, false);
    clock.stop();
    clock.start();
    await sleep(100);
    clock.stop();
    const ticks = clock.ticks;
    assert.ok(ticks > 3, "started again");
    await sleep(60);
    assert.equal(clock.ticks, ticks);
  });

  it("keeps no process alive by itself", async () => {
    const script = `
      import { MediaClock } from ${JSON.stringify(new URL("../../../src/telephony/media/media-clock.ts", import.meta.url).href)};
      new MediaClock({ onTick: () => {} }).start();
    `;
    const result = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
      timeout: 20_000,
    });
    assert.equal(result.status, 0, String(result.stderr));
  });
});
