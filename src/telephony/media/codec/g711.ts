/**
 * ITU-T G.711 pulse code modulation: μ-law and A-law companding of 16-bit linear PCM.
 *
 * Encoding follows the segment (chord) algorithm of G.711 §3 and §4, working on the 14-bit (μ-law)
 * and 13-bit (A-law) magnitudes the Recommendation defines; both directions are precomputed into
 * lookup tables at load time, so a 20 ms frame is converted with one table read per sample and the
 * frame functions write into caller-provided buffers without allocating.
 */

/** μ-law bias added to the 14-bit magnitude before segmentation (G.711 Table 2a: 33). */
const MULAW_BIAS = 0x21;
/** Largest 14-bit magnitude that still falls in segment 7 once biased (8158 + 33 = 0x1fff). */
const MULAW_CLIP = 8158;

/** Encodes one 16-bit linear sample as a μ-law code word (G.711 §3, Table 2a). */
function encodeMulawSample(sample: number): number {
  let magnitude = sample >> 2; // 16-bit → 14-bit
  let signMask = 0xff;
  if (magnitude < 0) {
    magnitude = -magnitude;
    signMask = 0x7f;
  }
  magnitude = Math.min(magnitude, MULAW_CLIP) + MULAW_BIAS;
  // The segment is the position of the highest set bit above bit 5: 0x21..0x3f → 0, …, 0x1000..0x1fff → 7.
  const segment = 31 - Math.clz32(magnitude) - 5;
  const step = (magnitude >> (segment + 1)) & 0x0f;
  // Code words are transmitted inverted (G.711 §3.2, Note).
  return ((segment << 4) | step) ^ signMask;
}

/** Decodes one μ-law code word to a 16-bit linear sample (G.711 Table 2a, decoder output values). */
function decodeMulawSample(code: number): number {
  const inverted = ~code & 0xff;
  const segment = (inverted >> 4) & 0x07;
  const magnitude = ((((inverted & 0x0f) << 3) + (MULAW_BIAS << 2)) << segment) - (MULAW_BIAS << 2);
  return inverted & 0x80 ? -magnitude : magnitude;
}

/** Encodes one 16-bit linear sample as an A-law code word (G.711 §4, Table 1a). */
function encodeAlawSample(sample: number): number {
  let magnitude = sample >> 3; // 16-bit → 13-bit
  let signMask = 0xd5; // positive: sign bit set, even bits inverted (G.711 §4.2, Note)
  if (magnitude < 0) {
    magnitude = -magnitude - 1;
    signMask = 0x55;
  }
  magnitude = Math.min(magnitude, 0xfff);
  // Segments 0 and 1 share the step size 2; above them the segment is the highest set bit minus 4.
  const segment = magnitude < 0x20 ? 0 : 31 - Math.clz32(magnitude) - 4;
  const step = (magnitude >> (segment < 2 ? 1 : segment)) & 0x0f;
  return ((segment << 4) | step) ^ signMask;
}

/** Decodes one A-law code word to a 16-bit linear sample (G.711 Table 1a, decoder output values). */
function decodeAlawSample(code: number): number {
  const bits = code ^ 0x55;
  const segment = (bits >> 4) & 0x07;
  // Decoder output is the middle of the quantization interval: step·2 + 1 in 13-bit units, scaled by 8.
  let magnitude = ((bits & 0x0f) << 4) + 8;
  if (segment > 0) magnitude = (magnitude + 0x100) << (segment - 1);
  return bits & 0x80 ? magnitude : -magnitude;
}

function decodeTable(decode: (code: number) => number): Int16Array {
  const table = new Int16Array(256);
  for (let code = 0; code < 256; code++) table[code] = decode(code);
  return table;
}

/** Indexed by the sample's 16 bits as unsigned (`sample & 0xffff`). */
function encodeTable(encode: (sample: number) => number): Uint8Array {
  const table = new Uint8Array(65536);
  for (let sample = -32768; sample < 32768; sample++) table[sample & 0xffff] = encode(sample);
  return table;
}

const MULAW_TO_LINEAR = decodeTable(decodeMulawSample);
const ALAW_TO_LINEAR = decodeTable(decodeAlawSample);
const LINEAR_TO_MULAW = encodeTable(encodeMulawSample);
const LINEAR_TO_ALAW = encodeTable(encodeAlawSample);

/** μ-law code word for a digital-silence frame (positive zero). */
export const MULAW_SILENCE = 0xff;
/** A-law code word for a digital-silence frame (smallest positive level). */
export const ALAW_SILENCE = 0xd5;

export function mulawToLinear(code: number): number {
  return MULAW_TO_LINEAR[code & 0xff] as number;
}

export function linearToMulaw(sample: number): number {
  return LINEAR_TO_MULAW[sample & 0xffff] as number;
}

export function alawToLinear(code: number): number {
  return ALAW_TO_LINEAR[code & 0xff] as number;
}

export function linearToAlaw(sample: number): number {
  return LINEAR_TO_ALAW[sample & 0xffff] as number;
}

function translate(
  input: Uint8Array | Int16Array,
  output: Uint8Array | Int16Array,
  table: Uint8Array | Int16Array,
  indexMask: number,
): number {
  if (output.length < input.length) {
    throw new RangeError(`output holds ${output.length} samples, input has ${input.length}`);
  }
  for (let i = 0; i < input.length; i++) output[i] = table[(input[i] as number) & indexMask] as number;
  return input.length;
}

/** Decodes a μ-law payload into `out`; returns the number of samples written. */
export function decodeMulaw(payload: Uint8Array, out: Int16Array): number {
  return translate(payload, out, MULAW_TO_LINEAR, 0xff);
}

/** Decodes an A-law payload into `out`; returns the number of samples written. */
export function decodeAlaw(payload: Uint8Array, out: Int16Array): number {
  return translate(payload, out, ALAW_TO_LINEAR, 0xff);
}

/** Encodes linear samples into a μ-law payload `out`; returns the number of bytes written. */
export function encodeMulaw(samples: Int16Array, out: Uint8Array): number {
  return translate(samples, out, LINEAR_TO_MULAW, 0xffff);
}

/** Encodes linear samples into an A-law payload `out`; returns the number of bytes written. */
export function encodeAlaw(samples: Int16Array, out: Uint8Array): number {
  return translate(samples, out, LINEAR_TO_ALAW, 0xffff);
}
