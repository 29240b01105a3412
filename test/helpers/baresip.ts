/**
 * Runs baresip (https://github.com/baresip/baresip) headless on loopback as a real SIP phone for
 * end-to-end tests: it auto-answers, plays a WAV file as its microphone, records what it hears
 * (sndfile's dump-*-dec.wav), and takes commands over ctrl_tcp (netstring-framed JSON).
 *
 * Its audio rates, as baresip 1.0.0 does them: aufile refuses a WAV whose rate is not ausrc_srate
 * ("must have sample-rate"), and baresip resamples between that rate and the codec's (8 kHz G.711,
 * 16 kHz G.722, 48 kHz stereo Opus) both ways. sndfile sits between the resampler and the codec, so
 * its dumps are at the codec's rate and channels, whatever auplay_srate says.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createResampler, type SampleRate } from "../../src/telephony/media/resampler.js";
import { ToneGenerator, writeWav } from "./audio.js";
import { findBinary, freePorts } from "./sipp.js";

export interface BaresipOptions {
  /** The tone baresip sends, in Hz. */
  toneHz: number;
  /** User part of its account (the number the stack dials reaches it); default "baresip". */
  user?: string;
  /** Length of the source WAV: baresip hangs up when it ends. Default 60 s. */
  toneSeconds?: number;
  /** SIP over TLS on sipPort + 1: a PEM file with its certificate and key, and the CAs it trusts. */
  tls?: { certificate: string; cafile?: string };
  /** Media encryption (its srtp module): "srtp" offers it, "srtp-mand" insists on RTP/SAVP. */
  mediaenc?: "srtp" | "srtp-mand";
  /** The codecs it offers and accepts, preferred first; default PCMU, PCMA. */
  codecs?: readonly BaresipCodec[];
  /**
   * Its Opus encoder plans for this much packet loss and sends in-band FEC (RFC 7587 useinbandfec),
   * which it does only when told. With loss planned for, libopus narrows the band to make room for
   * FEC at the same bitrate: a tone above about 4 kHz may be cut.
   */
  opusLossPercent?: number;
}

export type BaresipCodec = "PCMU" | "PCMA" | "G722" | "opus";

/** Each codec as an account's audio_codecs names it (name/rate/channels unless 8000/1), and its module. */
const CODECS: Readonly<Record<BaresipCodec, { readonly name: string; readonly module: string }>> = {
  PCMU: { name: "PCMU", module: "g711.so" },
  PCMA: { name: "PCMA", module: "g711.so" },
  G722: { name: "G722/16000/1", module: "g722.so" },
  opus: { name: "opus/48000/2", module: "opus.so" },
};

/** The phone's own audio rate, of its source WAV and of heard(): 16 kHz when it has a wideband codec. */
function audioRateOf(codecs: readonly BaresipCodec[]): 8000 | 16000 {
  return codecs.some((codec) => codec === "G722" || codec === "opus") ? 16000 : 8000;
}

export interface BaresipEvent {
  type: string;
  class?: string;
  param?: string;
  peeruri?: string;
  [key: string]: unknown;
}

interface Waiter {
  type: string;
  resolve: (event: BaresipEvent) => void;
}

export class Baresip {
  readonly events: BaresipEvent[] = [];
  private readonly waiters: Waiter[] = [];
  private readonly responses = new Map<string, (response: { ok: boolean; data?: string }) => void>();
  private nextToken = 1;
  private output = "";
  private control: Socket | null = null;

  private constructor(
    private readonly process: ChildProcess,
    private readonly dir: string,
    readonly sipPort: number,
    private readonly controlPort: number,
    readonly user: string,
    /** Its microphone's rate and that of what heard() returns: 16000 with G.722 or Opus, else 8000. */
    readonly sampleRate: 8000 | 16000,
    readonly exited: Promise<number | null>,
  ) {
    const collect = (chunk: Buffer) => {
      this.output = (this.output + chunk.toString()).slice(-50_000);
    };
    process.stdout?.on("data", collect);
    process.stderr?.on("data", collect);
  }

  /** Its SIP address: the stack's trunk, or the URI it dials when told to. */
  get uri(): string {
    return `sip:${this.user}@127.0.0.1:${this.sipPort}`;
  }

  /** The trunk URI that routes calls to this phone. */
  get trunk(): string {
    return `sip:127.0.0.1:${this.sipPort}`;
  }

  /** Its SIP over TLS port (with a certificate). */
  get tlsPort(): number {
    return this.sipPort + 1;
  }

  /** Its console output (for failure messages and digit logs). */
  get log(): string {
    return this.output;
  }

  /**
   * Starts it, again on other ports when a port it was given was taken meanwhile (test files run in
   * parallel processes, each choosing ports of its own).
   */
  static async start(options: BaresipOptions): Promise<Baresip> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await Baresip.startOnce(options);
      } catch (error) {
        if (attempt >= 3 || !/Address already in use|errno = 98/.test(String(error))) throw error;
      }
    }
  }

  private static async startOnce(options: BaresipOptions): Promise<Baresip> {
    const binary = findBinary("baresip");
    if (binary === null) throw new Error("baresip is not installed");
    const dir = mkdtempSync(join(tmpdir(), "baresip-"));
    // sip_listen P also takes TLS on P+1.
    const sipPort = await freePorts(1);
    const controlPort = await freePorts();
    const rtpBase = await freePorts(9);
    const user = options.user ?? "baresip";
    const codecs = options.codecs ?? ["PCMU", "PCMA"];
    const sampleRate = audioRateOf(codecs);
    const source = join(dir, "source.wav");
    const sourceSamples = new Int16Array(Math.round((options.toneSeconds ?? 60) * sampleRate));
    writeWav(source, new ToneGenerator(options.toneHz, 0.5, sampleRate).fill(sourceSamples), sampleRate);
    writeFileSync(
      join(dir, "config"),
      [
        "poll_method epoll",
        `sip_listen 127.0.0.1:${sipPort}`,
        "net_interface 127.0.0.1",
        `rtp_ports ${rtpBase}-${rtpBase + 9}`,
        `audio_source aufile,${source}`,
        `ausrc_srate ${sampleRate}`,
        "ausrc_channels 1",
        `auplay_srate ${sampleRate}`,
        "auplay_channels 1",
        "module_path /usr/lib/baresip/modules",
        ...[...new Set(codecs.map((codec) => `module ${CODECS[codec].module}`))],
        "module aufile.so",
        "module sndfile.so",
        "module ctrl_tcp.so",
        ...(options.opusLossPercent === undefined
          ? []
          : ["opus_inbandfec yes", `opus_packet_loss ${options.opusLossPercent}`]),
        ...(options.mediaenc === undefined ? [] : ["module srtp.so"]),
        "module_app account.so",
        "module_app menu.so",
        `snd_path ${dir}`,
        ...(options.tls === undefined
          ? []
          : [
              `sip_certificate ${options.tls.certificate}`,
              ...(options.tls.cafile === undefined ? [] : [`sip_cafile ${options.tls.cafile}`]),
            ]),
        `ctrl_tcp_listen 127.0.0.1:${controlPort}`,
        "",
      ].join("\n"),
    );
    writeFileSync(
      join(dir, "accounts"),
      `<sip:${user}@127.0.0.1>;regint=0;answermode=auto;audio_codecs=${codecs.map((codec) => CODECS[codec].name).join(",")}${options.mediaenc === undefined ? "" : `;mediaenc=${options.mediaenc}`}\n`,
    );

    const child = spawn(binary, ["-4", "-f", dir], { cwd: dir, stdio: ["ignore", "pipe", "pipe"] });
    const exited = new Promise<number | null>((resolve, reject) => {
      child.once("error", reject);
      child.once("exit", (code) => resolve(code));
    });
    const phone = new Baresip(child, dir, sipPort, controlPort, user, sampleRate, exited);
    try {
      await phone.connectControl();
    } catch (error) {
      await phone.stop();
      throw error;
    }
    return phone;
  }

  private async connectControl(): Promise<void> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      try {
        this.control = await new Promise<Socket>((resolve, reject) => {
          const socket = connect(this.controlPort, "127.0.0.1");
          socket.once("connect", () => resolve(socket));
          socket.once("error", reject);
        });
        break;
      } catch (error) {
        if (this.process.exitCode !== null || Date.now() > deadline) {
          throw new Error(`baresip control port did not open: ${error}\n${this.output}`);
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
    let buffer = Buffer.alloc(0);
    this.control.on("error", () => {});
    this.control.on("data", (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      for (;;) {
        const colon = buffer.indexOf(":");
        if (colon < 0) return;
        const length = Number(buffer.toString("ascii", 0, colon));
        if (buffer.length < colon + 1 + length + 1) return;
        const json = buffer.toString("utf8", colon + 1, colon + 1 + length);
        buffer = buffer.subarray(colon + 1 + length + 1);
        this.dispatch(JSON.parse(json));
      }
    });
  }

  private dispatch(message: Record<string, unknown>): void {
    if (message.response === true) {
      const token = String(message.token);
      this.responses.get(token)?.({ ok: message.ok === true, data: message.data as string | undefined });
      this.responses.delete(token);
      return;
    }
    if (message.event !== true) return;
    const event = message as BaresipEvent;
    this.events.push(event);
    for (let i = this.waiters.length - 1; i >= 0; i--) {
      const waiter = this.waiters[i] as Waiter;
      if (waiter.type === event.type) {
        this.waiters.splice(i, 1);
        waiter.resolve(event);
      }
    }
  }

  /** Sends a ctrl_tcp command (e.g. "dial", "hangup", "sndcode", "quit") and waits for its response. */
  async command(command: string, params?: string): Promise<{ ok: boolean; data?: string }> {
    const control = this.control;
    if (control === null) throw new Error("baresip control connection is not open");
    const token = String(this.nextToken++);
    // A baresip that died or stopped answering fails the command instead of hanging the test.
    const response = new Promise<{ ok: boolean; data?: string }>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.responses.delete(token);
        reject(new Error(`baresip: no answer to ${command} within 10 s\n${this.output}`));
      }, 10_000);
      this.responses.set(token, (answer) => {
        clearTimeout(timer);
        resolve(answer);
      });
      this.exited.then(
        (code) => {
          if (!this.responses.delete(token)) return;
          clearTimeout(timer);
          reject(new Error(`baresip exited (${code}) before answering ${command}\n${this.output}`));
        },
        () => undefined,
      );
    });
    control.write(netstring({ command, params, token }));
    return response;
  }

  /** Resolves with the first event of `type` (one already seen counts); rejects after `ms`. */
  waitForEvent(type: string, ms = 15_000): Promise<BaresipEvent> {
    const seen = this.events.find((event) => event.type === type);
    if (seen !== undefined) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        type,
        resolve: (event) => {
          clearTimeout(timer);
          resolve(event);
        },
      };
      const timer = setTimeout(() => {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        const seenTypes = this.events.map((event) => event.type).join(", ");
        reject(new Error(`baresip: no ${type} within ${ms} ms (events: ${seenTypes})\n${this.output}`));
      }, ms);
      this.waiters.push(waiter);
    });
  }

  /**
   * What baresip heard: the decoded audio of its calls (sndfile's dump-*-dec.wav), concatenated, at
   * `sampleRate` (each dump converted from its codec's rate, Opus's two channels mixed to one).
   */
  heard(): Int16Array {
    return this.#dumps((bytes) => bytes);
  }

  /** Asks baresip to quit, kills it if it has not within 3 s, and removes its directory. */
  async stop(): Promise<void> {
    if (this.process.exitCode === null && this.process.signalCode === null) {
      if (this.control !== null && !this.control.destroyed)
        this.control.write(netstring({ command: "quit" }));
      const timer = setTimeout(() => this.process.kill("SIGKILL"), 3000);
      await this.exited;
      clearTimeout(timer);
    }
    this.control?.destroy();
    rmSync(this.dir, { recursive: true, force: true });
  }

  /**
   * What baresip has heard so far, during a call too: sndfile writes the sizes in a dump's WAV
   * header only when the call ends, so an unfinished dump's data (its size still 0) runs to the end
   * of the file. A dump whose header is not all written yet has heard nothing; a finished dump reads
   * as heard() reads it.
   */
  heardSoFar(): Int16Array {
    return this.#dumps((bytes) => {
      const data = chunkOffset(bytes, "data");
      if (data !== undefined && bytes.readUInt32LE(data + 4) === 0)
        bytes.writeUInt32LE(bytes.length - data - 8, data + 4);
      return bytes;
    });
  }

  /** Every decoded dump, each read after `prepare`, at `sampleRate`, concatenated. */
  #dumps(prepare: (bytes: Buffer) => Buffer): Int16Array {
    const parts = readdirSync(this.dir)
      .filter((name) => name.endsWith("-dec.wav"))
      .sort()
      .map((name) => this.#atOwnRate(readDump(prepare(readFileSync(join(this.dir, name))))));
    const all = new Int16Array(parts.reduce((sum, part) => sum + part.length, 0));
    let offset = 0;
    for (const part of parts) {
      all.set(part, offset);
      offset += part.length;
    }
    return all;
  }

  /** A dump's audio at `sampleRate`: G.711's 8 kHz raised to 16, Opus's 48 kHz lowered to 16. */
  #atOwnRate(dump: { sampleRate: number; samples: Int16Array }): Int16Array {
    if (dump.sampleRate === this.sampleRate) return dump.samples;
    const resampler = createResampler(dump.sampleRate as SampleRate, this.sampleRate);
    const factor = dump.sampleRate / this.sampleRate;
    const input =
      factor > 1
        ? dump.samples.subarray(0, dump.samples.length - (dump.samples.length % factor))
        : dump.samples;
    const output = new Int16Array(input.length / factor);
    resampler.process(input, output);
    return output;
  }
}

/** Where a RIFF chunk's header starts, if the file has the chunk. */
function chunkOffset(bytes: Buffer, id: string): number | undefined {
  for (let offset = 12; offset + 8 <= bytes.length; ) {
    if (bytes.toString("latin1", offset, offset + 4) === id) return offset;
    const size = bytes.readUInt32LE(offset + 4);
    offset += 8 + size + (size & 1);
  }
  return undefined;
}

/**
 * A sndfile dump: 16-bit PCM at the codec's rate, mono or (Opus) stereo, mixed down to mono. A dump
 * whose header is not all written yet holds nothing.
 */
function readDump(bytes: Buffer): { sampleRate: number; samples: Int16Array } {
  const format = chunkOffset(bytes, "fmt ");
  const data = chunkOffset(bytes, "data");
  if (format === undefined || data === undefined) return { sampleRate: 8000, samples: new Int16Array(0) };
  const channels = bytes.readUInt16LE(format + 10);
  const sampleRate = bytes.readUInt32LE(format + 12);
  const bits = bytes.readUInt16LE(format + 22);
  if (bits !== 16 || channels < 1) throw new Error(`a baresip dump of ${channels} channels of ${bits} bits`);
  const frames = Math.floor(Math.min(bytes.readUInt32LE(data + 4), bytes.length - data - 8) / (2 * channels));
  const samples = new Int16Array(frames);
  for (let frame = 0; frame < frames; frame++) {
    let sum = 0;
    for (let channel = 0; channel < channels; channel++)
      sum += bytes.readInt16LE(data + 8 + 2 * (frame * channels + channel));
    samples[frame] = Math.round(sum / channels);
  }
  return { sampleRate, samples };
}

function netstring(message: object): Buffer {
  const json = Buffer.from(JSON.stringify(message));
  return Buffer.concat([Buffer.from(`${json.length}:`), json, Buffer.from(",")]);
}

/**
 * What `phone` has heard so far (`heardSoFar()`), once `enough` accepts it: read again every 100 ms,
 * so that a test waits for a tone or a prompt to be heard instead of sitting out a fixed window.
 * Rejects after `ms`, naming what was awaited and how much had been heard.
 */
export async function heardUntil(
  phone: Baresip,
  what: string,
  enough: (heard: Int16Array) => boolean,
  ms = 15_000,
): Promise<Int16Array> {
  const deadline = Date.now() + ms;
  for (;;) {
    const heard = phone.heardSoFar();
    if (enough(heard)) return heard;
    if (Date.now() > deadline) {
      const seconds = (heard.length / phone.sampleRate).toFixed(1);
      throw new Error(
        `baresip ${phone.user}: ${what} not heard within ${ms} ms, in ${seconds} s heard\n${phone.log}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
