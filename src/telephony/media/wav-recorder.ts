import { type FileHandle, open } from "node:fs/promises";
import { wavHeader } from "./wav.js";

const BYTES_PER_SAMPLE = 2;
const HEADER_BYTES = 44;
/**
 * The RIFF size field is 32 bits and counts the 36 header bytes after it: about 74 hours at 8 kHz,
 * 37 at 16 kHz.
 */
const MAX_DATA_BYTES = 0xffff_ffff - (HEADER_BYTES - 8) - 1;

/**
 * Records 16-bit mono audio at one sample rate to a WAV file while it is produced. Frames are buffered
 * in memory and appended once a second of audio has gathered, one write at a time; after each append
 * the header's RIFF and data sizes are rewritten to cover it. The samples always reach the file before
 * the header that counts them, so a process that dies leaves a playable file of everything up to
 * the last append. Frames past the 4 GiB a WAV file can describe are dropped.
 */
export class WavRecorder {
  readonly #file: FileHandle;
  readonly #sampleRate: number;
  readonly #bytesPerSecond: number;
  /** A second of audio (50 frames of 20 ms) is buffered before it goes to the file. */
  readonly #flushBytes: number;
  /** Frames not yet handed to the file. */
  #pending: Buffer;
  #pendingBytes = 0;
  /** The buffer the running append writes from; it becomes #pending's successor. */
  #spare: Buffer;
  /** Bytes accepted by write(), flushed or not. */
  #acceptedBytes = 0;
  /** Bytes in the file's data chunk that the header counts. */
  #fileDataBytes = 0;
  /** flush() waits until the file holds this many data bytes. */
  #flushTarget = 0;
  /** The loop appending to the file, while one runs. */
  #appending: Promise<void> | undefined;
  #failure: Error | undefined;
  readonly #onFailure: (error: Error) => void;
  #closed = false;

  private constructor(file: FileHandle, onFailure: (error: Error) => void, sampleRate: number) {
    this.#file = file;
    this.#onFailure = onFailure;
    this.#sampleRate = sampleRate;
    this.#bytesPerSecond = sampleRate * BYTES_PER_SAMPLE;
    this.#flushBytes = this.#bytesPerSecond;
    this.#pending = Buffer.alloc(2 * this.#flushBytes);
    this.#spare = Buffer.alloc(2 * this.#flushBytes);
  }

  /**
   * Creates (or truncates) the file and writes a header for no samples yet at `sampleRate` Hz, the
   * rate of the frames to come. `onFailure` is told of the first background write that fails (the
   * disk full, say): nothing more is written after it.
   */
  static async open(
    filePath: string,
    onFailure: (error: Error) => void = () => {},
    sampleRate = 8000,
  ): Promise<WavRecorder> {
    if (!(Number.isInteger(sampleRate) && sampleRate > 0)) {
      throw new RangeError(`recording at ${sampleRate} Hz`);
    }
    const file = await open(filePath, "w");
    try {
      await writeFully(file, wavHeader(sampleRate, 0), 0);
    } catch (error) {
      await file.close();
      throw error;
    }
    return new WavRecorder(file, onFailure, sampleRate);
  }

  /** The rate of the samples, as the file's header says. */
  get sampleRate(): number {
    return this.#sampleRate;
  }

  /** The error of the background write that failed, after which frames are dropped. */
  get failure(): Error | undefined {
    return this.#failure;
  }

  /** Seconds of audio recorded so far, including what is still buffered. */
  get seconds(): number {
    return this.#acceptedBytes / this.#bytesPerSecond;
  }

  /**
   * Buffers one frame of any length (at the recording's rate); the file is written in the background
   * once a second has gathered.
   */
  write(frame: Int16Array): void {
    if (this.#closed) throw new Error("the recording is closed");
    const bytes = frame.length * BYTES_PER_SAMPLE;
    if (this.#failure || this.#acceptedBytes + bytes > MAX_DATA_BYTES) return;
    if (this.#pendingBytes + bytes > this.#pending.length) this.#growPending(this.#pendingBytes + bytes);
    const pending = this.#pending;
    let offset = this.#pendingBytes;
    for (let i = 0; i < frame.length; i++) offset = pending.writeInt16LE(frame[i] as number, offset);
    this.#pendingBytes = offset;
    this.#acceptedBytes += bytes;
    if (this.#pendingBytes >= this.#flushBytes) this.#append();
  }

  /**
   * Resolves when everything written so far is in the file with a header that counts it; rejects
   * with the error of a failed background write (after which frames are dropped).
   */
  async flush(): Promise<void> {
    this.#flushTarget = this.#acceptedBytes;
    // A loop that already ended before seeing the new target is still cleared and started anew.
    while (this.#fileDataBytes < this.#flushTarget && !this.#failure) await this.#append();
    if (this.#failure) throw this.#failure;
  }

  /** Flushes and closes the file; later writes throw. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    try {
      await this.flush();
    } finally {
      await this.#file.close();
    }
  }

  /** Starts the append loop unless it runs; it re-checks what is due after each append. */
  #append(): Promise<void> {
    this.#appending ??= this.#appendWhileDue().finally(() => {
      this.#appending = undefined;
    });
    return this.#appending;
  }

  async #appendWhileDue(): Promise<void> {
    try {
      while (
        this.#pendingBytes > 0 &&
        (this.#pendingBytes >= this.#flushBytes || this.#fileDataBytes < this.#flushTarget)
      ) {
        const chunk = this.#pending;
        const chunkBytes = this.#pendingBytes;
        this.#pending = this.#spare;
        this.#pendingBytes = 0;
        this.#spare = chunk;
        await writeFully(this.#file, chunk.subarray(0, chunkBytes), HEADER_BYTES + this.#fileDataBytes);
        this.#fileDataBytes += chunkBytes;
        await writeFully(this.#file, wavHeader(this.#sampleRate, this.#fileDataBytes), 0);
      }
    } catch (error) {
      this.#failure = error as Error;
      this.#onFailure(this.#failure);
    }
  }

  /** Only when the disk falls more than a second behind. */
  #growPending(needed: number): void {
    const grown = Buffer.alloc(Math.max(needed, 2 * this.#pending.length));
    this.#pending.copy(grown, 0, 0, this.#pendingBytes);
    this.#pending = grown;
  }
}

async function writeFully(file: FileHandle, bytes: Buffer, position: number): Promise<void> {
  let written = 0;
  while (written < bytes.length) {
    const { bytesWritten } = await file.write(bytes, written, bytes.length - written, position + written);
    written += bytesWritten;
  }
}
