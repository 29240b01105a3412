/**
 * Opus libraries side by side: `node --import tsx bench/media/opus-libraries.ts`.
 *
 * Encode and decode cost of one 20 ms frame of 48 kHz mono speech-like audio, for each library that
 * is installed, at complexity 5 and 10 and 24 and 32 kbit/s (VoIP mode, in-band FEC on, 10 % expected
 * loss, as the media path runs Opus), plus the cost of standing in for a lost frame (FEC and
 * concealment) where the library can. Only the chosen library (@evan/opus, through
 * src/telephony/media/codec/opus.ts, and its own JavaScript API) is a dependency; the others are
 * measured when installed beside it, without saving them:
 *
 *   npm install --no-save opusscript @discordjs/opus node-opus opus-encdec libopus.js
 *
 * (@discordjs/opus and node-opus compile libopus with node-gyp during that install; `npm install`
 * removes them all again.) Each library first encodes and decodes a 1 kHz tone, and its output
 * frequency and level are printed: a check that the library is driven the right way.
 *
 * Figures are CPU time (the process's user and system time), not wall time, so that time spent
 * waiting for a core on a loaded machine is not counted. Each cell is the lowest of BENCH_ROUNDS
 * (default 3) runs of BENCH_FRAMES (default 1500, 30 s of audio) frames after a warm-up, the
 * libraries taking turns, so that a burst of load from elsewhere spoils one run rather than one
 * library's figures.
 */
import { createRequire } from "node:module";
import {
  OPUS_FRAME_SAMPLES,
  OPUS_MAX_PACKET_BYTES,
  OPUS_SAMPLE_RATE,
  type OpusBandwidth,
  OpusDecoder,
  OpusEncoder,
} from "../../src/telephony/media/codec/opus.js";

const FRAMES = Number(process.env.BENCH_FRAMES ?? 1500);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const WARM_UP_FRAMES = 100;
const EXPECTED_LOSS_PERCENT = 10;
const SETTINGS = [
  { complexity: 5, bitrate: 24_000 },
  { complexity: 5, bitrate: 32_000 },
  { complexity: 10, bitrate: 24_000 },
  { complexity: 10, bitrate: 32_000 },
];

/** libopus request and value numbers (opus_defines.h), for the libraries that take them raw. */
const OPUS_APPLICATION_VOIP = 2048;
const OPUS_SET_APPLICATION = 4000;
const OPUS_SET_BITRATE = 4002;
const OPUS_SET_COMPLEXITY = 4010;
const OPUS_SET_INBAND_FEC = 4012;
const OPUS_SET_PACKET_LOSS_PERC = 4014;

interface Settings {
  complexity: number;
  bitrate: number;
  /** Only the chosen library's second table sets it; libopus's default is fullband. */
  maxBandwidth?: OpusBandwidth;
}

/** One library's encoder and decoder, driven through the API an application would use. */
interface Codec {
  /** Encodes one frame; returns the packet, which may be the library's own buffer until the next call. */
  encode(pcm: Int16Array): Uint8Array;
  /** Decodes one packet; returns its samples, which may be the library's own buffer until the next call. */
  decode(packet: Uint8Array): Int16Array;
  /** Stands in for a lost frame from the next packet's FEC data (when the library offers it). */
  recover?(following: Uint8Array): Int16Array;
  /** Conceals a lost 20 ms frame (when the library offers it). */
  conceal?(): Int16Array;
  close(): void;
}

interface Library {
  name: string;
  /** Makes a codec, or says why the library cannot be measured here. */
  open(): Promise<((settings: Settings) => Codec) | string>;
}

const require = createRequire(import.meta.url);

/** `require` that answers "not installed" instead of throwing when the package is absent. */
function optional<T>(name: string): T | string {
  try {
    return require(name) as T;
  } catch (error) {
    const code = (error as { code?: string }).code;
    const pkg = name.startsWith("@") ? name.split("/", 2).join("/") : (name.split("/")[0] as string);
    return code === "MODULE_NOT_FOUND" ? `not installed (npm install --no-save ${pkg})` : String(error);
  }
}

/** Int16 samples as a Node Buffer over the same memory (the form native bindings take). */
function bufferOf(pcm: Int16Array): Buffer {
  return Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength);
}

/** Decoded bytes (16-bit little-endian) as samples, over the same memory when aligned. */
function samplesOf(bytes: Uint8Array): Int16Array {
  if (bytes.byteOffset % 2 === 0) return new Int16Array(bytes.buffer, bytes.byteOffset, bytes.length >> 1);
  return new Int16Array(bytes.slice().buffer);
}

const chosen: Library = {
  name: "@evan/opus wasm, via codec/opus.ts",
  open: async () => (settings) => {
    const encoder = new OpusEncoder({
      ...settings,
      maxBandwidth: settings.maxBandwidth ?? "fullband",
      inbandFec: true,
      expectedLossPercent: EXPECTED_LOSS_PERCENT,
    });
    const decoder = new OpusDecoder();
    const packet = new Uint8Array(OPUS_MAX_PACKET_BYTES);
    const out = new Int16Array(OPUS_FRAME_SAMPLES);
    return {
      encode: (pcm) => packet.subarray(0, encoder.encode(pcm, packet)),
      decode: (data) => out.subarray(0, decoder.decode(data, out)),
      recover: (following) => out.subarray(0, decoder.decodeLost(out, following)),
      conceal: () => out.subarray(0, decoder.decodeLost(out)),
      close: () => {
        encoder.dispose();
        decoder.dispose();
      },
    };
  },
};

interface EvanOpus {
  Encoder: new (options: {
    channels: number;
    sample_rate: number;
    application: string;
  }) => {
    complexity: number;
    bitrate: number;
    inband_fec: boolean;
    packet_loss: number;
    encode(pcm: Int16Array): Uint8Array;
  };
  Decoder: new (options: {
    channels: number;
    sample_rate: number;
  }) => { decode(packet: Uint8Array): Uint8Array };
}

const evanNative: Library = {
  name: "@evan/opus native, its JS API",
  open: async () => {
    if (process.env.OPUS_FORCE_WASM) return "OPUS_FORCE_WASM is set";
    const opus = optional<EvanOpus>("@evan/opus");
    if (typeof opus === "string") return opus;
    return (settings) => {
      const encoder = new opus.Encoder({ channels: 1, sample_rate: OPUS_SAMPLE_RATE, application: "voip" });
      encoder.complexity = settings.complexity;
      encoder.bitrate = settings.bitrate;
      encoder.inband_fec = true;
      encoder.packet_loss = EXPECTED_LOSS_PERCENT;
      const decoder = new opus.Decoder({ channels: 1, sample_rate: OPUS_SAMPLE_RATE });
      return {
        encode: (pcm) => encoder.encode(pcm),
        decode: (packet) => samplesOf(decoder.decode(packet)),
        // Its objects hold no state outside the JavaScript heap that needs freeing by hand.
        close: () => {},
      };
    };
  },
};

interface OpusScriptClass {
  new (
    rate: number,
    channels: number,
    application: number,
    options: { wasm: boolean },
  ): {
    encoderCTL(request: number, value: number): void;
    setBitrate(bitrate: number): void;
    encode(pcm: Buffer, frameSize: number): Buffer;
    decode(packet: Buffer): Buffer;
    delete(): void;
  };
}

function opusscript(wasm: boolean): Library {
  return {
    name: `opusscript ${wasm ? "wasm" : "asm.js"}`,
    open: async () => {
      const OpusScript = optional<OpusScriptClass>("opusscript");
      if (typeof OpusScript === "string") return OpusScript;
      return (settings) => {
        const encoder = new OpusScript(OPUS_SAMPLE_RATE, 1, OPUS_APPLICATION_VOIP, { wasm });
        encoder.encoderCTL(OPUS_SET_COMPLEXITY, settings.complexity);
        encoder.setBitrate(settings.bitrate);
        encoder.encoderCTL(OPUS_SET_INBAND_FEC, 1);
        encoder.encoderCTL(OPUS_SET_PACKET_LOSS_PERC, EXPECTED_LOSS_PERCENT);
        const decoder = new OpusScript(OPUS_SAMPLE_RATE, 1, OPUS_APPLICATION_VOIP, { wasm });
        return {
          // Bytes, as its types say: given an Int16Array it copies one sample into each byte.
          encode: (pcm) => encoder.encode(bufferOf(pcm), pcm.length),
          decode: (packet) =>
            samplesOf(decoder.decode(Buffer.from(packet.buffer, packet.byteOffset, packet.length))),
          close: () => {
            encoder.delete();
            decoder.delete();
          },
        };
      };
    },
  };
}

/** The binding of @discordjs/opus and of its predecessor node-opus: one object encodes and decodes. */
interface NodeOpusBinding {
  OpusEncoder: new (
    rate: number,
    channels: number,
    application?: number,
  ) => {
    applyEncoderCTL(request: number, value: number): void;
    setBitrate(bitrate: number): void;
    encode(pcm: Buffer): Buffer;
    decode(packet: Buffer): Buffer;
  };
}

function nodeBinding(name: string): Library {
  return {
    name,
    open: async () => {
      const binding = optional<NodeOpusBinding>(name);
      if (typeof binding === "string") return binding;
      return (settings) => {
        const encoder = new binding.OpusEncoder(OPUS_SAMPLE_RATE, 1, OPUS_APPLICATION_VOIP);
        // @discordjs/opus ignores the third argument; the application can still be set before the first frame.
        encoder.applyEncoderCTL(OPUS_SET_APPLICATION, OPUS_APPLICATION_VOIP);
        encoder.applyEncoderCTL(OPUS_SET_COMPLEXITY, settings.complexity);
        encoder.setBitrate(settings.bitrate);
        encoder.applyEncoderCTL(OPUS_SET_INBAND_FEC, 1);
        encoder.applyEncoderCTL(OPUS_SET_PACKET_LOSS_PERC, EXPECTED_LOSS_PERCENT);
        const decoder = new binding.OpusEncoder(OPUS_SAMPLE_RATE, 1);
        return {
          encode: (pcm) => encoder.encode(bufferOf(pcm)),
          decode: (packet) =>
            samplesOf(decoder.decode(Buffer.from(packet.buffer, packet.byteOffset, packet.length))),
          // Freed by the binding's destructor when collected.
          close: () => {},
        };
      };
    },
  };
}

/** An Emscripten module exporting the libopus C API (opus-encdec's wasm, libopus.js's asm.js). */
interface EmscriptenLibopus {
  HEAPU8: Uint8Array;
  HEAP16: Int16Array;
  HEAP32: Int32Array;
  HEAPF32: Float32Array;
  _malloc(bytes: number): number;
  _free(pointer: number): void;
  _opus_encoder_create?(rate: number, channels: number, application: number, error: number): number;
  _opus_decoder_create?(rate: number, channels: number, error: number): number;
  _opus_encoder_get_size?(channels: number): number;
  _opus_encoder_init?(state: number, rate: number, channels: number, application: number): number;
  _opus_decoder_get_size?(channels: number): number;
  _opus_decoder_init?(state: number, rate: number, channels: number): number;
  _opus_encoder_ctl(state: number, request: number, varargs: number): number;
  _opus_encode?(state: number, pcm: number, frameSize: number, data: number, maxBytes: number): number;
  _opus_decode?(
    state: number,
    data: number,
    length: number,
    pcm: number,
    frameSize: number,
    fec: number,
  ): number;
  _opus_encode_float?(state: number, pcm: number, frameSize: number, data: number, maxBytes: number): number;
  _opus_decode_float?(
    state: number,
    data: number,
    length: number,
    pcm: number,
    frameSize: number,
    fec: number,
  ): number;
}

/**
 * Drives the raw C API of an Emscripten build. `float` builds take and give 32-bit float samples,
 * converted here from and to 16-bit as the media path would have to. A C variadic call (the ctl
 * requests) takes a pointer to its arguments in memory.
 */
function emscriptenCodec(
  encoderModule: EmscriptenLibopus,
  decoderModule: EmscriptenLibopus,
  float: boolean,
  settings: Settings,
): Codec {
  function create(module: EmscriptenLibopus, encoder: boolean): number {
    if (encoder && module._opus_encoder_create) {
      return module._opus_encoder_create(OPUS_SAMPLE_RATE, 1, OPUS_APPLICATION_VOIP, 0);
    }
    if (!encoder && module._opus_decoder_create) return module._opus_decoder_create(OPUS_SAMPLE_RATE, 1, 0);
    const size = (encoder ? module._opus_encoder_get_size : module._opus_decoder_get_size)?.(1) ?? 0;
    const state = module._malloc(size);
    const status = encoder
      ? module._opus_encoder_init?.(state, OPUS_SAMPLE_RATE, 1, OPUS_APPLICATION_VOIP)
      : module._opus_decoder_init?.(state, OPUS_SAMPLE_RATE, 1);
    if (status !== 0) throw new Error(`opus init: ${status}`);
    return state;
  }
  const enc = create(encoderModule, true);
  const dec = create(decoderModule, false);
  const argument = encoderModule._malloc(8);
  for (const [request, value] of [
    [OPUS_SET_COMPLEXITY, settings.complexity],
    [OPUS_SET_BITRATE, settings.bitrate],
    [OPUS_SET_INBAND_FEC, 1],
    [OPUS_SET_PACKET_LOSS_PERC, EXPECTED_LOSS_PERCENT],
  ] as const) {
    encoderModule.HEAP32[argument >> 2] = value;
    const status = encoderModule._opus_encoder_ctl(enc, request, argument);
    if (status !== 0) throw new Error(`opus_encoder_ctl(${request}): ${status}`);
  }
  const sampleBytes = float ? 4 : 2;
  const encPcm = encoderModule._malloc(OPUS_FRAME_SAMPLES * sampleBytes);
  const encPacket = encoderModule._malloc(4000);
  const decPcm = decoderModule._malloc(OPUS_FRAME_SAMPLES * sampleBytes);
  const decPacket = decoderModule._malloc(4000);
  const out = new Int16Array(OPUS_FRAME_SAMPLES);
  const decoded = (samples: number): Int16Array => {
    if (samples < 0) throw new Error(`opus_decode: ${samples}`);
    if (float) {
      const heap = decoderModule.HEAPF32;
      for (let i = 0; i < samples; i++) out[i] = Math.round((heap[(decPcm >> 2) + i] as number) * 32767);
    } else {
      const heap = decoderModule.HEAP16;
      for (let i = 0; i < samples; i++) out[i] = heap[(decPcm >> 1) + i] as number;
    }
    return out.subarray(0, samples);
  };
  const decode = (packet: Uint8Array, fec: number): Int16Array => {
    decoderModule.HEAPU8.set(packet, decPacket);
    const call = float ? decoderModule._opus_decode_float : decoderModule._opus_decode;
    return decoded(call?.(dec, decPacket, packet.length, decPcm, OPUS_FRAME_SAMPLES, fec) ?? -1);
  };
  return {
    encode: (pcm) => {
      if (float) {
        const heap = encoderModule.HEAPF32;
        for (let i = 0; i < pcm.length; i++) heap[(encPcm >> 2) + i] = (pcm[i] as number) / 32768;
      } else {
        encoderModule.HEAP16.set(pcm, encPcm >> 1);
      }
      const call = float ? encoderModule._opus_encode_float : encoderModule._opus_encode;
      const length = call?.(enc, encPcm, pcm.length, encPacket, 4000) ?? -1;
      if (length < 0) throw new Error(`opus_encode: ${length}`);
      return encoderModule.HEAPU8.subarray(encPacket, encPacket + length);
    },
    decode: (packet) => decode(packet, 0),
    recover: (following) => decode(following, 1),
    conceal: () => {
      const call = float ? decoderModule._opus_decode_float : decoderModule._opus_decode;
      return decoded(call?.(dec, 0, 0, decPcm, OPUS_FRAME_SAMPLES, 0) ?? -1);
    },
    close: () => {
      for (const pointer of [enc, argument, encPcm, encPacket]) encoderModule._free(pointer);
      for (const pointer of [dec, decPcm, decPacket]) decoderModule._free(pointer);
    },
  };
}

/** An Emscripten module object that calls `onready` once its WebAssembly is compiled. */
async function ready(module: EmscriptenLibopus & { isReady?: boolean; onready?: () => void }): Promise<void> {
  if (module.isReady) return;
  await new Promise<void>((resolve) => {
    module.onready = resolve;
  });
}

const opusEncdec: Library = {
  name: "opus-encdec wasm, raw C API (float)",
  open: async () => {
    const encoderModule = optional<EmscriptenLibopus>("opus-encdec/dist/libopus-encoder.wasm.js");
    const decoderModule = optional<EmscriptenLibopus>("opus-encdec/dist/libopus-decoder.wasm.js");
    if (typeof encoderModule === "string") return encoderModule;
    if (typeof decoderModule === "string") return decoderModule;
    await ready(encoderModule);
    await ready(decoderModule);
    return (settings) => emscriptenCodec(encoderModule, decoderModule, true, settings);
  },
};

const libopusJs: Library = {
  name: "libopus.js asm.js, raw C API",
  open: async () => {
    const library = optional<{ libopus: EmscriptenLibopus }>("libopus.js");
    if (typeof library === "string") return library;
    return (settings) => emscriptenCodec(library.libopus, library.libopus, false, settings);
  },
};

const LIBRARIES: Library[] = [
  chosen,
  evanNative,
  opusscript(true),
  opusscript(false),
  nodeBinding("@discordjs/opus"),
  nodeBinding("node-opus"),
  opusEncdec,
  libopusJs,
];

/**
 * Speech-like test audio, 10 s at 48 kHz, about -21 dBFS: the harmonics up to 8 kHz (a 16 kHz room
 * mix has nothing above) of a pitch gliding between 100 and 220 Hz, falling 6 dB an octave, in
 * syllables of about 220 ms with pauses as long, over a faint noise floor. Deterministic.
 */
function speechLike(): Int16Array {
  const samples = new Int16Array(10 * OPUS_SAMPLE_RATE);
  let phase = 0;
  let noise = 12345;
  for (let n = 0; n < samples.length; n++) {
    const t = n / OPUS_SAMPLE_RATE;
    const pitch = 160 + 60 * Math.sin(2 * Math.PI * 0.37 * t);
    phase += (2 * Math.PI * pitch) / OPUS_SAMPLE_RATE;
    let voiced = 0;
    for (let harmonic = 1; harmonic * pitch < 8000; harmonic++)
      voiced += Math.sin(harmonic * phase) / harmonic;
    const syllable = Math.max(0, Math.sin(2 * Math.PI * 2.3 * t)) ** 0.5;
    noise = (Math.imul(noise, 1103515245) + 12345) & 0x7fffffff;
    samples[n] = Math.round(6000 * syllable * voiced + 30 * (noise / 0x7fffffff - 0.5));
  }
  return samples;
}

function frames(audio: Int16Array): Int16Array[] {
  const list: Int16Array[] = [];
  for (let start = 0; start + OPUS_FRAME_SAMPLES <= audio.length; start += OPUS_FRAME_SAMPLES) {
    list.push(audio.slice(start, start + OPUS_FRAME_SAMPLES));
  }
  return list;
}

/**
 * Encodes and decodes one second of a 1 kHz tone peaking at -12 dBFS; returns the frequency (from zero
 * crossings) and level of the last half second heard.
 */
function toneCheck(make: (settings: Settings) => Codec): string {
  const codec = make({ complexity: 5, bitrate: 32_000 });
  try {
    const input = new Int16Array(OPUS_SAMPLE_RATE);
    for (let n = 0; n < input.length; n++) {
      input[n] = Math.round(8192 * Math.sin((2 * Math.PI * 1000 * n) / OPUS_SAMPLE_RATE));
    }
    const output = new Int16Array(input.length);
    let written = 0;
    for (const frame of frames(input)) {
      const samples = codec.decode(codec.encode(frame).slice());
      output.set(samples, written);
      written += samples.length;
    }
    const tail = output.subarray(written / 2, written);
    let crossings = 0;
    let energy = 0;
    for (let n = 0; n < tail.length; n++) {
      const sample = tail[n] as number;
      energy += sample * sample;
      if (n > 0 && (tail[n - 1] as number) < 0 !== sample < 0) crossings++;
    }
    const hertz = (crossings / 2) * (OPUS_SAMPLE_RATE / tail.length);
    const dbfs = 10 * Math.log10(energy / tail.length / 32768 ** 2);
    return `${written} samples out, ${hertz.toFixed(0)} Hz at ${dbfs.toFixed(1)} dBFS (sent 1000 Hz at -15.1 dBFS)`;
  } finally {
    codec.close();
  }
}

interface Cell {
  encodeMicros: number;
  decodeMicros: number;
  recoverMicros: number | undefined;
  concealMicros: number | undefined;
  kbps: number;
}

/** CPU time (user and system) of the process in µs: on a loaded machine, time waiting for a core is not counted. */
function cpuMicros(): number {
  const { user, system } = process.cpuUsage();
  return user + system;
}

/** One run: FRAMES frames encoded, then the packets decoded, then lost frames stood in for. */
function measure(make: (settings: Settings) => Codec, settings: Settings, input: Int16Array[]): Cell {
  const codec = make(settings);
  try {
    for (let n = 0; n < WARM_UP_FRAMES; n++) codec.encode(input[n % input.length] as Int16Array);
    const packets: Uint8Array[] = [];
    let bytes = 0;
    let start = cpuMicros();
    for (let n = 0; n < FRAMES; n++) {
      const packet = codec.encode(input[n % input.length] as Int16Array);
      bytes += packet.length;
      if (n < input.length) packets.push(packet.slice());
    }
    const encodeMicros = (cpuMicros() - start) / FRAMES;
    for (let n = 0; n < WARM_UP_FRAMES; n++) codec.decode(packets[n % packets.length] as Uint8Array);
    start = cpuMicros();
    for (let n = 0; n < FRAMES; n++) codec.decode(packets[n % packets.length] as Uint8Array);
    const decodeMicros = (cpuMicros() - start) / FRAMES;
    // The ninth of every ten frames lost: its stand-in is timed, the packet after it decoded as usual.
    let recoverMicros: number | undefined;
    let concealMicros: number | undefined;
    const losses = Math.floor(FRAMES / 10);
    for (const [kind, standIn] of [
      ["recover", codec.recover],
      ["conceal", codec.conceal],
    ] as const) {
      if (standIn === undefined) continue;
      let spent = 0;
      for (let loss = 0; loss < losses; loss++) {
        const first = loss * 10;
        for (let n = first; n < first + 8; n++) codec.decode(packets[n % packets.length] as Uint8Array);
        const following = packets[(first + 9) % packets.length] as Uint8Array;
        const begin = cpuMicros();
        standIn(following);
        spent += cpuMicros() - begin;
        codec.decode(following);
      }
      const micros = spent / losses;
      if (kind === "recover") recoverMicros = micros;
      else concealMicros = micros;
    }
    return { encodeMicros, decodeMicros, recoverMicros, concealMicros, kbps: (bytes * 8) / (FRAMES * 20) };
  } finally {
    codec.close();
  }
}

function format(value: number | undefined): string {
  return value === undefined ? "-" : value.toFixed(value < 10 ? 1 : 0);
}

const input = frames(speechLike());
const available: { name: string; make: (settings: Settings) => Codec }[] = [];
for (const library of LIBRARIES) {
  const make = await library.open();
  if (typeof make === "string") {
    console.log(`${library.name}: ${make}`);
    continue;
  }
  console.log(`${library.name}: tone check ${toneCheck(make)}`);
  available.push({ name: library.name, make });
}
console.log(
  `\nnode ${process.version}, ${FRAMES} frames x ${ROUNDS} rounds, CPU µs, lowest round per cell\n`,
);

function fastest(previous: Cell | undefined, cell: Cell): Cell {
  if (previous === undefined) return cell;
  const least = (a: number | undefined, b: number | undefined) =>
    a === undefined || b === undefined ? undefined : Math.min(a, b);
  return {
    encodeMicros: Math.min(previous.encodeMicros, cell.encodeMicros),
    decodeMicros: Math.min(previous.decodeMicros, cell.decodeMicros),
    recoverMicros: least(previous.recoverMicros, cell.recoverMicros),
    concealMicros: least(previous.concealMicros, cell.concealMicros),
    kbps: cell.kbps,
  };
}

/** Runs every (library, settings) pair ROUNDS times, in turns; keeps each pair's fastest figures. */
function table(runs: { label: string; make: (settings: Settings) => Codec; settings: Settings }[]): void {
  const best = new Map<string, Cell>();
  for (let round = 0; round < ROUNDS; round++) {
    for (const { label, make, settings } of runs)
      best.set(label, fastest(best.get(label), measure(make, settings, input)));
  }
  console.log(
    "| library | complexity | band limit | kbit/s set (sent) | encode µs | decode µs | FEC µs | PLC µs |",
  );
  console.log("| --- | --- | --- | --- | --- | --- | --- | --- |");
  for (const { label, settings } of runs) {
    const cell = best.get(label) as Cell;
    console.log(
      `| ${label.split("|")[0]} | ${settings.complexity} | ${settings.maxBandwidth ?? "-"} | ` +
        `${settings.bitrate / 1000} (${cell.kbps.toFixed(1)}) | ${format(cell.encodeMicros)} | ` +
        `${format(cell.decodeMicros)} | ${format(cell.recoverMicros)} | ${format(cell.concealMicros)} |`,
    );
  }
  console.log("");
}

console.log(
  "Every library installed, per 20 ms frame (FEC: a lost frame rebuilt from the next packet; PLC: concealed)\n",
);
table(
  SETTINGS.flatMap((settings) =>
    available.map(({ name, make }) => ({
      label: `${name}|${settings.complexity}|${settings.bitrate}`,
      make,
      settings,
    })),
  ),
);

console.log(
  "The chosen library at 32 kbit/s by complexity, with and without a wideband limit (a 16 kHz room mix)\n",
);
const chosenMake = available.find(({ name }) => name === chosen.name)?.make as (settings: Settings) => Codec;
table(
  [0, 2, 5, 8, 10].flatMap((complexity) =>
    (["fullband", "wideband"] as const).map((maxBandwidth) => ({
      label: `${chosen.name}|${complexity}|${maxBandwidth}`,
      make: chosenMake,
      settings: { complexity, bitrate: 32_000, maxBandwidth },
    })),
  ),
);
