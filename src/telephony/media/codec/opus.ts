/**
 * Opus (RFC 6716) for the media path, as RTP carries it (RFC 7587): mono 16-bit PCM in 20 ms frames,
 * at 48 kHz or at a lower rate libopus codes and decodes at (the media path runs it at 16 kHz, a
 * wideband room's rate; the RTP clock stays 48 kHz whatever the rate, RFC 7587 §4.1). The SDP names
 * the format `opus/48000/2` whatever the stream holds; a mono stream is valid, and a stereo packet
 * from a peer is decoded to mono by libopus (RFC 7587 §3.4).
 *
 * libopus is the WebAssembly build shipped in the @evan/opus package (chosen by measurement:
 * bench/README.md, "Opus libraries"), driven through its C API directly rather than the package's
 * JavaScript classes, which allocate per frame and offer neither in-band FEC nor concealment of one
 * 20 ms frame. One instance per thread (a media worker has its own) holds every encoder and decoder
 * of that thread; calls are synchronous, so they share one scratch area for PCM and packets.
 * Nothing is allocated per frame: PCM and packets are copied between the caller's buffers and the
 * scratch area.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

/** Opus's sample rate for RTP (RFC 7587 §4.1), whatever the audio bandwidth. */
export const OPUS_SAMPLE_RATE = 48_000;
/** Samples in one 20 ms frame at 48 kHz (the `ptime` of 20 the media path offers, RFC 7587 §6.1). */
export const OPUS_FRAME_SAMPLES = 960;
/** The PCM rates libopus encodes from and decodes to (opus_encoder_init, opus_decoder_init). */
export type OpusPcmRate = 8000 | 12_000 | 16_000 | 24_000 | 48_000;
/** Samples in the longest packet a peer may send (120 ms, RFC 6716 §3.2.5): a safe decode buffer. */
export const OPUS_MAX_FRAME_SAMPLES = 5760;
/** Bytes of the largest single-frame packet: a 1,275-byte frame and its TOC byte (RFC 6716 §3.2.1). */
export const OPUS_MAX_PACKET_BYTES = 1276;

/**
 * Bytes of a packet taken in or given out: libopus's own recommended ceiling, and larger than any
 * packet that fits a UDP datagram on an Ethernet path.
 */
const SCRATCH_PACKET_BYTES = 4000;

/** libopus request and value numbers (opus_defines.h). */
const OPUS_APPLICATION_VOIP = 2048;
const OPUS_SET_BITRATE = 4002;
const OPUS_SET_MAX_BANDWIDTH = 4004;
const OPUS_SET_COMPLEXITY = 4010;
const OPUS_SET_INBAND_FEC = 4012;
const OPUS_SET_PACKET_LOSS_PERC = 4014;
const OPUS_RESET_STATE = 4028;
const BANDWIDTH = {
  narrowband: 1101,
  mediumband: 1102,
  wideband: 1103,
  superwideband: 1104,
  fullband: 1105,
} as const;

/** Audio bandwidth: 4, 6, 8, 12 or 20 kHz. */
export type OpusBandwidth = keyof typeof BANDWIDTH;

export interface OpusEncoderSettings {
  /**
   * Average bitrate in bit/s, 6,000-510,000: the peer's `maxaveragebitrate` (RFC 7587 §6.1) when it
   * gave one. Default 32,000.
   */
  bitrate: number;
  /** Encoder effort, 0-10: higher sounds better for more CPU. Default 5. */
  complexity: number;
  /**
   * In-band forward error correction: each packet also carries a coarse copy of the previous frame,
   * which the receiver decodes when that frame is lost (the peer's `useinbandfec=1`, RFC 7587 §6.1).
   * Default true.
   */
  inbandFec: boolean;
  /**
   * Packet loss the encoder plans for, 0-100 %. libopus adds FEC data only when this is above 0 and
   * the bitrate leaves room for it at the audio band being coded: above 5 % it narrows the band to
   * make room, at 5 % or less it sends none instead. Default 10.
   */
  expectedLossPercent: number;
  /**
   * Widest audio band to code: a 16 kHz room mix has nothing above 8 kHz ("wideband"), and a peer's
   * `maxplaybackrate` (RFC 7587 §6.1) may ask for less. Default "fullband".
   */
  maxBandwidth: OpusBandwidth;
}

const DEFAULT_ENCODER_SETTINGS: OpusEncoderSettings = {
  bitrate: 32_000,
  complexity: 5,
  inbandFec: true,
  expectedLossPercent: 10,
  maxBandwidth: "fullband",
};

/** The libopus C API as the WebAssembly module exports it (ctl requests through set/get shims). */
interface LibopusExports {
  memory: WebAssembly.Memory;
  _initialize(): void;
  malloc(bytes: number): number;
  free(pointer: number): void;
  opus_strerror(code: number): number;
  opus_encoder_get_size(channels: number): number;
  opus_encoder_init(state: number, sampleRate: number, channels: number, application: number): number;
  opus_encode(state: number, pcm: number, frameSize: number, data: number, maxDataBytes: number): number;
  opus_encoder_ctl_set(state: number, request: number, value: number): number;
  opus_decoder_get_size(channels: number): number;
  opus_decoder_init(state: number, sampleRate: number, channels: number): number;
  opus_decoder_ctl_set(state: number, request: number, value: number): number;
  opus_decode(
    state: number,
    data: number,
    length: number,
    pcm: number,
    frameSize: number,
    decodeFec: number,
  ): number;
}

/** The module instance of this thread, with its scratch area and views on its memory. */
interface Libopus {
  exports: LibopusExports;
  pcmPointer: number;
  packetPointer: number;
  /** Views on the memory; replaced when it grows (growth detaches the old buffer). */
  pcm: Int16Array;
  packet: Uint8Array;
  bytes: Uint8Array;
}

let libopus: Libopus | undefined;

/** A WebAssembly module whose one function uses a SIMD instruction (`i8x16.splat`). */
const SIMD_PROBE = Buffer.from("0061736d01000000010401600000030201000a090107004100fd0f1a0b", "hex");

function wasmPath(): string {
  // Node 20 has WebAssembly SIMD wherever the CPU allows it; the plain build is for a CPU that does not.
  const simd = WebAssembly.validate(SIMD_PROBE);
  return createRequire(import.meta.url).resolve(`@evan/opus/wasm/${simd ? "simd" : "opus"}.wasm`);
}

/** Compiles and instantiates libopus on first use, so importing this module costs nothing. */
function load(): Libopus {
  if (libopus) return libopus;
  const WASI_ENOSYS = 52;
  let loaded: Libopus | undefined;
  const instance = new WebAssembly.Instance(new WebAssembly.Module(readFileSync(wasmPath())), {
    // libopus does no I/O; C stdio asked to write or seek is told it cannot (never loops on a short write).
    wasi_snapshot_preview1: {
      fd_close: () => WASI_ENOSYS,
      fd_seek: () => WASI_ENOSYS,
      fd_write: () => WASI_ENOSYS,
      proc_exit: (code: number) => {
        throw new Error(`libopus exited with status ${code}`);
      },
    },
    env: {
      emscripten_notify_memory_growth: () => {
        if (loaded) setViews(loaded);
      },
    },
  });
  const exports = instance.exports as unknown as LibopusExports;
  // A WASI reactor module: its initialiser runs once, before any other export.
  exports._initialize();
  const pcmPointer = exports.malloc(OPUS_MAX_FRAME_SAMPLES * Int16Array.BYTES_PER_ELEMENT);
  const packetPointer = exports.malloc(SCRATCH_PACKET_BYTES);
  if (pcmPointer === 0 || packetPointer === 0) throw new Error("libopus: no memory for the scratch area");
  loaded = { exports, pcmPointer, packetPointer, ...views(exports.memory, pcmPointer, packetPointer) };
  libopus = loaded;
  return loaded;
}

function views(
  memory: WebAssembly.Memory,
  pcmPointer: number,
  packetPointer: number,
): Pick<Libopus, "pcm" | "packet" | "bytes"> {
  return {
    pcm: new Int16Array(memory.buffer, pcmPointer, OPUS_MAX_FRAME_SAMPLES),
    packet: new Uint8Array(memory.buffer, packetPointer, SCRATCH_PACKET_BYTES),
    bytes: new Uint8Array(memory.buffer),
  };
}

function setViews(lib: Libopus): void {
  Object.assign(lib, views(lib.exports.memory, lib.pcmPointer, lib.packetPointer));
}

/** Throws libopus's own message for a negative return code; returns the others. */
function check(lib: Libopus, call: string, code: number): number {
  if (code >= 0) return code;
  const start = lib.exports.opus_strerror(code);
  const end = lib.bytes.indexOf(0, start);
  throw new Error(`${call}: ${new TextDecoder().decode(lib.bytes.subarray(start, end))}`);
}

/** Allocates and initialises a libopus state; frees it again if initialisation fails. */
function createState(lib: Libopus, size: number, init: (state: number) => number, call: string): number {
  const state = lib.exports.malloc(size);
  if (state === 0) throw new Error(`${call}: no memory`);
  try {
    check(lib, call, init(state));
  } catch (error) {
    lib.exports.free(state);
    throw error;
  }
  return state;
}

function checkRange(name: string, value: number, lowest: number, highest: number): void {
  if (!Number.isInteger(value) || value < lowest || value > highest) {
    throw new RangeError(`${name} must be an integer from ${lowest} to ${highest}, not ${value}`);
  }
}

/** The settings an encoder starts with, and the PCM rate it takes (default 48,000 Hz; fixed for its life). */
export type OpusEncoderOptions = Partial<OpusEncoderSettings> & { readonly sampleRate?: OpusPcmRate };

/** Encodes mono frames into Opus packets, in the VoIP application mode (speech first). */
export class OpusEncoder {
  /** The rate of the PCM it takes. */
  readonly sampleRate: OpusPcmRate;
  readonly #lib = load();
  #state: number;

  constructor(options: OpusEncoderOptions = {}) {
    const { sampleRate = OPUS_SAMPLE_RATE, ...settings } = options;
    const lib = this.#lib;
    this.sampleRate = sampleRate;
    this.#state = createState(
      lib,
      lib.exports.opus_encoder_get_size(1),
      (state) => lib.exports.opus_encoder_init(state, sampleRate, 1, OPUS_APPLICATION_VOIP),
      "opus_encoder_init",
    );
    try {
      this.configure({ ...DEFAULT_ENCODER_SETTINGS, ...settings });
    } catch (error) {
      this.dispose();
      throw error;
    }
  }

  /** Changes some settings (a re-negotiated `maxaveragebitrate`, say); takes effect from the next frame. */
  configure(settings: Partial<OpusEncoderSettings>): void {
    const { bitrate, complexity, inbandFec, expectedLossPercent, maxBandwidth } = settings;
    if (bitrate !== undefined) {
      checkRange("bitrate", bitrate, 6_000, 510_000);
      this.#set(OPUS_SET_BITRATE, bitrate);
    }
    if (complexity !== undefined) {
      checkRange("complexity", complexity, 0, 10);
      this.#set(OPUS_SET_COMPLEXITY, complexity);
    }
    if (inbandFec !== undefined) this.#set(OPUS_SET_INBAND_FEC, inbandFec ? 1 : 0);
    if (expectedLossPercent !== undefined) {
      checkRange("expectedLossPercent", expectedLossPercent, 0, 100);
      this.#set(OPUS_SET_PACKET_LOSS_PERC, expectedLossPercent);
    }
    if (maxBandwidth !== undefined) this.#set(OPUS_SET_MAX_BANDWIDTH, BANDWIDTH[maxBandwidth]);
  }

  /**
   * Encodes one frame (`pcm.length` samples: 2.5, 5, 10, 20, 40 or 60 ms; at 48 kHz 960 is 20 ms, at
   * 16 kHz 320) into `packet`, which bounds the packet's size; returns the packet's length in bytes.
   */
  encode(pcm: Int16Array, packet: Uint8Array): number {
    const lib = this.#lib;
    const state = this.#live();
    if (pcm.length > OPUS_MAX_FRAME_SAMPLES) {
      throw new RangeError(`a frame of ${pcm.length} samples is longer than Opus allows`);
    }
    lib.pcm.set(pcm);
    const length = check(
      lib,
      "opus_encode",
      lib.exports.opus_encode(
        state,
        lib.pcmPointer,
        pcm.length,
        lib.packetPointer,
        Math.min(packet.length, SCRATCH_PACKET_BYTES),
      ),
    );
    const source = lib.packet;
    for (let i = 0; i < length; i++) packet[i] = source[i] as number;
    return length;
  }

  /** Frees the encoder's state; the encoder cannot be used afterwards. Safe to call twice. */
  dispose(): void {
    if (this.#state === 0) return;
    this.#lib.exports.free(this.#state);
    this.#state = 0;
  }

  #set(request: number, value: number): void {
    check(
      this.#lib,
      "opus_encoder_ctl",
      this.#lib.exports.opus_encoder_ctl_set(this.#live(), request, value),
    );
  }

  #live(): number {
    if (this.#state === 0) throw new Error("the Opus encoder was disposed of");
    return this.#state;
  }
}

/** Decodes Opus packets to mono at its rate (default 48 kHz), and stands in for lost ones (FEC or concealment). */
export class OpusDecoder {
  /** The rate of the PCM it gives. */
  readonly sampleRate: OpusPcmRate;
  /** Samples in 20 ms at its rate. */
  readonly frameSamples: number;
  readonly #lib = load();
  #state: number;

  constructor(options: { readonly sampleRate?: OpusPcmRate } = {}) {
    const lib = this.#lib;
    const sampleRate = options.sampleRate ?? OPUS_SAMPLE_RATE;
    this.sampleRate = sampleRate;
    this.frameSamples = sampleRate / 50;
    this.#state = createState(
      lib,
      lib.exports.opus_decoder_get_size(1),
      (state) => lib.exports.opus_decoder_init(state, sampleRate, 1),
      "opus_decoder_init",
    );
  }

  /**
   * Decodes one packet into `out`, which must hold the packet's duration (`frameSamples` for the
   * 20 ms packets negotiated; OPUS_MAX_FRAME_SAMPLES takes any); returns the samples written.
   */
  decode(packet: Uint8Array, out: Int16Array): number {
    if (packet.length === 0) throw new RangeError("an empty packet: use decodeLost for a lost frame");
    return this.#decode(packet, out, Math.min(out.length, OPUS_MAX_FRAME_SAMPLES), 0);
  }

  /**
   * Writes `samples` (default one 20 ms frame; a multiple of 2.5 ms) standing in for lost packets
   * into `out`. Given the packet that follows the loss, its last frame's worth is rebuilt from that
   * packet's in-band FEC data when it has some (libopus conceals the rest, and that too when there is
   * none); decode that following packet normally next. Without it, the audio is concealed (PLC):
   * extrapolated from the audio before it, fading over a long loss. Returns the samples written.
   */
  decodeLost(out: Int16Array, following?: Uint8Array, samples = this.frameSamples): number {
    if (samples > out.length || samples > OPUS_MAX_FRAME_SAMPLES) {
      throw new RangeError(`${samples} samples do not fit in ${out.length}`);
    }
    if (following === undefined || following.length === 0) return this.#decode(undefined, out, samples, 0);
    return this.#decode(following, out, samples, 1);
  }

  /** Forgets the stream decoded so far (a new source), as a new decoder would. */
  reset(): void {
    if (this.#state === 0) throw new Error("the Opus decoder was disposed of");
    check(
      this.#lib,
      "opus_decoder_ctl",
      this.#lib.exports.opus_decoder_ctl_set(this.#state, OPUS_RESET_STATE, 0),
    );
  }

  /** Frees the decoder's state; the decoder cannot be used afterwards. Safe to call twice. */
  dispose(): void {
    if (this.#state === 0) return;
    this.#lib.exports.free(this.#state);
    this.#state = 0;
  }

  #decode(packet: Uint8Array | undefined, out: Int16Array, frameSize: number, decodeFec: number): number {
    const lib = this.#lib;
    if (this.#state === 0) throw new Error("the Opus decoder was disposed of");
    let dataPointer = 0;
    let length = 0;
    if (packet !== undefined) {
      if (packet.length > SCRATCH_PACKET_BYTES) {
        throw new RangeError(`a packet of ${packet.length} bytes is larger than ${SCRATCH_PACKET_BYTES}`);
      }
      lib.packet.set(packet);
      dataPointer = lib.packetPointer;
      length = packet.length;
    }
    const samples = check(
      lib,
      "opus_decode",
      lib.exports.opus_decode(this.#state, dataPointer, length, lib.pcmPointer, frameSize, decodeFec),
    );
    const source = lib.pcm;
    for (let i = 0; i < samples; i++) out[i] = source[i] as number;
    return samples;
  }
}

/**
 * Whether a packet carries in-band FEC data for the frame before it (LBRR frames, RFC 6716 §4.2.4),
 * which `decodeLost` rebuilds that frame from. Only SILK and hybrid frames can (TOC configurations
 * 0-15, §3.1); LBRR data rides in the packet's first frame, whose SILK layer begins with one VAD flag
 * per 20 ms SILK frame and then the LBRR flag, and for stereo a second such set for the side channel
 * (§4.2.3). Those flags are range coded with probability one half, which leaves them as the first
 * bits of the frame as they are.
 */
export function opusPacketHasFec(packet: Uint8Array): boolean {
  const toc = packet[0];
  if (toc === undefined) return false;
  const config = toc >> 3;
  if (config >= 16) return false;
  const start = firstFrameOffset(packet);
  if (start < 0) return false;
  // SILK frames per Opus frame: 10 and 20 ms hold one, 40 ms two, 60 ms three (hybrid: 10 or 20 ms).
  const duration = config < 12 ? config & 3 : 1;
  const silkFrames = duration === 3 ? 3 : duration === 2 ? 2 : 1;
  const stereo = (toc & 0x04) !== 0;
  return bitAt(packet, start, silkFrames) || (stereo && bitAt(packet, start, 2 * silkFrames + 1));
}

/** Bit `index` of the frame data at `start`, counted from the most significant bit of its first byte. */
function bitAt(packet: Uint8Array, start: number, index: number): boolean {
  const byte = packet[start + (index >> 3)];
  return byte !== undefined && ((byte >> (7 - (index & 7))) & 1) === 1;
}

/** Where the first frame's data begins (RFC 6716 §3.2), or -1 when the packet has none or is malformed. */
function firstFrameOffset(packet: Uint8Array): number {
  const code = (packet[0] as number) & 3;
  if (code === 0 || code === 1) return packet.length > 1 ? 1 : -1;
  if (code === 2) return frameLengthEnd(packet, 1);
  // Code 3: the frame count byte (§3.2.5), then padding lengths, then (VBR) the frames' lengths but the last.
  const countByte = packet[1];
  if (countByte === undefined) return -1;
  const frames = countByte & 0x3f;
  let offset = 2;
  if ((countByte & 0x40) !== 0) {
    // Padding: each 255 adds 254 octets and another length byte follows.
    let byte: number | undefined;
    do {
      byte = packet[offset++];
      if (byte === undefined) return -1;
    } while (byte === 255);
  }
  if ((countByte & 0x80) !== 0) {
    for (let frame = 0; frame < frames - 1 && offset >= 0; frame++) offset = frameLengthEnd(packet, offset);
  }
  return offset < packet.length ? offset : -1;
}

/** The offset after a frame length field (§3.2.1: one octet below 252, else two) at `offset`, or -1. */
function frameLengthEnd(packet: Uint8Array, offset: number): number {
  const first = packet[offset];
  if (first === undefined) return -1;
  const end = first < 252 ? offset + 1 : offset + 2;
  return end < packet.length ? end : -1;
}

/** Samples per frame at 48 kHz by TOC configuration (RFC 6716 §3.1, Table 2): SILK, hybrid, CELT. */
function frameSamplesOf(config: number): number {
  if (config < 12) return [480, 960, 1920, 2880][config & 3] as number;
  if (config < 16) return config & 1 ? 960 : 480;
  return [120, 240, 480, 960][config & 3] as number;
}

/** How long a packet plays, in 48 kHz samples (RTP timestamp units, RFC 7587 §4.1); 0 when its header is malformed. */
export function opusPacketDuration(packet: Uint8Array): number {
  const toc = packet[0];
  if (toc === undefined) return 0;
  const code = toc & 3;
  const frames = code === 0 ? 1 : code === 3 ? (packet[1] ?? 0) & 0x3f : 2;
  return frames * frameSamplesOf(toc >> 3);
}
