/**
 * The room benchmark's leg audio (bench/media/leg-audio.ts): each codec's pcap is RTP that SIPp can
 * play and the service can decode, one stream of 20 ms packets under the codec's payload type and
 * clock, holding the talker's tone at its level (or silence) through the codec's own decoder.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import {
  LEG_CODECS,
  LEG_FORMATS,
  type LegCodec,
  TALKER_TONES_HZ,
  writeLegPcap,
} from "../../bench/media/leg-audio.js";
import { decodeAlaw, decodeMulaw } from "../../src/telephony/media/codec/g711.js";
import { G722Decoder } from "../../src/telephony/media/codec/g722.js";
import { OPUS_MAX_FRAME_SAMPLES, OpusDecoder } from "../../src/telephony/media/codec/opus.js";
import { parseRtpPacket, type RtpPacket } from "../../src/telephony/media/rtp/rtp-packet.js";
import { goertzelLevelDb, rmsLevelDb } from "../helpers/audio.js";

const SECONDS = 1.5;
const ETHERNET_IPV4_UDP_HEADERS = 14 + 20 + 8;

/** The capture's packets: each one's capture time (ms from the first) and its RTP. */
function readPcap(path: string): { atMs: number; rtp: RtpPacket }[] {
  const file = readFileSync(path);
  assert.equal(file.readUInt32LE(0), 0xa1b2c3d4, "a little-endian pcap");
  assert.equal(file.readUInt32LE(20), 1, "Ethernet link type, which SIPp's play_pcap_audio reads");
  const packets: { atMs: number; rtp: RtpPacket }[] = [];
  let first: number | undefined;
  for (let offset = 24; offset < file.length; ) {
    const at = file.readUInt32LE(offset) * 1000 + file.readUInt32LE(offset + 4) / 1000;
    const length = file.readUInt32LE(offset + 8);
    const rtp = parseRtpPacket(file.subarray(offset + 16 + ETHERNET_IPV4_UDP_HEADERS, offset + 16 + length));
    assert.ok(rtp !== null, `the packet at ${offset} is RTP`);
    first ??= at;
    packets.push({ atMs: at - first, rtp });
    offset += 16 + length;
  }
  return packets;
}

/** The packets' payloads through the service's decoder of `codec`, and the rate it decodes at. */
function decode(codec: LegCodec, packets: readonly { rtp: RtpPacket }[]): { pcm: Int16Array; rate: number } {
  const frame = new Int16Array(OPUS_MAX_FRAME_SAMPLES);
  const chunks: Int16Array[] = [];
  const opus = codec === "opus" ? new OpusDecoder() : null;
  const g722 = new G722Decoder();
  try {
    for (const { rtp } of packets) {
      const samples =
        codec === "PCMU"
          ? decodeMulaw(rtp.payload, frame)
          : codec === "PCMA"
            ? decodeAlaw(rtp.payload, frame)
            : codec === "G722"
              ? g722.decode(rtp.payload, frame)
              : (opus as OpusDecoder).decode(rtp.payload, frame);
      chunks.push(frame.slice(0, samples));
    }
  } finally {
    opus?.dispose();
  }
  const pcm = new Int16Array(chunks.reduce((sum, chunk) => sum + chunk.length, 0));
  let at = 0;
  for (const chunk of chunks) {
    pcm.set(chunk, at);
    at += chunk.length;
  }
  return { pcm, rate: { PCMU: 8000, PCMA: 8000, G722: 16_000, opus: 48_000 }[codec] };
}

describe("the room benchmark's leg audio", () => {
  const directory = mkdtempSync(join(tmpdir(), "bridgeline-leg-audio-"));
  after(() => rmSync(directory, { recursive: true, force: true }));

  for (const codec of LEG_CODECS) {
    const { payloadType, clockRate } = LEG_FORMATS[codec];

    it(`${codec}: one RTP stream of 20 ms packets under payload type ${payloadType}, a ${clockRate} Hz clock`, () => {
      const path = join(directory, `${codec}-stream.pcap`);
      writeLegPcap(path, codec, TALKER_TONES_HZ[0], SECONDS);
      const packets = readPcap(path);
      assert.equal(packets.length, SECONDS * 50);
      for (const [index, { atMs, rtp }] of packets.entries()) {
        assert.equal(rtp.payloadType, payloadType);
        assert.equal(rtp.marker, index === 0);
        assert.equal(rtp.ssrc, packets[0]?.rtp.ssrc);
        assert.equal(rtp.sequenceNumber, ((packets[0]?.rtp.sequenceNumber ?? 0) + index) & 0xffff);
        assert.equal(rtp.timestamp, (packets[0]?.rtp.timestamp ?? 0) + (index * clockRate) / 50);
        assert.ok(Math.abs(atMs - index * 20) < 0.01, `packet ${index} captured at ${atMs} ms`);
        assert.ok(rtp.payload.length > 0);
      }
    });

    it(`${codec}: a talker's tone at -20 dBFS through the codec, and nothing of another talker's`, () => {
      const [own, other] = [TALKER_TONES_HZ[2], TALKER_TONES_HZ[1]];
      const path = join(directory, `${codec}-talker.pcap`);
      writeLegPcap(path, codec, own, SECONDS);
      const { pcm, rate } = decode(codec, readPcap(path));
      // One second, after the codec has settled (Opus starts from nothing and ramps in).
      const second = pcm.subarray(rate / 5, rate / 5 + rate);
      const ownDb = goertzelLevelDb(second, own, rate);
      assert.ok(Math.abs(ownDb + 20) < 1.5, `${own} Hz at ${ownDb.toFixed(1)} dBFS`);
      const otherDb = goertzelLevelDb(second, other, rate);
      assert.ok(otherDb < -50, `${other} Hz at ${otherDb.toFixed(1)} dBFS`);
    });

    it(`${codec}: a listener's silence stays silent through the codec`, () => {
      const path = join(directory, `${codec}-listener.pcap`);
      writeLegPcap(path, codec, null, SECONDS);
      const { pcm } = decode(codec, readPcap(path));
      const level = rmsLevelDb(pcm);
      // The talk detector counts -40 dBFS and up as speech; A-law's quietest code is -72 dBFS.
      assert.ok(level < -60, `silence at ${level.toFixed(1)} dBFS`);
    });
  }
});
