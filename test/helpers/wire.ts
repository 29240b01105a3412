/**
 * What is on the wire, captured by tshark on loopback: the G.711 audio sent to given UDP ports,
 * decoded, so a test can tell what a SIPp caller (which records nothing) was sent to hear.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createSocket, type Socket as DatagramSocket } from "node:dgram";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { decodeAlaw, decodeMulaw } from "../../src/telephony/media/codec/g711.js";
import { parseRtpPacket } from "../../src/telephony/media/rtp/rtp-packet.js";
import { findBinary } from "./sipp.js";
import { until } from "./until.js";

const PCAP_HEADER_LENGTH = 24;
const RECORD_HEADER_LENGTH = 16;
const ETHERNET_HEADER_LENGTH = 14;
const LINKTYPE_ETHERNET = 1;
const PCMU = 0;
const PCMA = 8;

export class WireCapture {
  private constructor(
    private readonly process: ChildProcess,
    private readonly dir: string,
    private readonly file: string,
    private readonly output: { text: string; canaries: number },
    /** Datagrams to itself whose lines in tshark's output prove what came before them was taken. */
    private readonly canary: DatagramSocket,
    private readonly canaryPort: number,
  ) {}

  /** Starts capturing what `filter` (BPF, e.g. "udp src portrange 20000-20199") picks on lo. */
  static async start(filter: string): Promise<WireCapture> {
    const binary = findBinary("tshark");
    if (binary === null) throw new Error("tshark is not installed");
    const dir = mkdtempSync(join(tmpdir(), "wire-"));
    const file = join(dir, "capture.pcap");
    const canary = createSocket("udp4");
    await new Promise<void>((resolve) => canary.bind(0, "127.0.0.1", resolve));
    const canaryPort = canary.address().port;
    // -P prints a line per packet as it is written (its UDP destination port alone, whatever protocol
    // tshark takes the port for; -l: at once, not 4 KB at a time): a canary's line proves tshark has
    // taken everything captured before it.
    const child = spawn(
      binary,
      [
        ...["-i", "lo", "-l", "-P", "-T", "fields", "-e", "udp.dstport"],
        ...["-f", `(${filter}) or (udp dst port ${canaryPort})`, "-F", "pcap", "-w", file],
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    const output = { text: "", canaries: 0 };
    const capture = new WireCapture(child, dir, file, output, canary, canaryPort);
    const canaryLine = `${canaryPort}`;
    let partial = "";
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`tshark did not start:\n${output.text}`)), 15_000);
      const collect = (chunk: Buffer) => {
        output.text = (output.text + chunk.toString()).slice(-10_000);
        const lines = (partial + chunk.toString()).split("\n");
        partial = lines.pop() ?? "";
        for (const line of lines) if (line.trim() === canaryLine) output.canaries++;
        if (output.text.includes("Capturing on")) {
          clearTimeout(timer);
          resolve();
        }
      };
      child.stdout?.on("data", collect);
      child.stderr?.on("data", collect);
      child.once("exit", (code) => {
        clearTimeout(timer);
        reject(new Error(`tshark exited with ${code}:\n${output.text}`));
      });
    });
    // It says it is capturing a moment before it sees the interface's packets.
    await capture.#canaryTaken();
    return capture;
  }

  /** Stops the capture once everything sent so far is in the file; the file is complete afterwards. */
  async stop(): Promise<void> {
    if (this.process.exitCode !== null || this.process.signalCode !== null) return;
    await this.#canaryTaken();
    const exited = new Promise((resolve) => this.process.once("exit", resolve));
    this.process.kill("SIGINT");
    await exited;
    this.canary.close();
  }

  /** Sends canaries until tshark has printed one more than before. */
  async #canaryTaken(): Promise<void> {
    const before = this.output.canaries;
    const port = this.canaryPort;
    await until(
      "the capture to take a canary datagram",
      async () => {
        this.canary.send("capture canary", port, "127.0.0.1");
        return this.output.canaries > before ? true : undefined;
      },
      { timeoutMs: 15_000, detail: () => this.output.text },
    );
  }

  /** Every captured frame but the canary's, with its IPv4 packet when it is one; stop first. */
  private *frames(): Generator<{ frame: Buffer; ip: Buffer | undefined }> {
    const pcap = readFileSync(this.file);
    if (pcap.length < PCAP_HEADER_LENGTH || pcap.readUInt32LE(20) !== LINKTYPE_ETHERNET)
      throw new Error("not a libpcap capture of Ethernet frames");
    for (let offset = PCAP_HEADER_LENGTH; offset + RECORD_HEADER_LENGTH <= pcap.length; ) {
      const length = pcap.readUInt32LE(offset + 8);
      const frame = pcap.subarray(offset + RECORD_HEADER_LENGTH, offset + RECORD_HEADER_LENGTH + length);
      offset += RECORD_HEADER_LENGTH + length;
      const ip = frame.readUInt16BE(12) === 0x0800 ? frame.subarray(ETHERNET_HEADER_LENGTH) : undefined;
      if (ip !== undefined && ip[9] === 17 && udpOf(ip).readUInt16BE(2) === this.canaryPort) continue;
      yield { frame, ip };
    }
  }

  /** The payloads of the UDP datagrams captured that `pick` takes by their ports, in order; stop first. */
  datagrams(pick: (ports: { source: number; destination: number }) => boolean): Buffer[] {
    const found: Buffer[] = [];
    for (const { ip } of this.frames()) {
      if (ip === undefined || ip[9] !== 17) continue;
      const udp = udpOf(ip);
      if (pick({ source: udp.readUInt16BE(0), destination: udp.readUInt16BE(2) }))
        found.push(udp.subarray(8));
    }
    return found;
  }

  /**
   * The G.711 audio (PCMU or PCMA) sent to `port`, decoded, in order of arrival; the capture must be
   * stopped first.
   */
  audioTo(port: number): Int16Array {
    const chunks: Int16Array[] = [];
    let total = 0;
    for (const datagram of this.datagrams(({ destination }) => destination === port)) {
      const packet = parseRtpPacket(datagram);
      if (packet === null || (packet.payloadType !== PCMU && packet.payloadType !== PCMA)) continue;
      const samples = new Int16Array(packet.payload.length);
      if (packet.payloadType === PCMU) decodeMulaw(packet.payload, samples);
      else decodeAlaw(packet.payload, samples);
      chunks.push(samples);
      total += samples.length;
    }
    const audio = new Int16Array(total);
    let at = 0;
    for (const chunk of chunks) {
      audio.set(chunk, at);
      at += chunk.length;
    }
    return audio;
  }

  /** Whether `text` appears anywhere in what was captured (plain SIP, say); stop the capture first. */
  carries(text: string): boolean {
    const wanted = Buffer.from(text);
    for (const { frame } of this.frames()) if (frame.includes(wanted)) return true;
    return false;
  }

  /** How many bytes of frames were captured; stop the capture first. */
  get size(): number {
    let total = 0;
    for (const { frame } of this.frames()) total += frame.length;
    return total;
  }

  /** tshark's own words (for failure messages). */
  get log(): string {
    return this.output.text;
  }

  async dispose(): Promise<void> {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** The UDP datagram inside an IPv4 packet. */
function udpOf(ip: Buffer): Buffer {
  return ip.subarray(((ip[0] as number) & 0x0f) * 4);
}
