/**
 * RIFF/WAVE files of 16-bit linear PCM, mono: the only kind the service's audio needs. Reading walks
 * the chunk list, so extra chunks (LIST, fact, cue) are skipped, and a data chunk whose declared size
 * runs past the end of the file (as a writer that crashed or streamed leaves) is read up to the last
 * whole sample present.
 */

import { writeWavHeader } from "../../domain/wav-header.js";

const WAVE_FORMAT_PCM = 1;
/** WAVE_FORMAT_EXTENSIBLE: the real format is the first two bytes of the SubFormat GUID. */
const WAVE_FORMAT_EXTENSIBLE = 0xfffe;
const RIFF_HEADER_BYTES = 12;
const CHUNK_HEADER_BYTES = 8;
const FMT_PCM_BYTES = 16;
const FMT_EXTENSIBLE_BYTES = 40;
const CANONICAL_HEADER_BYTES = 44;
const BYTES_PER_SAMPLE = 2;

export interface WavAudio {
  sampleRate: number;
  samples: Int16Array;
}

interface PcmFormat {
  sampleRate: number;
}

function chunkId(bytes: Buffer, offset: number): string {
  return bytes.toString("latin1", offset, offset + 4);
}

function readFormat(bytes: Buffer, offset: number, size: number): PcmFormat {
  if (size < FMT_PCM_BYTES) throw new Error(`WAV fmt chunk is ${size} bytes, shorter than the 16 it needs`);
  let format = bytes.readUInt16LE(offset);
  if (format === WAVE_FORMAT_EXTENSIBLE && size >= FMT_EXTENSIBLE_BYTES)
    format = bytes.readUInt16LE(offset + 24);
  const channels = bytes.readUInt16LE(offset + 2);
  const sampleRate = bytes.readUInt32LE(offset + 4);
  const bitsPerSample = bytes.readUInt16LE(offset + 14);
  if (format !== WAVE_FORMAT_PCM) throw new Error(`WAV format ${format} is not linear PCM (1)`);
  if (channels !== 1) throw new Error(`WAV has ${channels} channels; only mono is supported`);
  if (bitsPerSample !== 16) throw new Error(`WAV has ${bitsPerSample}-bit samples; only 16-bit is supported`);
  if (sampleRate === 0) throw new Error("WAV sample rate is 0");
  return { sampleRate };
}

/** Decodes a RIFF/WAVE file of 16-bit linear PCM mono; throws an Error saying why for anything else. */
export function readWav(bytes: Buffer): WavAudio {
  if (bytes.length < RIFF_HEADER_BYTES || chunkId(bytes, 0) !== "RIFF" || chunkId(bytes, 8) !== "WAVE") {
    throw new Error("not a WAV file: no RIFF/WAVE header");
  }
  let format: PcmFormat | undefined;
  let offset = RIFF_HEADER_BYTES;
  while (offset + CHUNK_HEADER_BYTES <= bytes.length) {
    const id = chunkId(bytes, offset);
    const size = bytes.readUInt32LE(offset + 4);
    const body = offset + CHUNK_HEADER_BYTES;
    if (id === "fmt ") {
      if (body + size > bytes.length) throw new Error("WAV fmt chunk runs past the end of the file");
      format = readFormat(bytes, body, size);
    } else if (id === "data") {
      if (!format) throw new Error("WAV data chunk comes before any fmt chunk");
      const available = Math.min(size, bytes.length - body);
      const samples = new Int16Array(Math.floor(available / BYTES_PER_SAMPLE));
      for (let i = 0; i < samples.length; i++) samples[i] = bytes.readInt16LE(body + i * BYTES_PER_SAMPLE);
      return { sampleRate: format.sampleRate, samples };
    }
    // Chunks are padded to an even length (RIFF: "pad byte if chunk size is odd").
    offset = body + size + (size & 1);
  }
  throw new Error(format ? "WAV file has no data chunk" : "WAV file has no fmt chunk");
}

/** The canonical 44-byte header of a 16-bit linear PCM mono WAV file whose samples take `dataBytes`. */
export function wavHeader(sampleRate: number, dataBytes: number): Buffer {
  return writeWavHeader({ channels: 1, sampleRate, bitsPerSample: 16 }, dataBytes);
}

/** A complete WAV file (canonical header, then the samples little-endian) of 16-bit mono audio. */
export function writeWav(samples: Int16Array, sampleRate = 8000): Buffer {
  const dataBytes = samples.length * BYTES_PER_SAMPLE;
  const file = Buffer.alloc(CANONICAL_HEADER_BYTES + dataBytes);
  wavHeader(sampleRate, dataBytes).copy(file);
  for (let i = 0; i < samples.length; i++) {
    file.writeInt16LE(samples[i] ?? 0, CANONICAL_HEADER_BYTES + i * BYTES_PER_SAMPLE);
  }
  return file;
}
