import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ReceptionStatistics } from "../../../../src/telephony/media/rtp/sequence.js";

/** Milliseconds of `units` of an 8 kHz clock. */
const ms = (units: number) => units / 8;

/** Feeds packets 20 ms apart that arrive exactly on time (160 timestamp units at 8 kHz). */
function feed(stats: ReceptionStatistics, sequenceNumbers: number[]): boolean[] {
  return sequenceNumbers.map((seq) => stats.onPacket(seq, seq * 160, ms(seq * 160 + 400), 8000));
}

describe("ReceptionStatistics", () => {
  it("keeps a new source on probation until two packets are in sequence (RFC 3550 A.1)", () => {
    const stats = new ReceptionStatistics(10);
    assert.deepEqual(feed(stats, [10, 11, 12]), [false, true, true]);
    assert.equal(stats.received, 2);
    assert.equal(stats.expected, 2);
  });

  it("restarts probation when the first packets are not sequential", () => {
    const stats = new ReceptionStatistics(10);
    assert.deepEqual(feed(stats, [10, 12, 13]), [false, false, true]);
    assert.equal(stats.expected, 1);
  });

  it("counts losses and the fraction lost per report interval (A.3)", () => {
    const stats = new ReceptionStatistics(10);
    feed(stats, [10, 11, 12, 13, 14, 17, 18, 19, 20]);
    assert.equal(stats.received, 8);
    assert.equal(stats.expected, 10);
    assert.equal(stats.lost, 2);
    assert.equal(stats.takeFractionLost(), Math.floor((2 * 256) / 10));
    feed(stats, [21, 22]);
    assert.equal(stats.takeFractionLost(), 0);
    assert.equal(stats.lost, 2);
  });

  it("extends sequence numbers across the 16-bit wrap and counts late and duplicate packets", () => {
    const stats = new ReceptionStatistics(65533);
    feed(stats, [65533, 65534, 65535, 0, 2, 1, 1]);
    assert.equal(stats.extendedHighestSequence, 0x10002);
    assert.equal(stats.expected, 5);
    assert.equal(stats.received, 6);
    assert.equal(stats.lost, -1);
  });

  it("resynchronizes after a large jump confirmed by the next packet", () => {
    const stats = new ReceptionStatistics(100);
    feed(stats, [100, 101, 102]);
    assert.deepEqual(feed(stats, [20000, 20001, 20002]), [false, true, true]);
    assert.equal(stats.received, 2);
    assert.equal(stats.expected, 2);
    assert.equal(stats.extendedHighestSequence, 20002);
  });

  it("estimates interarrival jitter (A.8) for a hand-computed sequence", () => {
    const stats = new ReceptionStatistics(1);
    stats.onPacket(1, 0, ms(0), 8000); // probation: not counted
    // Timestamps 160 apart; arrivals in timestamp units give transits 0, 10, 0, 20.
    stats.onPacket(2, 160, ms(1160), 8000);
    stats.onPacket(3, 320, ms(1330), 8000);
    stats.onPacket(4, 480, ms(1480), 8000);
    stats.onPacket(5, 640, ms(1660), 8000);
    // |D| = 10, 10, 20: J = 10/16 = 0.625; J += (10 - J)/16 = 1.2109375; J += (20 - J)/16 = 2.38525390625.
    assert.equal(stats.jitter, 2.38525390625);
  });

  it("computes transit differences across 32-bit timestamp wrap", () => {
    const stats = new ReceptionStatistics(1);
    feed(stats, [1]);
    stats.onPacket(2, 0xffffff60, ms(1000), 8000);
    stats.onPacket(3, 0, ms(1160 + 16), 8000); // timestamp wrapped, arrival 16 units late
    assert.equal(stats.jitter, 1);
  });

  it("counts a packet left out of the jitter estimate (RFC 4733 events share one timestamp)", () => {
    const stats = new ReceptionStatistics(1);
    stats.onPacket(1, 0, ms(0), 8000);
    stats.onPacket(2, 160, ms(160), 8000);
    // Three event packets with their event's start timestamp, arriving 20 ms apart.
    for (const [sequence, arrival] of [
      [3, 320],
      [4, 480],
      [5, 640],
    ] as const) {
      assert.equal(stats.onPacket(sequence, 320, ms(arrival), 8000, false), true);
    }
    assert.equal(stats.received, 4);
    assert.equal(stats.jitter, 0);
  });

  it("measures jitter in each packet's clock, carrying the estimate across a change of clock", () => {
    const stats = new ReceptionStatistics(1);
    // Opus at 48 kHz, 20 ms packets arriving alternately on time and 2 ms late: |D| = 2 ms = 96 units.
    for (let k = 1; k <= 200; k++) stats.onPacket(k, 960 * k, 20 * k + (k % 2) * 2, 48000);
    assert.ok(Math.abs(stats.jitter - 96) < 0.5, `${stats.jitter} units at 48 kHz`);
    assert.ok(Math.abs(stats.jitterMs - 2) < 0.01, `${stats.jitterMs} ms`);
    // The far end switches to PCMU: other timestamps on an 8 kHz clock, arriving on time. No difference
    // is taken across the switch (it would read as a jump of seconds); the estimate goes on in 8 kHz units.
    stats.onPacket(201, 777_777, 20 * 201, 8000);
    assert.ok(Math.abs(stats.jitterMs - 2) < 0.01, `${stats.jitterMs} ms after the switch`);
    assert.ok(Math.abs(stats.jitter - 16) < 0.1, `${stats.jitter} units at 8 kHz`);
    stats.onPacket(202, 777_777 + 160, 20 * 202, 8000);
    assert.ok(stats.jitterMs < 2, "and decays while packets come on time");
  });
});
