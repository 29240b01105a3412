/**
 * The canonical 44-byte header of a RIFF/WAVE file of linear PCM (RIFF, WAVE, a 16-byte fmt chunk,
 * then the data chunk), as the service writes its recordings: read, for the format of a recording's
 * file and the data bytes its header counts, and written, for a download that joins several files
 * into one. Pure: the files themselves are the reader's.
 */

export const WAV_HEADER_BYTES = 44;
const RIFF_CHUNK_OFFSET = 8;
const FMT_PCM_BYTES = 16;
const WAVE_FORMAT_PCM = 1;
/** The RIFF size field is 32 bits and counts the 36 header bytes after it as well as the data. */
const MAX_RIFF_SIZE = 0xffff_ffff;

export interface WavFormat {
  readonly channels: number;
  readonly sampleRate: number;
  readonly bitsPerSample: number;
}

/** The bytes of one sample of every channel (the fmt chunk's block align). */
export function blockBytes(format: WavFormat): number {
  return format.channels * Math.ceil(format.bitsPerSample / 8);
}

/** The most data bytes a WAV header of this format can count, in whole blocks. */
export function maxWavDataBytes(format: WavFormat): number {
  const block = blockBytes(format);
  return Math.floor((MAX_RIFF_SIZE - (WAV_HEADER_BYTES - RIFF_CHUNK_OFFSET)) / block) * block;
}

export function sameWavFormat(a: WavFormat, b: WavFormat): boolean {
  return a.channels === b.channels && a.sampleRate === b.sampleRate && a.bitsPerSample === b.bitsPerSample;
}

/** "16000 Hz, 1 channel, 16-bit", for messages. */
export function describeWavFormat(format: WavFormat): string {
  const channels = format.channels === 1 ? "1 channel" : `${format.channels} channels`;
  return `${format.sampleRate} Hz, ${channels}, ${format.bitsPerSample}-bit`;
}

/**
 * The format and the data byte count of a canonical PCM header (the first 44 bytes of a file);
 * throws an Error saying why for anything else.
 */
export function readWavHeader(header: Buffer): { format: WavFormat; dataBytes: number } {
  const id = (offset: number) => header.toString("latin1", offset, offset + 4);
  if (
    header.length < WAV_HEADER_BYTES ||
    id(0) !== "RIFF" ||
    id(8) !== "WAVE" ||
    id(12) !== "fmt " ||
    header.readUInt32LE(16) !== FMT_PCM_BYTES ||
    id(36) !== "data"
  ) {
    throw new Error("not a canonical WAV header (RIFF, WAVE, a 16-byte fmt chunk, data)");
  }
  const audioFormat = header.readUInt16LE(20);
  if (audioFormat !== WAVE_FORMAT_PCM) throw new Error(`WAV format ${audioFormat} is not linear PCM (1)`);
  const format = {
    channels: header.readUInt16LE(22),
    sampleRate: header.readUInt32LE(24),
    bitsPerSample: header.readUInt16LE(34),
  };
  if (format.channels === 0 || format.sampleRate === 0 || format.bitsPerSample === 0)
    throw new Error(`WAV header of no audio (${describeWavFormat(format)})`);
  return { format, dataBytes: header.readUInt32LE(40) };
}

/** The canonical header of a PCM file of this format whose data chunk holds `dataBytes`. */
export function writeWavHeader(format: WavFormat, dataBytes: number): Buffer {
  if (dataBytes > maxWavDataBytes(format))
    throw new RangeError(`${dataBytes} data bytes do not fit a WAV file`);
  const block = blockBytes(format);
  const header = Buffer.alloc(WAV_HEADER_BYTES);
  header.write("RIFF", 0, "latin1");
  header.writeUInt32LE(WAV_HEADER_BYTES - RIFF_CHUNK_OFFSET + dataBytes, 4);
  header.write("WAVE", 8, "latin1");
  header.write("fmt ", 12, "latin1");
  header.writeUInt32LE(FMT_PCM_BYTES, 16);
  header.writeUInt16LE(WAVE_FORMAT_PCM, 20);
  header.writeUInt16LE(format.channels, 22);
  header.writeUInt32LE(format.sampleRate, 24);
  header.writeUInt32LE(format.sampleRate * block, 28);
  header.writeUInt16LE(block, 32);
  header.writeUInt16LE(format.bitsPerSample, 34);
  header.write("data", 36, "latin1");
  header.writeUInt32LE(dataBytes, 40);
  return header;
}

/**
 * The format files of these formats are joined in: their own when all are alike; the higher rate
 * when 16-bit mono files are at it and at half of it (a room records at its rate when the recording
 * opens: 8 kHz while only narrowband calls are in it, 16 kHz with a wideband one); undefined when
 * they cannot be joined.
 */
export function joinedWavFormat(formats: readonly WavFormat[]): WavFormat | undefined {
  const [first] = formats;
  if (first === undefined) return undefined;
  if (formats.every((format) => sameWavFormat(format, first))) return first;
  const highest = Math.max(...formats.map((format) => format.sampleRate));
  const doublable = (format: WavFormat) =>
    format.channels === 1 &&
    format.bitsPerSample === 16 &&
    (format.sampleRate === highest || format.sampleRate * 2 === highest);
  return formats.every(doublable) ? { ...first, sampleRate: highest } : undefined;
}

/**
 * 16-bit mono samples at twice their rate, as they stream: each sample, then the mean of it and the
 * next (linear interpolation; the last sample twice). Exactly twice the bytes in.
 */
export async function* doubledRate(chunks: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  let previous: number | undefined;
  let odd: number | undefined;
  for await (const chunk of chunks) {
    let bytes = chunk;
    if (odd !== undefined) {
      bytes = Buffer.concat([Buffer.of(odd), chunk]);
      odd = undefined;
    }
    if (bytes.length % 2 === 1) {
      odd = bytes[bytes.length - 1];
      bytes = bytes.subarray(0, bytes.length - 1);
    }
    const samples = bytes.length / 2;
    if (samples === 0) continue;
    // Each sample is written once the next is known: `previous` is one behind.
    const out = Buffer.alloc(samples * 4);
    let at = 0;
    for (let i = 0; i < samples; i++) {
      const sample = bytes.readInt16LE(i * 2);
      if (previous !== undefined) {
        out.writeInt16LE(previous, at);
        out.writeInt16LE(Math.round((previous + sample) / 2), at + 2);
        at += 4;
      }
      previous = sample;
    }
    if (at > 0) yield out.subarray(0, at);
  }
  if (previous !== undefined) {
    const last = Buffer.alloc(4);
    last.writeInt16LE(previous, 0);
    last.writeInt16LE(previous, 2);
    yield last;
  }
}
