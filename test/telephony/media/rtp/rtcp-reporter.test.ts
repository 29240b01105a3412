/**
 * What the remote's reports say of our stream, as the reporter keeps it: the last block about our
 * SSRC (its cumulative loss and highest sequence number, for the call's loss share), others' ignored,
 * and what a session carrying the stream on is handed.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { ReportBlock } from "../../../../src/telephony/media/rtp/rtcp-packet.js";
import { RtcpReporter } from "../../../../src/telephony/media/rtp/rtcp-reporter.js";

const OURS = 0x11111111;
const THEIRS = 0x22222222;

function block(ssrc: number, fields: Partial<ReportBlock>): ReportBlock {
  return {
    ssrc,
    fractionLost: 0,
    cumulativeLost: 0,
    extendedHighestSequence: 0,
    jitter: 0,
    lastSenderReport: 0,
    delaySinceLastSenderReport: 0,
    ...fields,
  };
}

describe("the RTCP reporter's view of our stream", () => {
  it("has none before a report about us", () => {
    const reporter = new RtcpReporter(OURS, "us", () => undefined);
    assert.equal(reporter.remote, null);
    reporter.receive(
      [{ type: "RR", ssrc: THEIRS, reports: [block(0x33333333, { cumulativeLost: 9 })] }],
      0,
      8000,
    );
    assert.equal(reporter.remote, null, "a block about another source");
  });

  it("keeps the last block's cumulative loss and highest sequence, not only the interval's fraction", () => {
    const reporter = new RtcpReporter(OURS, "us", () => undefined);
    reporter.receive(
      [
        {
          type: "RR",
          ssrc: THEIRS,
          reports: [
            block(OURS, { fractionLost: 64, cumulativeLost: 7, extendedHighestSequence: 70_100, jitter: 80 }),
          ],
        },
      ],
      1000,
      8000,
    );
    assert.deepEqual(reporter.remote, {
      fractionLost: 0.25,
      packetsLost: 7,
      extendedHighestSequence: 70_100,
      jitterMs: 10,
      roundTripMs: null,
    });
    // The next interval lost nothing: the fraction says 0, the cumulative count stays.
    reporter.receive(
      [
        {
          type: "SR",
          ssrc: THEIRS,
          sender: { ntpSeconds: 1, ntpFraction: 0, rtpTimestamp: 0, packetCount: 0, octetCount: 0 },
          reports: [block(OURS, { fractionLost: 0, cumulativeLost: 7, extendedHighestSequence: 70_350 })],
        },
      ],
      6000,
      8000,
    );
    assert.equal(reporter.remote?.fractionLost, 0);
    assert.equal(reporter.remote?.packetsLost, 7);
    assert.equal(reporter.remote?.extendedHighestSequence, 70_350);
  });

  it("starts from what it is handed: a stream carried on from another session keeps the remote's last report", () => {
    const handed = {
      fractionLost: 0.1,
      packetsLost: 12,
      extendedHighestSequence: 500,
      jitterMs: 3,
      roundTripMs: 42,
    };
    const reporter = new RtcpReporter(OURS, "us", () => undefined, handed);
    assert.deepEqual(reporter.remote, handed);
    // A later block without LSR keeps the round trip measured before.
    reporter.receive([{ type: "RR", ssrc: THEIRS, reports: [block(OURS, { cumulativeLost: 15 })] }], 0, 8000);
    assert.equal(reporter.remote?.packetsLost, 15);
    assert.equal(reporter.remote?.roundTripMs, 42);
  });
});
