import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ReceptionStatistics } from "../../../../src/telephony/media/rtp/sequence.js";

/** Feeds packets 20 ms apart that arrive exactly on time (160 timestamp units at 8 kHz). */
function feed(stats: ReceptionStatistics, sequenceNumbers: number[]): boolean[] {
  return sequenceNumbers.map((seq) => stats.onPacket(seq, seq * 160, seq * 160 + 400));
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
    stats.onPacket(1, 0, 0); // probation: not counted
    // Timestamps 160 apart; arrivals in timestamp units give transits 0, 10, 0, 20.
    stats.onPacket(2, 160, 1160);
    stats.onPacket(3, 320, 1330);
    stats.onPacket(4, 480, 1480);
    stats.onPacket(5, 640, 1660);
    // |D| = 10, 10, 20: J = 10/16 = 0.625; J += (10 - J)/16 = 1.2109375; J += (20 - J)/16 = 2.38525390625.
    assert.equal(stats.jitter, 2.38525390625);
  });

  it("computes transit differences across 32-bit timestamp wrap", () => {
    const stats = new ReceptionStatistics(1);
    feed(stats, [1]);
    stats.onPacket(2, 0xffffff60, 1000);
    stats.onPacket(3, 0, 1160 + 16); // timestamp wrapped, arrival 16 units late
    assert.equal(stats.jitter, 1);
  });

  it("counts a packet left out of the jitter estimate (RFC 4733 events share one timestamp)", () => {
    const stats = new ReceptionStatistics(1);
    stats.onPacket(1, 0, 0);
    stats.onPacket(2, 160, 160);
    // Three event packets with their event's start timestamp, arriving 20 ms apart.
    for (const [sequence, arrival] of [
      [3, 320],
      [4, 480],
      [5, 640],
    ] as const) {
      assert.equal(stats.onPacket(sequence, 320, arrival, false), true);
    }
    assert.equal(stats.received, 4);
    assert.equal(stats.jitter, 0);
  });
});
