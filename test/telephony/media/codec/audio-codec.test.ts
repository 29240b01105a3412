import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  audioRateOf,
  createDecoder,
  createEncoder,
  DEFAULT_OPUS_BITRATE,
  type EncoderSpec,
  encoderKey,
  MAX_ENCODED_FRAME_BYTES,
  opusEncoderSettings,
  rtpClockRateOf,
} from "../../../../src/telephony/media/codec/audio-codec.js";
import { opusPacketHasFec } from "../../../../src/telephony/media/codec/opus.js";
import type { AudioCodecName } from "../../../../src/telephony/media/rtp/rtp-stream.js";
import { ToneGenerator, toneAmplitude } from "../../../helpers/audio.js";

const CODECS: readonly AudioCodecName[] = ["PCMU", "PCMA", "G722", "opus"];

/** `frames` 20 ms frames of a tone at `rate`, through one encoder and one decoder; the last frame decoded. */
function roundTrip(
  spec: EncoderSpec,
  hertz: number,
  frames: number,
): { last: Int16Array; payloads: Uint8Array[] } {
  const encoder = createEncoder(spec);
  const decoder = createDecoder(spec.codec);
  assert.equal(decoder.sampleRate, encoder.sampleRate);
  const generator = new ToneGenerator(hertz, 0.25, encoder.sampleRate);
  const frame = new Int16Array(encoder.sampleRate / 50);
  const payload = new Uint8Array(MAX_ENCODED_FRAME_BYTES);
  const last = new Int16Array(frame.length);
  const payloads: Uint8Array[] = [];
  for (let k = 0; k < frames; k++) {
    const length = encoder.encode(generator.fill(frame), payload);
    payloads.push(payload.slice(0, length));
    assert.equal(decoder.decode(payload.subarray(0, length), last), frame.length);
  }
  encoder.dispose();
  decoder.dispose();
  return { last, payloads };
}

describe("audio codecs behind one interface", () => {
  it("codes each codec at its rate: G.711 at 8 kHz, G.722 and Opus at 16 kHz, on their RTP clocks", () => {
    assert.deepEqual(CODECS.map(audioRateOf), [8000, 8000, 16000, 16000]);
    assert.deepEqual(CODECS.map(rtpClockRateOf), [8000, 8000, 8000, 48000]);
    for (const codec of CODECS) {
      const hertz = audioRateOf(codec) === 16000 ? 6000 : 1000;
      const { last, payloads } = roundTrip({ codec }, hertz, 25);
      const amplitude = toneAmplitude(last, hertz, audioRateOf(codec));
      assert.ok(Math.abs(amplitude / 8192 - 1) < 0.1, `${codec}: ${hertz} Hz came out at ${amplitude}`);
      if (codec !== "opus")
        assert.ok(
          payloads.every((payload) => payload.length === 160),
          codec,
        );
    }
  });

  it("encodes Opus as the peer's fmtp asks: its bitrate, FEC only when it uses it, no band above what it plays", () => {
    assert.deepEqual(opusEncoderSettings(undefined), {
      bitrate: DEFAULT_OPUS_BITRATE,
      complexity: 5,
      inbandFec: false,
      expectedLossPercent: 10,
      maxBandwidth: "wideband",
    });
    assert.deepEqual(
      opusEncoderSettings({ useInbandFec: true, maxAverageBitrate: 40_000, maxPlaybackRate: 8000 }),
      {
        bitrate: 40_000,
        complexity: 5,
        inbandFec: true,
        expectedLossPercent: 10,
        maxBandwidth: "narrowband",
      },
    );
    assert.equal(
      opusEncoderSettings({ useInbandFec: false, maxPlaybackRate: 12000 }).maxBandwidth,
      "mediumband",
    );
    // What the settings do: FEC data in the packets, and the band (a 6 kHz tone is outside 4 kHz).
    const withFec = roundTrip({ codec: "opus", opus: { useInbandFec: true } }, 6000, 25);
    assert.ok(withFec.payloads.slice(1).every(opusPacketHasFec), "FEC data at the default bitrate, wideband");
    assert.ok(toneAmplitude(withFec.last, 6000, 16000) > 8192 * 0.9, "and the wideband kept");
    const without = roundTrip({ codec: "opus", opus: { useInbandFec: false } }, 6000, 25);
    assert.ok(!without.payloads.some(opusPacketHasFec));
    const narrow = roundTrip(
      { codec: "opus", opus: { useInbandFec: false, maxPlaybackRate: 8000 } },
      6000,
      25,
    );
    assert.ok(toneAmplitude(narrow.last, 6000, 16000) < 8192 * 0.05, "6 kHz is above a narrowband player");
  });

  it("keys encoders by what they make: equal settings share a key, different ones do not", () => {
    const keys = [
      { codec: "PCMU" },
      { codec: "PCMA" },
      { codec: "G722" },
      { codec: "opus" },
      { codec: "opus", opus: { useInbandFec: true } },
      { codec: "opus", opus: { useInbandFec: true, maxAverageBitrate: 32_000 } },
      { codec: "opus", opus: { useInbandFec: true, maxPlaybackRate: 8000 } },
    ].map((spec) => encoderKey(spec as EncoderSpec));
    assert.equal(new Set(keys).size, keys.length, keys.join(" "));
    // The defaults spelt out are the defaults.
    assert.equal(
      encoderKey({
        codec: "opus",
        opus: { useInbandFec: false, maxAverageBitrate: DEFAULT_OPUS_BITRATE, maxPlaybackRate: 48000 },
      }),
      encoderKey({ codec: "opus" }),
    );
    // Equal keys: identical payloads from identical input.
    const spec: EncoderSpec = { codec: "opus", opus: { useInbandFec: true } };
    const twin: EncoderSpec = { codec: "opus", opus: { useInbandFec: true, maxPlaybackRate: 48000 } };
    assert.equal(encoderKey(spec), encoderKey(twin));
    assert.deepEqual(roundTrip(spec, 440, 10).payloads, roundTrip(twin, 440, 10).payloads);
  });

  it("decoders start afresh on reset", () => {
    for (const codec of CODECS) {
      const { payloads } = roundTrip({ codec }, 440, 20);
      const fresh = createDecoder(codec);
      const reused = createDecoder(codec);
      const out = new Int16Array(320);
      for (const payload of payloads.slice(10)) reused.decode(payload, out);
      reused.reset();
      const expected = new Int16Array(320);
      const actual = new Int16Array(320);
      for (const payload of payloads.slice(0, 3)) {
        fresh.decode(payload, expected);
        reused.decode(payload, actual);
      }
      fresh.dispose();
      reused.dispose();
      assert.deepEqual(actual, expected, codec);
      assert.equal(fresh.decodeLost === undefined, codec !== "opus");
    }
  });
});
