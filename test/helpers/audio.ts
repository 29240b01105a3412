/**
 * Audio test tools for end-to-end calls: tone generation, Goertzel level measurement, 16-bit PCM
 * WAV files, and pcap files of RTP streams for SIPp's play_pcap_audio.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { encodeAlaw, encodeMulaw } from "../../src/telephony/media/codec/g711.js";
import { dtmfDigitPackets } from "../../src/telephony/media/dtmf/rfc4733.js";
import { rtpPacketLength, writeRtpPacket } from "../../src/telephony/media/rtp/rtp-packet.js";
import { readWav as decodeWav, writeWav as encodeWav, type WavAudio } from "../../src/telephony/media/wav.js";

export const SAMPLE_RATE = 8000;
export const FRAME_SAMPLES = 160;

/** A phase-continuous sine generator writing 20 ms frames. */
export class ToneGenerator {
  private phase = 0;
  private readonly step: number;

  /** amplitude is a fraction of full scale (0.5 = -6 dBFS). */
  constructor(
    frequencyHz: number,
    private readonly amplitude = 0.5,
    sampleRate = SAMPLE_RATE,
  ) {
    this.step = (2 * Math.PI * frequencyHz) / sampleRate;
  }

  fill(out: Int16Array): Int16Array {
    for (let i = 0; i < out.length; i++) {
      out[i] = Math.round(Math.sin(this.phase) * this.amplitude * 32767);
      this.phase += this.step;
    }
    this.phase %= 2 * Math.PI;
    return out;
  }
}

/** `seconds` of a sine tone. */
export function tone(frequencyHz: number, seconds: number, amplitude = 0.5): Int16Array {
  return new ToneGenerator(frequencyHz, amplitude).fill(new Int16Array(Math.round(seconds * SAMPLE_RATE)));
}

/**
 * The amplitude (in sample units) of the `frequencyHz` component of `samples`, by the Goertzel
 * algorithm over the whole buffer: exact for a whole number of cycles.
 */
export function toneAmplitude(samples: Int16Array, frequencyHz: number, sampleRate = SAMPLE_RATE): number {
  const n = samples.length;
  if (n === 0) return 0;
  const coefficient = 2 * Math.cos((2 * Math.PI * frequencyHz) / sampleRate);
  let previous = 0;
  let beforePrevious = 0;
  for (let i = 0; i < n; i++) {
    const current = (samples[i] as number) + coefficient * previous - beforePrevious;
    beforePrevious = previous;
    previous = current;
  }
  const power =
    previous * previous + beforePrevious * beforePrevious - coefficient * previous * beforePrevious;
  return (2 * Math.sqrt(Math.max(power, 0))) / n;
}

/**
 * Level of one frequency in `samples`, in dBFS of a full-scale sine (a full-scale sine at exactly
 * that frequency reads 0). -Infinity for silence.
 */
export function goertzelLevelDb(samples: Int16Array, frequencyHz: number, sampleRate = SAMPLE_RATE): number {
  return 20 * Math.log10(toneAmplitude(samples, frequencyHz, sampleRate) / 32768);
}

/** Root-mean-square level in dBFS (a full-scale square wave reads 0). */
export function rmsLevelDb(samples: Int16Array): number {
  let sum = 0;
  for (const sample of samples) sum += sample * sample;
  return 10 * Math.log10(sum / Math.max(samples.length, 1) / (32768 * 32768));
}

/** Writes mono 16-bit PCM to a file (the service's own WAV writer). */
export function writeWav(path: string, samples: Int16Array, sampleRate = SAMPLE_RATE): void {
  writeFileSync(path, encodeWav(samples, sampleRate));
}

/** Reads a 16-bit PCM WAV file, also one a peer killed mid-call left unfinished. */
export function readWav(path: string): WavAudio {
  return decodeWav(readFileSync(path));
}

export interface RtpStreamOptions {
  /** 0 PCMU or 8 PCMA for audio. */
  payloadType: number;
  /** Payload type negotiated for telephone-event. */
  eventPayloadType?: number;
  ssrc?: number;
}

export interface PcapPacket {
  /** Capture time relative to the first packet; play_pcap_audio replays with these gaps. */
  offsetMs: number;
  datagram: Buffer;
}

/**
 * Builds one RTP stream (one SSRC, consecutive sequence numbers, a timestamp advancing with the
 * media clock): `toneSeconds` of a tone in G.711, then each digit as RFC 4733 events 100 ms long
 * with 100 ms of silence after each.
 */
export function rtpStream(
  options: RtpStreamOptions & { toneHz?: number; toneSeconds?: number; digits?: string },
): PcapPacket[] {
  const { payloadType, eventPayloadType = 101, ssrc = 0x5eed1e55, toneHz = 440, toneSeconds = 0 } = options;
  const encode = payloadType === 8 ? encodeAlaw : encodeMulaw;
  const packets: PcapPacket[] = [];
  let sequenceNumber = 1000;
  let timestamp = 160_000;
  let clockMs = 0;
  const push = (marker: boolean, pt: number, ts: number, payload: Uint8Array, atMs: number) => {
    const header = { marker, payloadType: pt, sequenceNumber, timestamp: ts >>> 0, ssrc, csrcs: [] };
    const datagram = Buffer.alloc(rtpPacketLength(header, payload.length));
    writeRtpPacket(header, payload, datagram);
    packets.push({ offsetMs: atMs, datagram });
    sequenceNumber = (sequenceNumber + 1) & 0xffff;
  };

  const generator = new ToneGenerator(toneHz);
  const frame = new Int16Array(FRAME_SAMPLES);
  const silence = new Int16Array(FRAME_SAMPLES);
  const audioFrame = (samples: Int16Array, marker: boolean) => {
    const payload = new Uint8Array(FRAME_SAMPLES);
    encode(samples, payload);
    push(marker, payloadType, timestamp, payload, clockMs);
    timestamp += FRAME_SAMPLES;
    clockMs += 20;
  };
  for (let i = 0; i < Math.round((toneSeconds * 1000) / 20); i++) audioFrame(generator.fill(frame), i === 0);
  for (const key of options.digits ?? "") {
    const start = clockMs;
    const eventPackets = dtmfDigitPackets(key, { timestamp, durationMs: 100 });
    for (const packet of eventPackets) {
      push(packet.marker, eventPayloadType, packet.timestamp, packet.payload, start + packet.sendOffsetMs);
    }
    // The event occupied the media clock for its duration; audio resumes after it (RFC 4733 §2.5.1.3).
    clockMs = start + eventPackets.length * 20;
    timestamp += (clockMs - start) * 8;
    for (let i = 0; i < 5; i++) audioFrame(silence, false);
  }
  return packets;
}

/**
 * Writes RTP datagrams as a pcap capture (Ethernet + IPv4 + UDP, 192.0.2.1:4000 -> 192.0.2.2:4002):
 * play_pcap_audio rewrites the addresses and keeps the RTP bytes and the capture timing.
 */
export function writeRtpPcap(path: string, packets: readonly PcapPacket[]): void {
  const records: Buffer[] = [];
  const globalHeader = Buffer.alloc(24);
  globalHeader.writeUInt32LE(0xa1b2c3d4, 0);
  globalHeader.writeUInt16LE(2, 4);
  globalHeader.writeUInt16LE(4, 6);
  globalHeader.writeUInt32LE(65535, 16);
  globalHeader.writeUInt32LE(1, 20); // LINKTYPE_ETHERNET
  records.push(globalHeader);
  const baseSeconds = 1_700_000_000;
  for (const { offsetMs, datagram } of packets) {
    const frameLength = 14 + 20 + 8 + datagram.length;
    const record = Buffer.alloc(16 + frameLength);
    const micros = Math.round(offsetMs * 1000);
    record.writeUInt32LE(baseSeconds + Math.floor(micros / 1e6), 0);
    record.writeUInt32LE(micros % 1e6, 4);
    record.writeUInt32LE(frameLength, 8);
    record.writeUInt32LE(frameLength, 12);
    const ethernet = 16;
    record.writeUInt16BE(0x0800, ethernet + 12);
    const ip = ethernet + 14;
    record[ip] = 0x45;
    record.writeUInt16BE(20 + 8 + datagram.length, ip + 2);
    record[ip + 8] = 64;
    record[ip + 9] = 17;
    Buffer.from([192, 0, 2, 1, 192, 0, 2, 2]).copy(record, ip + 12);
    record.writeUInt16BE(ipv4HeaderChecksum(record.subarray(ip, ip + 20)), ip + 10);
    const udp = ip + 20;
    record.writeUInt16BE(4000, udp);
    record.writeUInt16BE(4002, udp + 2);
    record.writeUInt16BE(8 + datagram.length, udp + 4);
    datagram.copy(record, udp + 8);
    records.push(record);
  }
  writeFileSync(path, Buffer.concat(records));
}

function ipv4HeaderChecksum(header: Buffer): number {
  let sum = 0;
  for (let i = 0; i < header.length; i += 2) sum += header.readUInt16BE(i);
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16);
  return ~sum & 0xffff;
}

/** The audio side of a call: what `exchangeAudio` drives. */
export interface AudioEndpoint {
  sendAudio(frame: Int16Array): void;
  readAudio(out: Int16Array): "frame" | "concealed" | "silence";
}

export interface AudioExchange {
  /** Everything read, 20 ms per tick, silence included. */
  heard: Int16Array;
  /** Ticks on which readAudio returned a received frame. */
  framesReceived: number;
}

/**
 * Runs a call's 20 ms clock for `seconds`: each tick sends the next frame of `send` (nothing when
 * null) and reads one frame. The clock is setInterval's, so it drifts on a loaded machine; the jitter
 * buffer absorbs that, and the measurements do not depend on exact pacing.
 */
export function exchangeAudio(
  call: AudioEndpoint,
  seconds: number,
  send: ToneGenerator | null,
): Promise<AudioExchange> {
  const ticks = Math.round((seconds * 1000) / 20);
  const heard = new Int16Array(ticks * FRAME_SAMPLES);
  const outgoing = new Int16Array(FRAME_SAMPLES);
  let tick = 0;
  let framesReceived = 0;
  return new Promise((resolve) => {
    const timer = setInterval(() => {
      if (send !== null) call.sendAudio(send.fill(outgoing));
      if (call.readAudio(heard.subarray(tick * FRAME_SAMPLES, (tick + 1) * FRAME_SAMPLES)) === "frame") {
        framesReceived++;
      }
      tick++;
      if (tick === ticks) {
        clearInterval(timer);
        resolve({ heard, framesReceived });
      }
    }, 20);
  });
}

/** Above this a tone counts as heard; below NOT_HEARD_DB as absent (dBFS, Goertzel). */
const HEARD_DB = -20;
const NOT_HEARD_DB = -40;

/** Asserts that `who` heard `present` Hz and not `absent` Hz (its own tone, say) in `samples`. */
export function assertTone(samples: Int16Array, present: number, absent: number, who: string): void {
  const presentDb = goertzelLevelDb(samples, present);
  const absentDb = goertzelLevelDb(samples, absent);
  if (!(presentDb > HEARD_DB))
    throw new Error(`${who} heard ${present} Hz only at ${presentDb.toFixed(1)} dBFS`);
  if (!(absentDb < NOT_HEARD_DB)) throw new Error(`${who} heard ${absent} Hz at ${absentDb.toFixed(1)} dBFS`);
}

/**
 * Whether `frequencyHz` is heard (above HEARD_DB, as for assertTone) in each 100 ms of the last
 * `seconds` of `samples`: a tone heard all along that time, not in a moment of it. False while
 * fewer than `seconds` are there.
 */
export function heardThroughout(samples: Int16Array, frequencyHz: number, seconds: number): boolean {
  const block = SAMPLE_RATE / 10;
  const blocks = Math.round(seconds * 10);
  if (samples.length < blocks * block) return false;
  for (let end = samples.length; end > samples.length - blocks * block; end -= block) {
    if (!(goertzelLevelDb(samples.subarray(end - block, end), frequencyHz) > HEARD_DB)) return false;
  }
  return true;
}

/** The last second of `samples` (all of them when there are fewer). */
export function lastSecond(samples: Int16Array): Int16Array {
  return samples.subarray(Math.max(0, samples.length - SAMPLE_RATE));
}

/**
 * Whether a whole last second of `samples` holds `present` Hz and not `absent` Hz, by assertTone's
 * measure: what a test waits for before it asserts the same.
 */
export function toneHeard(samples: Int16Array, present: number, absent: number): boolean {
  const window = lastSecond(samples);
  return (
    window.length === SAMPLE_RATE &&
    goertzelLevelDb(window, present) > HEARD_DB &&
    goertzelLevelDb(window, absent) < NOT_HEARD_DB
  );
}

/**
 * A call's 20 ms clock, as exchangeAudio runs it, left running while a test waits for what the call
 * should hear (`until`) instead of for a fixed time; `stop` ends it.
 */
export class RunningAudio {
  #heard = new Int16Array(10 * SAMPLE_RATE);
  #length = 0;
  #framesReceived = 0;
  #check: (() => void) | undefined;
  readonly #timer: NodeJS.Timeout;

  private constructor(call: AudioEndpoint, send: ToneGenerator | null) {
    const outgoing = new Int16Array(FRAME_SAMPLES);
    this.#timer = setInterval(() => {
      if (send !== null) call.sendAudio(send.fill(outgoing));
      if (this.#length + FRAME_SAMPLES > this.#heard.length) {
        const grown = new Int16Array(2 * this.#heard.length);
        grown.set(this.#heard);
        this.#heard = grown;
      }
      const frame = this.#heard.subarray(this.#length, this.#length + FRAME_SAMPLES);
      if (call.readAudio(frame) === "frame") this.#framesReceived++;
      this.#length += FRAME_SAMPLES;
      this.#check?.();
    }, 20);
    // A test that fails while the clock runs must not be kept alive by it.
    this.#timer.unref();
  }

  /** Starts the clock: each tick sends the next frame of `send` (nothing when null) and reads one. */
  static start(call: AudioEndpoint, send: ToneGenerator | null): RunningAudio {
    return new RunningAudio(call, send);
  }

  /** Everything read so far, 20 ms per tick, silence included. */
  get heard(): Int16Array {
    return this.#heard.subarray(0, this.#length);
  }

  /** Ticks on which readAudio returned a received frame. */
  get framesReceived(): number {
    return this.#framesReceived;
  }

  /**
   * Resolves after the first tick on which `done` holds (before the next tick, so what it judged is
   * still the last of `heard`). After `timeoutMs`, or when `done` throws, it stops the clock and
   * rejects, naming `what` and adding `detail()` (levels heard, say).
   */
  until(
    what: string,
    done: () => boolean,
    { timeoutMs = 10_000, detail = () => "" }: { timeoutMs?: number; detail?: () => string } = {},
  ): Promise<void> {
    if (this.#check !== undefined) throw new Error("RunningAudio: one wait at a time");
    return new Promise((resolve, reject) => {
      const fail = (error: unknown) => {
        clearTimeout(timer);
        this.#check = undefined;
        this.stop();
        reject(error);
      };
      const timer = setTimeout(
        () => fail(new Error(`no ${what} within ${timeoutMs} ms: ${detail()}`)),
        timeoutMs,
      );
      this.#check = () => {
        let finished: boolean;
        try {
          finished = done();
        } catch (error) {
          fail(error);
          return;
        }
        if (!finished) return;
        clearTimeout(timer);
        this.#check = undefined;
        resolve();
      };
    });
  }

  /** Stops the clock; returns what was heard. */
  stop(): AudioExchange {
    clearInterval(this.#timer);
    return { heard: this.heard, framesReceived: this.#framesReceived };
  }
}

/** The levels of `present` and `absent` Hz in the last second of `samples`, for failure messages. */
export function toneLevels(samples: Int16Array, present: number, absent: number): string {
  const window = lastSecond(samples);
  const level = (hz: number) => `${hz} Hz at ${goertzelLevelDb(window, hz).toFixed(1)} dBFS`;
  return `${level(present)}, ${level(absent)} over the last ${window.length / SAMPLE_RATE} s`;
}
