/**
 * A call's quality figures from its stream's final counts (callQuality): the shares, and the MOS
 * counting as unheard both the packets lost and those that came too late to be played.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { ASSUMED_ROUND_TRIP_MS, callQuality } from "../../src/telephony/call-quality.js";
import type { StreamStats } from "../../src/telephony/media/plane/protocol.js";
import { NO_DROPS } from "../../src/telephony/media/rtp/rtp-stream.js";

/** A minute of PCMU both ways, nothing lost, RTCP round trip measured. */
const CLEAN: StreamStats = {
  streamId: 1,
  packetsSent: 3000,
  packetsReceived: 3000,
  packetsLost: 0,
  fractionLost: 0,
  jitterMs: 2,
  meanJitterMs: 2,
  remoteFractionLost: 0,
  remoteJitterMs: 3,
  remotePacketsLost: 0,
  remoteLossShare: 0,
  roundTripMs: 40,
  packetsLate: 0,
  packetsDuplicate: 0,
  packetsOutOfOrder: 0,
  framesConcealed: 0,
  framesPlayed: 3000,
  framesRecovered: 0,
  dropped: NO_DROPS,
  codec: "PCMU",
  audioRate: 8000,
  roomRate: 8000,
} as StreamStats;

test("shares of what was lost and concealed, and a clean call's MOS near the E-model's best", () => {
  const clean = callQuality(CLEAN);
  assert.equal(clean?.lossShare, 0);
  assert.equal(clean?.concealmentShare, 0);
  assert.ok((clean?.mos ?? 0) > 4.3, `MOS ${clean?.mos}`);
  const lossy = callQuality({ ...CLEAN, packetsReceived: 2910, packetsLost: 90, framesConcealed: 90 });
  assert.equal(lossy?.lossShare, 0.03);
  assert.equal(lossy?.concealmentShare, 0.03);
  assert.ok((lossy?.mos ?? 5) < (clean?.mos ?? 0));
});

test("packets that came too late to be played count as unheard in the MOS, not in the loss share", () => {
  const late = callQuality({ ...CLEAN, packetsLate: 90 });
  const lost = callQuality({ ...CLEAN, packetsReceived: 2910, packetsLost: 90 });
  assert.equal(late?.lossShare, 0, "none lost on the way");
  assert.ok(Math.abs((late?.mos ?? 0) - (lost?.mos ?? 0)) < 0.05, `${late?.mos} vs ${lost?.mos}`);
  assert.ok((late?.mos ?? 5) < (callQuality(CLEAN)?.mos ?? 0));
});

test("no round trip measured: an assumed small one, so the MOS reflects loss alone; no media, no quality", () => {
  const unmeasured = callQuality({ ...CLEAN, roundTripMs: null });
  const assumed = callQuality({ ...CLEAN, roundTripMs: ASSUMED_ROUND_TRIP_MS });
  assert.equal(unmeasured?.mos, assumed?.mos);
  assert.equal(unmeasured?.roundTripMs, null, "the record says it was not measured");
  assert.equal(callQuality({ ...CLEAN, packetsSent: 0, packetsReceived: 0 }), null);
});
