import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { getHeapSpaceStatistics } from "node:v8";
import {
  OPUS_FRAME_SAMPLES,
  OPUS_MAX_FRAME_SAMPLES,
  OPUS_MAX_PACKET_BYTES,
  OPUS_SAMPLE_RATE,
  type OpusBandwidth,
  OpusDecoder,
  OpusEncoder,
  type OpusEncoderSettings,
  opusPacketDuration,
  opusPacketHasFec,
} from "../../../../src/telephony/media/codec/opus.js";
import { toneAmplitude } from "../../../helpers/audio.js";

/** A sine peaking at -12 dBFS (RMS -15.05 dBFS). */
function tone(hertz: number, seconds = 1): Int16Array {
  const samples = new Int16Array(OPUS_SAMPLE_RATE * seconds);
  for (let n = 0; n < samples.length; n++) {
    samples[n] = Math.round(8192 * Math.sin((2 * Math.PI * hertz * n) / OPUS_SAMPLE_RATE));
  }
  return samples;
}

const TONE_DBFS = 20 * Math.log10(8192 / Math.SQRT2 / 32768);

/** Frequency from zero crossings, and RMS level in dBFS. */
function analyse(samples: Int16Array): { hertz: number; dbfs: number } {
  let crossings = 0;
  let energy = 0;
  for (let n = 0; n < samples.length; n++) {
    const sample = samples[n] as number;
    energy += sample * sample;
    if (n > 0 && (samples[n - 1] as number) < 0 !== sample < 0) crossings++;
  }
  return {
    hertz: (crossings / 2) * (OPUS_SAMPLE_RATE / samples.length),
    dbfs: 10 * Math.log10(energy / samples.length / 32768 ** 2),
  };
}

function frame(samples: Int16Array, index: number): Int16Array {
  return samples.subarray(index * OPUS_FRAME_SAMPLES, (index + 1) * OPUS_FRAME_SAMPLES);
}

function encodeAll(samples: Int16Array, settings: Partial<OpusEncoderSettings>): Uint8Array[] {
  const encoder = new OpusEncoder(settings);
  const packet = new Uint8Array(OPUS_MAX_PACKET_BYTES);
  const packets: Uint8Array[] = [];
  for (let index = 0; index * OPUS_FRAME_SAMPLES < samples.length; index++) {
    packets.push(packet.slice(0, encoder.encode(frame(samples, index), packet)));
  }
  encoder.dispose();
  return packets;
}

/** Decodes every packet with one decoder; returns the audio and the decoder, ready for more. */
function decodeAll(packets: Uint8Array[]): { audio: Int16Array; decoder: OpusDecoder } {
  const decoder = new OpusDecoder();
  const audio = new Int16Array(packets.length * OPUS_FRAME_SAMPLES);
  packets.forEach((packet, index) => {
    assert.equal(decoder.decode(packet, frame(audio, index)), OPUS_FRAME_SAMPLES);
  });
  return { audio, decoder };
}

describe("Opus encoder and decoder (libopus in WebAssembly)", () => {
  it("keeps a tone's frequency and level, from 440 Hz to the 6 kHz only a wideband call carries", () => {
    for (const hertz of [440, 1000, 3000, 6000]) {
      const { audio, decoder } = decodeAll(encodeAll(tone(hertz), {}));
      decoder.dispose();
      // The second half: past the codec's start-up and its 6.5 ms delay.
      const heard = analyse(audio.subarray(audio.length / 2));
      assert.ok(Math.abs(heard.hertz - hertz) <= hertz * 0.01, `${hertz} Hz came out at ${heard.hertz} Hz`);
      assert.ok(Math.abs(heard.dbfs - TONE_DBFS) < 1, `${hertz} Hz came out at ${heard.dbfs} dBFS`);
    }
  });

  it("codes no more than the band it is limited to", () => {
    const level = (maxBandwidth: OpusBandwidth) => {
      const { audio, decoder } = decodeAll(encodeAll(tone(6000), { maxBandwidth }));
      decoder.dispose();
      return analyse(audio.subarray(audio.length / 2)).dbfs;
    };
    assert.ok(Math.abs(level("wideband") - TONE_DBFS) < 1, "a 6 kHz tone is inside the wideband (8 kHz)");
    assert.ok(level("narrowband") < TONE_DBFS - 30, "a 6 kHz tone is outside the narrowband (4 kHz)");
  });

  it("sends at the bitrate set, and at a new one from the next frame after configure", () => {
    const samples = tone(1000, 2);
    const encoder = new OpusEncoder({ bitrate: 16_000 });
    const packet = new Uint8Array(OPUS_MAX_PACKET_BYTES);
    const sizes: number[] = [];
    for (let index = 0; index < 100; index++) {
      if (index === 50) encoder.configure({ bitrate: 48_000 });
      sizes.push(encoder.encode(frame(samples, index), packet));
    }
    encoder.dispose();
    // The first frames of each half are left out: the rate settles over a few frames.
    const rate = (from: number, to: number) =>
      (sizes.slice(from, to).reduce((sum, size) => sum + size, 0) * 8) / ((to - from) * 20);
    const low = rate(10, 50);
    const high = rate(60, 100);
    assert.ok(Math.abs(low - 16) < 16 * 0.2, `16 kbit/s set, ${low} sent`);
    assert.ok(Math.abs(high - 48) < 48 * 0.2, `48 kbit/s set, ${high} sent`);
  });

  it("rebuilds a lost frame from the next packet's FEC data closer to the original than concealment", () => {
    // A tune whose note changes every fourth frame; the frame where a new note starts is lost, so
    // concealment, extrapolating the note before, must miss what FEC carries.
    const notes = [300, 470, 620, 410, 540, 350, 690, 450];
    const original = new Int16Array(200 * OPUS_FRAME_SAMPLES);
    let phase = 0;
    for (let n = 0; n < original.length; n++) {
      phase +=
        (2 * Math.PI * (notes[Math.floor(n / (4 * OPUS_FRAME_SAMPLES)) % notes.length] as number)) / 48_000;
      original[n] = Math.round(
        6000 * (Math.sin(phase) + 0.5 * Math.sin(2 * phase) + 0.25 * Math.sin(3 * phase)),
      );
    }
    const packets = encodeAll(original, { bitrate: 32_000, inbandFec: true, expectedLossPercent: 10 });
    const lost = (index: number) => index >= 20 && index % 4 === 0 && index < packets.length - 1;

    const complete = decodeAll(packets);
    complete.decoder.dispose();
    const withFec = new Int16Array(original.length);
    const withPlc = new Int16Array(original.length);
    const fecDecoder = new OpusDecoder();
    const plcDecoder = new OpusDecoder();
    packets.forEach((packet, index) => {
      if (lost(index)) {
        assert.equal(fecDecoder.decodeLost(frame(withFec, index), packets[index + 1]), OPUS_FRAME_SAMPLES);
        assert.equal(plcDecoder.decodeLost(frame(withPlc, index)), OPUS_FRAME_SAMPLES);
      } else {
        fecDecoder.decode(packet, frame(withFec, index));
        plcDecoder.decode(packet, frame(withPlc, index));
      }
    });
    fecDecoder.dispose();
    plcDecoder.dispose();

    // The codec's delay, from the complete decoding: the shift that best matches the original.
    let delay = 0;
    let bestCorrelation = Number.NEGATIVE_INFINITY;
    for (let shift = 0; shift < OPUS_FRAME_SAMPLES; shift++) {
      let correlation = 0;
      for (let n = 20 * OPUS_FRAME_SAMPLES; n < 60 * OPUS_FRAME_SAMPLES; n++) {
        correlation += (original[n] as number) * (complete.audio[n + shift] as number);
      }
      if (correlation > bestCorrelation) {
        bestCorrelation = correlation;
        delay = shift;
      }
    }
    let signal = 0;
    let fecError = 0;
    let plcError = 0;
    packets.forEach((_, index) => {
      if (!lost(index)) return;
      for (let n = index * OPUS_FRAME_SAMPLES; n < (index + 1) * OPUS_FRAME_SAMPLES; n++) {
        const expected = original[n - delay] as number;
        signal += expected ** 2;
        fecError += ((withFec[n] as number) - expected) ** 2;
        plcError += ((withPlc[n] as number) - expected) ** 2;
      }
    });
    const fecSnr = 10 * Math.log10(signal / fecError);
    const plcSnr = 10 * Math.log10(signal / plcError);
    // Measured: 5.1 dB against -0.5 dB (the complete decoding: 7.3 dB).
    assert.ok(fecSnr > plcSnr + 3, `FEC ${fecSnr.toFixed(1)} dB, concealment ${plcSnr.toFixed(1)} dB`);
  });

  it("conceals a lost frame when the next packet carries no FEC data", () => {
    // No expected loss: libopus sends no FEC data.
    const packets = encodeAll(tone(1000), { inbandFec: true, expectedLossPercent: 0 });
    const head = packets.slice(0, 30);
    const withNext = decodeAll(head).decoder;
    const withoutNext = decodeAll(head).decoder;
    const recovered = new Int16Array(OPUS_FRAME_SAMPLES);
    const concealed = new Int16Array(OPUS_FRAME_SAMPLES);
    withNext.decodeLost(recovered, packets[31]);
    withoutNext.decodeLost(concealed);
    withNext.dispose();
    withoutNext.dispose();
    assert.deepEqual(recovered, concealed);
  });

  it("conceals a lost frame with the sound before it, not silence, and fades over a long loss", () => {
    const { decoder } = decodeAll(encodeAll(tone(1000), {}));
    const concealed = new Int16Array(OPUS_FRAME_SAMPLES);
    assert.equal(decoder.decodeLost(concealed), OPUS_FRAME_SAMPLES);
    const first = analyse(concealed);
    // Measured: 1025 Hz at 7 dB below the tone.
    assert.ok(Math.abs(first.hertz - 1000) < 50, `concealed at ${first.hertz} Hz`);
    assert.ok(first.dbfs > TONE_DBFS - 10, `concealed at ${first.dbfs} dBFS`);
    for (let loss = 2; loss <= 10; loss++) decoder.decodeLost(concealed);
    decoder.dispose();
    const tenth = analyse(concealed);
    assert.ok(tenth.dbfs < first.dbfs - 10, `the tenth lost frame at ${tenth.dbfs} dBFS`);
  });

  it("encodes and decodes into the caller's buffers, allocating nothing per frame", () => {
    const samples = tone(1000);
    const encoder = new OpusEncoder();
    const decoder = new OpusDecoder();
    const packet = new Uint8Array(OPUS_MAX_PACKET_BYTES);
    const out = new Int16Array(OPUS_FRAME_SAMPLES);
    // Every view the loop needs is made before it: the frames, and the packet at each length.
    const frames = Array.from({ length: 50 }, (_, index) => frame(samples, index));
    const sent = Array.from({ length: OPUS_MAX_PACKET_BYTES + 1 }, (_, length) => packet.subarray(0, length));
    const frameOnce = (index: number) => {
      const length = encoder.encode(frames[index % frames.length] as Int16Array, packet);
      decoder.decode(sent[length] as Uint8Array, out);
      decoder.decodeLost(out, sent[length]);
      decoder.decodeLost(out);
    };
    const young = () =>
      getHeapSpaceStatistics()
        .filter((space) => space.space_name.startsWith("new"))
        .reduce((sum, space) => sum + space.space_used_size, 0);
    for (let index = 0; index < 200; index++) frameOnce(index);
    const before = young();
    for (let index = 0; index < 1000; index++) frameOnce(index);
    const allocated = young() - before;
    encoder.dispose();
    decoder.dispose();
    // Measured: a few bytes a frame (the figures' own read). A garbage collection in between would
    // make this negative; one view made per frame would be about 100 bytes a frame.
    assert.ok(allocated >= 0 && allocated < 32 * 1000, `${allocated} bytes allocated over 1000 frames`);
  });

  it("writes only the samples decoded and keeps a packet within the caller's buffer", () => {
    const samples = tone(1000);
    const encoder = new OpusEncoder({ bitrate: 64_000 });
    const small = new Uint8Array(40).fill(0xee);
    const length = encoder.encode(frame(samples, 0), small.subarray(0, 30));
    encoder.dispose();
    assert.ok(length > 0 && length <= 30, `a ${length}-byte packet`);
    assert.deepEqual(small.subarray(30), new Uint8Array(10).fill(0xee));

    const decoder = new OpusDecoder();
    const out = new Int16Array(OPUS_MAX_FRAME_SAMPLES).fill(0x7777);
    assert.equal(decoder.decode(small.subarray(0, length), out), OPUS_FRAME_SAMPLES);
    assert.deepEqual(
      out.subarray(OPUS_FRAME_SAMPLES),
      new Int16Array(OPUS_MAX_FRAME_SAMPLES - OPUS_FRAME_SAMPLES).fill(0x7777),
    );
    decoder.dispose();
  });

  it("goes on coding when libopus's memory grows under it", () => {
    // 16 MiB at the start; 1,000 pairs of states (about 60 kB a pair) make it grow, which replaces
    // the memory's buffer under the views kept on it.
    const samples = tone(1000);
    const [first, ...others] = Array.from({ length: 1000 }, () => ({
      encoder: new OpusEncoder(),
      decoder: new OpusDecoder(),
    }));
    const pair = first as { encoder: OpusEncoder; decoder: OpusDecoder };
    const packet = new Uint8Array(OPUS_MAX_PACKET_BYTES);
    const audio = new Int16Array(samples.length);
    for (let index = 0; index * OPUS_FRAME_SAMPLES < samples.length; index++) {
      const length = pair.encoder.encode(frame(samples, index), packet);
      pair.decoder.decode(packet.subarray(0, length), frame(audio, index));
    }
    for (const { encoder, decoder } of [pair, ...others]) {
      encoder.dispose();
      decoder.dispose();
    }
    const heard = analyse(audio.subarray(audio.length / 2));
    assert.ok(
      Math.abs(heard.hertz - 1000) <= 10 && Math.abs(heard.dbfs - TONE_DBFS) < 1,
      JSON.stringify(heard),
    );
  });

  it("frees a disposed encoder's and decoder's memory", () => {
    const before = process.memoryUsage().rss;
    for (let round = 0; round < 3000; round++) {
      new OpusEncoder().dispose();
      new OpusDecoder().dispose();
    }
    // Measured: 2 MB; without dispose, 183 MB.
    const grown = process.memoryUsage().rss - before;
    assert.ok(grown < 50e6, `${grown} bytes more resident`);
  });

  it("rejects a malformed packet and goes on decoding", () => {
    const packets = encodeAll(tone(1000), {});
    const decoder = new OpusDecoder();
    const out = new Int16Array(OPUS_MAX_FRAME_SAMPLES);
    assert.equal(decoder.decode(packets[0] as Uint8Array, out), OPUS_FRAME_SAMPLES);
    // Code 3 (RFC 6716 §3.2.5) announcing 63 frames of 20 ms: more than 120 ms.
    assert.throws(
      () => decoder.decode(Uint8Array.of(0xff, 0x3f, 0x00), out),
      /opus_decode: corrupted stream/,
    );
    assert.throws(() => decoder.decode(new Uint8Array(0), out), RangeError);
    assert.equal(decoder.decode(packets[1] as Uint8Array, out), OPUS_FRAME_SAMPLES);
    decoder.dispose();
    assert.throws(() => decoder.decode(packets[2] as Uint8Array, out), /disposed/);
  });

  it("rejects settings out of range and frames of a size Opus has not", () => {
    assert.throws(() => new OpusEncoder({ bitrate: 1000 }), RangeError);
    assert.throws(() => new OpusEncoder({ complexity: 11 }), RangeError);
    assert.throws(() => new OpusEncoder({ expectedLossPercent: -1 }), RangeError);
    const encoder = new OpusEncoder();
    assert.throws(
      () => encoder.encode(new Int16Array(1000), new Uint8Array(OPUS_MAX_PACKET_BYTES)),
      /invalid argument/,
    );
    encoder.dispose();
    encoder.dispose();
    assert.throws(() => encoder.encode(new Int16Array(OPUS_FRAME_SAMPLES), new Uint8Array(1)), /disposed/);
  });

  describe("at 16 kHz (a wideband room's rate)", () => {
    /** A tone at 16 kHz peaking at -12 dBFS. */
    const tone16 = (hertz: number, frames: number) =>
      Int16Array.from({ length: frames * 320 }, (_, n) =>
        Math.round(8192 * Math.sin((2 * Math.PI * hertz * n) / 16000)),
      );
    function code16(samples: Int16Array, settings: Partial<OpusEncoderSettings>): Uint8Array[] {
      const encoder = new OpusEncoder({ ...settings, sampleRate: 16000 });
      const packet = new Uint8Array(OPUS_MAX_PACKET_BYTES);
      const packets: Uint8Array[] = [];
      for (let index = 0; index * 320 < samples.length; index++) {
        packets.push(
          packet.slice(0, encoder.encode(samples.subarray(index * 320, (index + 1) * 320), packet)),
        );
      }
      encoder.dispose();
      return packets;
    }

    it("codes 320-sample frames, plays 960 ticks of the 48 kHz RTP clock each, and keeps a 6 kHz tone", () => {
      const packets = code16(tone16(6000, 50), { bitrate: 24_000, maxBandwidth: "wideband" });
      const decoder = new OpusDecoder({ sampleRate: 16000 });
      assert.equal(decoder.frameSamples, 320);
      const out = new Int16Array(320);
      let last = 0;
      for (const packet of packets) {
        assert.equal(opusPacketDuration(packet), 960);
        assert.equal(decoder.decode(packet, out), 320);
        last = toneAmplitude(out, 6000, 16000);
      }
      decoder.dispose();
      assert.ok(Math.abs(last / 8192 - 1) < 0.1, `the tone came out at ${last} of 8192`);
    });

    it("tells which packets carry FEC data, and only they rebuild a lost frame otherwise than concealment", () => {
      // A voiced tune: libopus codes FEC data for what its voice detector takes for speech.
      let phase = 0;
      const tune = Int16Array.from({ length: 100 * 320 }, (_, n) => {
        phase += (2 * Math.PI * ([220, 330, 260][Math.floor(n / 1280) % 3] as number)) / 16000;
        return Math.round(5000 * (Math.sin(phase) + 0.5 * Math.sin(2 * phase) + 0.3 * Math.sin(3 * phase)));
      });
      for (const inbandFec of [true, false]) {
        const packets = code16(tune, { bitrate: 24_000, inbandFec, expectedLossPercent: 10 });
        const withFec = packets.filter((packet) => opusPacketHasFec(packet)).length;
        // Measured: 77 of 100 (the voice detector passes over some frames).
        if (inbandFec) assert.ok(withFec > 60, `${withFec} of 100 packets with FEC data`);
        else assert.equal(withFec, 0);
        for (const index of [30, 31, 60, 61]) {
          const recovering = new OpusDecoder({ sampleRate: 16000 });
          const concealing = new OpusDecoder({ sampleRate: 16000 });
          const out = new Int16Array(320);
          for (const packet of packets.slice(0, index)) {
            recovering.decode(packet, out);
            concealing.decode(packet, out);
          }
          const recovered = new Int16Array(320);
          const concealed = new Int16Array(320);
          recovering.decodeLost(recovered, packets[index + 1]);
          concealing.decodeLost(concealed);
          recovering.dispose();
          concealing.dispose();
          const next = packets[index + 1] as Uint8Array;
          assert.equal(
            recovered.some((sample, n) => sample !== concealed[n]),
            opusPacketHasFec(next),
            `packet ${index + 1}`,
          );
        }
      }
    });

    it("finds the FEC flag behind the frame lengths of code 2 and 3 packets, and none in CELT or malformed ones", () => {
      // A 20 ms wideband SILK TOC (config 9); the first frame's data begins with its VAD and LBRR flags.
      const silk = 9 << 3;
      assert.equal(opusPacketHasFec(Uint8Array.of(silk, 0b1100_0000, 1)), true);
      assert.equal(opusPacketHasFec(Uint8Array.of(silk, 0b1000_0000, 1)), false);
      // Stereo: the side channel's flags follow the mid channel's.
      assert.equal(opusPacketHasFec(Uint8Array.of(silk | 4, 0b1010_0000)), false);
      assert.equal(opusPacketHasFec(Uint8Array.of(silk | 4, 0b1001_0000)), true);
      // 60 ms SILK (config 11): three VAD flags, then LBRR.
      assert.equal(opusPacketHasFec(Uint8Array.of((11 << 3) | 0, 0b0001_0000)), true);
      // Code 2: a length byte before the first frame; code 3 VBR with padding: count, padding, lengths.
      assert.equal(opusPacketHasFec(Uint8Array.of(silk | 2, 2, 0b0100_0000, 0, 0)), true);
      assert.equal(opusPacketHasFec(Uint8Array.of(silk | 3, 0xc2, 1, 2, 0b0100_0000, 0, 0, 0)), true);
      assert.equal(opusPacketHasFec(Uint8Array.of(silk | 3, 0xc2, 1)), false);
      // CELT-only (config 31) has no FEC; an empty packet has nothing.
      assert.equal(opusPacketHasFec(Uint8Array.of(31 << 3, 0xff)), false);
      assert.equal(opusPacketHasFec(new Uint8Array(0)), false);
      assert.equal(opusPacketDuration(Uint8Array.of((11 << 3) | 1, 0, 0)), 2 * 2880);
      assert.equal(opusPacketDuration(Uint8Array.of((16 << 3) | 3, 5)), 5 * 120);
    });

    it("resets a decoder to a new stream's start", () => {
      const packets = code16(tone16(1000, 20), {});
      const fresh = new OpusDecoder({ sampleRate: 16000 });
      const reused = new OpusDecoder({ sampleRate: 16000 });
      const out = new Int16Array(320);
      for (const packet of packets.slice(10)) reused.decode(packet, out);
      reused.reset();
      const a = new Int16Array(320);
      const b = new Int16Array(320);
      for (const packet of packets.slice(0, 3)) {
        fresh.decode(packet, a);
        reused.decode(packet, b);
      }
      fresh.dispose();
      reused.dispose();
      assert.deepEqual(b, a);
    });
  });
});
