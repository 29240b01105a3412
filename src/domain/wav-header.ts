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
