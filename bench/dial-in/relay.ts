/**
 * Dial-in relay: `npm run bench:relay`. How much delay instance A adds to each RTP packet when it
 * carries a caller to a room on instance B (Call.relay: every packet A receives on one call goes out
 * on the other with its header rewritten, no decoding, no jitter buffer, no mixing), both ways, at
 * several numbers of concurrent relayed calls (BENCH_CALLS, default "1,50,100"), over a window of
 * BENCH_SECONDS (default 20). BENCH_MEDIA_THREADS sets A's media threads, read as the service reads
 * BRIDGELINE_MEDIA_THREADS (default one per core; 0 keeps the media on the main thread).
 *
 * Everything runs on loopback with real peers. A is `Telephony` in this process. The callers are a
 * SIPp UAC (bench/dial-in/caller.xml) calling A, each call playing a pcap: PCMU, 20 ms packets, a
 * different (noise) payload in each; PCMU because A's internal call to B negotiates it (the service
 * offers PCMU first), so A only forwards (a PCMA caller would also have its payload converted on A).
 * A answers each, places a call to B with `callUri(..., { nextTo })` and relays the two once B
 * answers. B (BENCH_ROOM):
 * - `bridgeline` (the default): the service's own `Telephony` in a child process, answering every
 *   call and joining it to a room (a mix) of 10, so the room -> caller packets leave B the way they do
 *   in production: each media thread's 20 ms tick sends one frame to every leg of its rooms in one
 *   burst, and A relays the burst.
 * - `sipp`: a SIPp UAS (bench/dial-in/room.xml) answering and playing a pcap of its own on every call,
 *   each call on its own schedule: packets spread over the 20 ms, a gentler load than a room's tick.
 *
 * tshark captures every packet into and out of A's RTP ports on `lo`, with the kernel's timestamps.
 * Each packet A received in the window is paired with the packet A sent for it out of the other
 * call's port (the sequence number plus the call's constant offset, the payload bytes equal) and its
 * delay is t_out - t_in. A's CPU over the window comes from process.cpuUsage() (every thread, the
 * media threads included).
 *
 * The run is invalid (exit status 1) unless every call was answered and relayed within the set-up
 * time, both calls of every pair (and B's, with a Bridgeline B) were still up at the window's end,
 * each caller and B sent at least 90 % of the packets due in the window on every call, at least 95 %
 * of them came out of A on the other call with their payload unchanged, and every SIPp process saw
 * every call follow its script.
 */
import { type ChildProcess, fork, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { loadConfig } from "../../src/config.js";
import type { IncomingCall, OutgoingCall } from "../../src/telephony/call.js";
import type { MediaMix } from "../../src/telephony/media/plane/media-plane.js";
import { parseRtpPacket, rtpPacketLength, writeRtpPacket } from "../../src/telephony/media/rtp/rtp-packet.js";
import { Telephony, type TelephonyLogger } from "../../src/telephony/telephony.js";
import { type PcapPacket, writeRtpPcap } from "../../test/helpers/audio.js";
import { findBinary, Sipp } from "../../test/helpers/sipp.js";
import { childJiffies, machineJiffies, procStat, udpDropsAt } from "../proc.js";

const CALLS = (process.env.BENCH_CALLS ?? "1,50,100").split(",").map(Number);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 20);
/** A's media threads: BENCH_MEDIA_THREADS, read the way the service reads its own setting. */
const MEDIA_THREADS = loadConfig({ BRIDGELINE_MEDIA_THREADS: process.env.BENCH_MEDIA_THREADS }).sip
  .mediaThreads;
/** What plays instance B: the service's Telephony with rooms (default), or a SIPp UAS. */
const ROOM_KIND = process.env.BENCH_ROOM ?? "bridgeline";
/** When set, a directory the captures are kept in (relay-<calls>.pcapng) rather than deleted. */
const KEEP_CAPTURES = process.env.BENCH_KEEP_CAPTURES;
/**
 * Calls the callers place per second (each also makes A place one to B). Not a divisor of 50: SIPp
 * starts each call's audio when it is answered, so at 25/s (a call every 40 ms, twice the packet
 * interval) every caller would send in the same instant of each 20 ms; at 23/s their phases spread.
 */
const CALL_RATE = 23;
/** B's rooms: calls joined to one mix. */
const ROOM_SIZE = 10;
const SETUP_TIMEOUT_MS = 60_000;
/** After the last relay starts, before the capture starts. */
const WARM_UP_MS = 2000;
/** The capture runs on this long after the window, so that the last packets' relayed copies are in it. */
const CAPTURE_TAIL_MS = 500;
const PACKETS_PER_SECOND = 50;
/** A call must have sent this share of the packets due in the window... */
const MIN_SENT_SHARE = 0.9;
/** ...and A must have relayed this share of what it received. */
const MIN_RELAYED_SHARE = 0.95;
/** The callers' pcap outlasts set-up, warm-up and the window by far. */
const PCAP_SECONDS = SECONDS + 60;
/** Ports per relayed call at A: two calls, each an RTP and an RTCP port. */
const PORTS_PER_CALL = 4;
/** A's RTP range (and B's, the next one up) is a window this wide in 20000-29999. */
const RTP_PORT_SPAN = 1000;
const MAX_CALLS = RTP_PORT_SPAN / PORTS_PER_CALL - 10;
const CALLER_SCENARIO = fileURLToPath(new URL("./caller.xml", import.meta.url));
const ROOM_SCENARIO = fileURLToPath(new URL("./room.xml", import.meta.url));
/** Set in B's child process (a Bridgeline B): its RTP port range, as JSON. */
const ROOM_CHILD_ENV = "BENCH_RELAY_ROOM_PORTS";

type Direction = "caller→B" | "B→caller";
const DIRECTIONS: readonly Direction[] = ["caller→B", "B→caller"];

interface DelayFigures {
  direction: Direction;
  /** Packets A received in the window on this direction, all calls. */
  received: number;
  /** Of those, how many came out of A on the other call. */
  relayed: number;
  /** The lowest relayed share of any one call. */
  minRelayedShare: number;
  /** Milliseconds. */
  p50: number;
  p99: number;
  p999: number;
  max: number;
  mean: number;
}

interface Row {
  calls: number;
  mediaThreads: number;
  directions: DelayFigures[];
  /** A's CPU (every thread) over the window, percent of one core. */
  cpuPercent: number;
  /** A Bridgeline B's CPU, percent of one core; NaN for a SIPp B (counted with SIPp). */
  roomCpuPercent: number;
  /** The SIPp processes, percent of one core. */
  sippCpuPercent: number;
  /** tshark and its dumpcap, percent of one core. */
  captureCpuPercent: number;
  /** Everything else on the machine (other work), percent of one core. */
  othersCpuPercent: number;
  /** Datagrams the kernel dropped at A's RTP sockets during the window. */
  udpDropsOurs: number;
  /** Packets the capture itself dropped. */
  captureDrops: number;
  problems: string[];
  notes: string[];
}

// ---- The callers' audio ----

/** A deterministic pseudo-random byte source (xorshift32). */
function randomBytes(seed: number): (out: Uint8Array) => void {
  let state = seed >>> 0 || 1;
  return (out) => {
    for (let i = 0; i < out.length; i++) {
      state ^= state << 13;
      state >>>= 0;
      state ^= state >>> 17;
      state ^= state << 5;
      state >>>= 0;
      out[i] = state & 0xff;
    }
  };
}

/** A PCMU stream, 20 ms packets, each payload different (noise from `seed`), for `seconds`. */
function noiseStream(seconds: number, seed: number, ssrc: number): PcapPacket[] {
  const fill = randomBytes(seed);
  const packets: PcapPacket[] = [];
  const count = seconds * PACKETS_PER_SECOND;
  for (let i = 0; i < count; i++) {
    const payload = new Uint8Array(160);
    fill(payload);
    const header = {
      marker: i === 0,
      payloadType: 0,
      sequenceNumber: (1000 + i) & 0xffff,
      timestamp: (160_000 + 160 * i) >>> 0,
      ssrc,
      csrcs: [],
    };
    const datagram = Buffer.alloc(rtpPacketLength(header, payload.length));
    writeRtpPacket(header, payload, datagram);
    packets.push({ offsetMs: i * 20, datagram });
  }
  return packets;
}

// ---- The capture ----

class Capture {
  private constructor(
    readonly child: ChildProcess,
    readonly file: string,
    private readonly output: { text: string },
  ) {}

  /** tshark on lo with `filter`, writing pcapng (nanosecond timestamps) to `file`; resolves once capturing. */
  static async start(filter: string, file: string): Promise<Capture> {
    const binary = findBinary("tshark");
    if (binary === null) throw new Error("tshark is not installed (Debian: apt-get install tshark)");
    // -B: a 64 MiB kernel buffer, so that the capture keeps up when it is not scheduled for a while.
    const child = spawn(binary, ["-i", "lo", "-f", filter, "-B", "64", "-w", file], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    const output = { text: "" };
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`tshark did not start:\n${output.text}`)), 15_000);
      const collect = (chunk: Buffer) => {
        output.text = (output.text + chunk.toString()).slice(-10_000);
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
    return new Capture(child, file, output);
  }

  /** CPU jiffies of tshark and the dumpcap it runs. */
  jiffies(): number {
    const pid = this.child.pid;
    if (pid === undefined) return 0;
    const stat = procStat(pid);
    const own = stat === null ? 0 : Number(stat.fields[11]) + Number(stat.fields[12]);
    return own + childJiffies(pid, "dumpcap");
  }

  /** Stops it; the file is complete afterwards. Returns the packets tshark says it dropped. */
  async stop(): Promise<number> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      const exited = new Promise((resolve) => this.child.once("exit", resolve));
      this.child.kill("SIGINT");
      await exited;
    }
    const dropped = /(\d+) packets? dropped/.exec(this.output.text);
    return dropped === null ? 0 : Number(dropped[1]);
  }

  kill(): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill("SIGKILL");
  }
}

/** 32-bit FNV-1a. */
function fnv1a(bytes: Uint8Array): number {
  let hash = 0x811c9dc5;
  for (const byte of bytes) hash = Math.imul(hash ^ byte, 0x01000193);
  return hash >>> 0;
}

interface WirePacket {
  /** Nanoseconds since the epoch. */
  time: bigint;
  sourcePort: number;
  destinationPort: number;
  sequenceNumber: number;
  payloadType: number;
  /** FNV-1a of the payload. */
  digest: number;
}

/**
 * The UDP datagrams of a pcapng capture of Ethernet frames (what tshark writes for lo) that carry
 * RTP, with their timestamps; `keep` picks by ports. Reads Section Header, Interface Description
 * (if_tsresol) and Enhanced Packet Blocks; the Interface Statistics Block's drop count is returned too.
 */
function readPcapng(
  file: string,
  keep: (sourcePort: number, destinationPort: number) => boolean,
): { packets: WirePacket[]; interfaceDrops: number } {
  const data = fs.readFileSync(file);
  const packets: WirePacket[] = [];
  let littleEndian = true;
  const u16 = (offset: number) => (littleEndian ? data.readUInt16LE(offset) : data.readUInt16BE(offset));
  const u32 = (offset: number) => (littleEndian ? data.readUInt32LE(offset) : data.readUInt32BE(offset));
  /** Nanoseconds per timestamp unit, per interface. */
  const resolutions: { unitNs: bigint; linkType: number }[] = [];
  let interfaceDrops = 0;
  for (let offset = 0; offset + 12 <= data.length; ) {
    if (data.readUInt32LE(offset) === 0x0a0d0d0a) littleEndian = data.readUInt32LE(offset + 8) === 0x1a2b3c4d;
    const type = u32(offset);
    const length = u32(offset + 4);
    if (length < 12 || offset + length > data.length) break;
    const body = offset + 8;
    const end = offset + length - 4;
    if (type === 1) {
      // Interface Description Block: link type, reserved, snap length, then options.
      let unitNs = 1000n;
      for (let option = body + 8; option + 4 <= end; ) {
        const code = u16(option);
        const optionLength = u16(option + 2);
        if (code === 0) break;
        if (code === 9 && optionLength >= 1) {
          const value = data[option + 4] as number;
          const exponent = value & 0x7f;
          if ((value & 0x80) === 0) unitNs = exponent >= 9 ? 1n : 10n ** BigInt(9 - exponent);
          else throw new Error("binary timestamp resolutions are not read here");
        }
        option += 4 + Math.ceil(optionLength / 4) * 4;
      }
      resolutions.push({ unitNs, linkType: u16(body) });
    } else if (type === 5) {
      // Interface Statistics Block: interface id, timestamp, options (isb_ifdrop is code 5, 64 bits).
      for (let option = body + 12; option + 4 <= end; ) {
        const code = u16(option);
        const optionLength = u16(option + 2);
        if (code === 0) break;
        if (code === 5 && optionLength === 8) {
          const first = u32(option + 4);
          const second = u32(option + 8);
          interfaceDrops += littleEndian ? first + second * 2 ** 32 : first * 2 ** 32 + second;
        }
        option += 4 + Math.ceil(optionLength / 4) * 4;
      }
    } else if (type === 6) {
      const interfaceInfo = resolutions[u32(body)];
      const captured = u32(body + 12);
      const frame = data.subarray(body + 20, body + 20 + captured);
      offset += length;
      if (interfaceInfo === undefined || interfaceInfo.linkType !== 1 || frame.length < 14 + 20 + 8) continue;
      // Ethernet, IPv4, UDP only.
      if (frame.readUInt16BE(12) !== 0x0800) continue;
      const ip = frame.subarray(14);
      if (ip[9] !== 17) continue;
      const udp = ip.subarray(((ip[0] as number) & 0x0f) * 4);
      const sourcePort = udp.readUInt16BE(0);
      const destinationPort = udp.readUInt16BE(2);
      if (!keep(sourcePort, destinationPort)) continue;
      const rtp = parseRtpPacket(udp.subarray(8, udp.readUInt16BE(4)));
      if (rtp === null) continue;
      const time = ((BigInt(u32(body + 4)) << 32n) | BigInt(u32(body + 8))) * interfaceInfo.unitNs;
      packets.push({
        time,
        sourcePort,
        destinationPort,
        sequenceNumber: rtp.sequenceNumber,
        payloadType: rtp.payloadType,
        digest: fnv1a(rtp.payload),
      });
      continue;
    }
    offset += length;
  }
  return { packets, interfaceDrops };
}

// ---- Pairing and figures ----

/** A's two ports of one relayed pair: the caller's call and the call to B. */
interface PortPair {
  callerPort: number;
  legPort: number;
}

function percentile(sorted: Float64Array, fraction: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)] as number;
}

/**
 * The sequence-number offset A applies on one call and direction: for each packet A sent, the seq
 * difference to the last packet it had received before (its source while the delay is under the
 * 20 ms packet interval), the most common one. A relay keeps one offset per source (rtp-session.ts).
 */
function sequenceOffset(received: readonly WirePacket[], sent: readonly WirePacket[]): number | undefined {
  const tally = new Map<number, number>();
  let last = -1;
  for (const out of sent) {
    while (last + 1 < received.length && (received[last + 1] as WirePacket).time <= out.time) last++;
    const source = received[last];
    if (source === undefined) continue;
    const offset = (out.sequenceNumber - source.sequenceNumber) & 0xffff;
    tally.set(offset, (tally.get(offset) ?? 0) + 1);
  }
  let best: number | undefined;
  let bestCount = 0;
  for (const [offset, count] of tally) {
    if (count > bestCount) {
      best = offset;
      bestCount = count;
    }
  }
  return best;
}

/**
 * For each direction, pairs every packet A received in the window [from, to] (nanoseconds) with the
 * one it sent for it on the other call: sequence number plus the call's offset, payload equal.
 */
function delays(
  packets: readonly WirePacket[],
  pairs: readonly PortPair[],
  from: bigint,
  to: bigint,
  windowSeconds: number,
): { figures: DelayFigures[]; problems: string[] } {
  const problems: string[] = [];
  // Packets by the A port they came into and the A port they left from, in time order.
  const into = new Map<number, WirePacket[]>();
  const outOf = new Map<number, WirePacket[]>();
  const ours = new Set(pairs.flatMap((pair) => [pair.callerPort, pair.legPort]));
  for (const packet of packets) {
    const [map, port] = ours.has(packet.destinationPort)
      ? [into, packet.destinationPort]
      : [outOf, packet.sourcePort];
    const list = map.get(port) ?? [];
    list.push(packet);
    map.set(port, list);
  }
  const byTime = (a: WirePacket, b: WirePacket) => (a.time < b.time ? -1 : a.time > b.time ? 1 : 0);
  for (const list of [...into.values(), ...outOf.values()]) list.sort(byTime);
  const due = windowSeconds * PACKETS_PER_SECOND;
  const figures: DelayFigures[] = [];
  for (const direction of DIRECTIONS) {
    const all: number[] = [];
    let received = 0;
    let relayed = 0;
    let minRelayedShare = 1;
    for (const [index, pair] of pairs.entries()) {
      const inPort = direction === "caller→B" ? pair.callerPort : pair.legPort;
      const outPort = direction === "caller→B" ? pair.legPort : pair.callerPort;
      const inPackets = into.get(inPort) ?? [];
      const outPackets = outOf.get(outPort) ?? [];
      const offset = sequenceOffset(inPackets, outPackets);
      const sentBySequence = new Map(outPackets.map((packet) => [packet.sequenceNumber, packet]));
      let inWindow = 0;
      let matched = 0;
      let altered = 0;
      for (const packet of inPackets) {
        if (packet.time < from || packet.time > to) continue;
        inWindow++;
        if (offset === undefined) continue;
        const out = sentBySequence.get((packet.sequenceNumber + offset) & 0xffff);
        if (out === undefined || out.time < packet.time) continue;
        if (out.digest !== packet.digest || out.payloadType !== packet.payloadType) {
          altered++;
          continue;
        }
        matched++;
        all.push(Number(out.time - packet.time) / 1e6);
      }
      received += inWindow;
      relayed += matched;
      const sentShare = inWindow / due;
      const relayedShare = inWindow === 0 ? 0 : matched / inWindow;
      minRelayedShare = Math.min(minRelayedShare, relayedShare);
      const who = `call ${index + 1} (A ports ${pair.callerPort}/${pair.legPort}), ${direction}`;
      if (sentShare < MIN_SENT_SHARE) {
        problems.push(
          `${who}: A received ${inWindow} packets in the window, ${(sentShare * 100).toFixed(1)} % of the ${due} due`,
        );
      }
      if (relayedShare < MIN_RELAYED_SHARE) {
        problems.push(
          `${who}: A relayed ${matched} of the ${inWindow} packets it received (${(relayedShare * 100).toFixed(1)} %)${altered > 0 ? `, ${altered} more with another payload` : ""}`,
        );
      }
    }
    const sorted = Float64Array.from(all).sort();
    figures.push({
      direction,
      received,
      relayed,
      minRelayedShare,
      p50: percentile(sorted, 0.5),
      p99: percentile(sorted, 0.99),
      p999: percentile(sorted, 0.999),
      max: sorted.length === 0 ? Number.NaN : (sorted[sorted.length - 1] as number),
      mean: all.reduce((sum, value) => sum + value, 0) / Math.max(1, all.length),
    });
  }
  return { figures, problems };
}

// ---- Instance B ----

function collectingLogger(lines: string[]): TelephonyLogger {
  const keep = (level: string) => (fields: object, message: string) => {
    lines.push(`${level}: ${message} ${JSON.stringify(fields)}`);
    lines.splice(0, Math.max(0, lines.length - 20));
  };
  return { info: () => {}, debug: () => {}, warn: keep("warn"), error: keep("error") };
}

/** B as the bench sees it. */
interface Room {
  /** Where A calls it. */
  readonly uri: string;
  /** Why B's side was not right at the window's end (empty when it was). */
  checkUp(calls: number): Promise<string[]>;
  /** CPU jiffies of B's own process (0 for a SIPp B, counted with SIPp). */
  jiffies(): number;
  /** After A closed: why B did not end well (empty when it did). */
  finish(): Promise<string[]>;
  stop(): Promise<void>;
}

/** What B's child process reports. */
type RoomMessage =
  | { type: "ready"; sipPort: number }
  | { type: "status"; joined: number; up: number; warnings: string[] }
  | { type: "closed" };

/** Instance B: the service's Telephony in a child process, every call answered and put in a room of ten. */
class BridgelineRoom implements Room {
  private constructor(
    private readonly child: ChildProcess,
    readonly uri: string,
  ) {}

  static async start(rtpPorts: { min: number; max: number }): Promise<BridgelineRoom> {
    const child = fork(fileURLToPath(import.meta.url), [], {
      env: { ...process.env, [ROOM_CHILD_ENV]: JSON.stringify(rtpPorts) },
    });
    const ready = await BridgelineRoom.next(child, 30_000);
    if (ready?.type !== "ready") {
      child.kill("SIGKILL");
      throw new Error("instance B did not start");
    }
    return new BridgelineRoom(child, `sip:room@127.0.0.1:${ready.sipPort}`);
  }

  private static next(child: ChildProcess, ms: number): Promise<RoomMessage | undefined> {
    return new Promise((resolve) => {
      const done = (message?: RoomMessage) => {
        clearTimeout(timer);
        child.off("message", done);
        child.off("exit", onExit);
        resolve(message);
      };
      const onExit = () => done();
      const timer = setTimeout(done, ms);
      child.on("message", done);
      child.once("exit", onExit);
    });
  }

  async checkUp(calls: number): Promise<string[]> {
    const reply = BridgelineRoom.next(this.child, 5000);
    this.child.send("status");
    const status = await reply;
    if (status?.type !== "status") return ["instance B did not answer a status request"];
    if (status.joined === calls && status.up === calls) return [];
    return [
      `instance B put ${status.joined} of ${calls} calls in a room; ${status.up} were up at the window's end`,
      ...status.warnings.slice(-5).map((line) => `B: ${line}`),
    ];
  }

  jiffies(): number {
    const stat = this.child.pid === undefined ? null : procStat(this.child.pid);
    return stat === null ? 0 : Number(stat.fields[11]) + Number(stat.fields[12]);
  }

  async finish(): Promise<string[]> {
    const closed = BridgelineRoom.next(this.child, 15_000);
    this.child.send("close");
    return (await closed)?.type === "closed" ? [] : ["instance B did not close within 15 s"];
  }

  async stop(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      const exited = new Promise((resolve) => this.child.once("exit", resolve));
      this.child.kill("SIGKILL");
      await exited;
    }
  }
}

/** B's child process: the service's Telephony, every call it answers joined to a room of ten. */
async function roomInstance(rtpPorts: { min: number; max: number }): Promise<void> {
  const warnings: string[] = [];
  const telephony = await Telephony.start({
    bindAddress: "127.0.0.1",
    sipPort: 0,
    rtpPorts,
    // B as configured by default (one media thread per core), whatever A's setting.
    mediaThreads: loadConfig({}).sip.mediaThreads,
    logger: collectingLogger(warnings),
  });
  const joined: IncomingCall[] = [];
  let room: MediaMix | undefined;
  telephony.onIncomingCall((call) => {
    void call.accept().then((accepted) => {
      if (!accepted) return;
      if (room === undefined || joined.length % ROOM_SIZE === 0) room = telephony.openRoom();
      call.join(room, { muted: false });
      joined.push(call);
    });
  });
  const send = (message: RoomMessage) => process.send?.(message);
  process.on("message", (command) => {
    if (command === "status") {
      const up = joined.filter((call) => call.state === "answered").length;
      send({ type: "status", joined: joined.length, up, warnings });
    } else if (command === "close") {
      void telephony.close().then(() => process.send?.({ type: "closed" }, () => process.exit(0)));
    }
  });
  process.on("disconnect", () => process.exit(0));
  send({ type: "ready", sipPort: telephony.sipPort });
}

/** Instance B played by a SIPp UAS that answers and plays a pcap of its own on every call. */
class SippRoom implements Room {
  private constructor(private readonly sipp: Sipp) {}

  static async start(calls: number, pcap: string, timeoutSeconds: number): Promise<SippRoom> {
    return new SippRoom(
      await Sipp.start({ scenario: ROOM_SCENARIO, calls, timeoutSeconds, pcap, traceMessages: false }),
    );
  }

  get uri(): string {
    return this.sipp.uri("room");
  }

  async checkUp(): Promise<string[]> {
    return [];
  }

  jiffies(): number {
    return 0;
  }

  async finish(): Promise<string[]> {
    const outcome = await this.sipp.result(15_000).catch(() => null);
    if (outcome === null) return ["B's SIPp still running 15 s after A closed"];
    if (outcome.code === 0) return [];
    return [`B's SIPp exited ${outcome.code ?? outcome.signal}: ${this.sipp.errors().slice(0, 500)}`];
  }

  stop(): Promise<void> {
    return this.sipp.stop();
  }
}

// ---- One load level ----

/** A window of RTP_PORT_SPAN ports in 20000-29999, `index` windows above a random one. */
function portWindow(base: number, index: number): { min: number; max: number } {
  const windows = 10_000 / RTP_PORT_SPAN;
  const min = 20000 + RTP_PORT_SPAN * ((base + index) % windows);
  return { min, max: min + RTP_PORT_SPAN - 1 };
}

async function runLevel(
  calls: number,
  pcaps: { caller: string; room: string },
  workDir: string,
): Promise<Row> {
  const problems: string[] = [];
  const notes: string[] = [];
  const warnings: string[] = [];
  const base = Math.floor(Math.random() * (10_000 / RTP_PORT_SPAN));
  const rtpPorts = portWindow(base, 0);
  const timeoutSeconds = SECONDS + 240;
  let room: Room | undefined;
  let callers: Sipp | undefined;
  let telephony: Telephony | undefined;
  let capture: Capture | undefined;
  let closing = false;
  try {
    room =
      ROOM_KIND === "sipp"
        ? await SippRoom.start(calls, pcaps.room, timeoutSeconds)
        : await BridgelineRoom.start(portWindow(base, 1));
    const roomUri = room.uri;
    const a = await Telephony.start({
      bindAddress: "127.0.0.1",
      sipPort: 0,
      callerId: "+16045550100",
      rtpPorts,
      mediaThreads: MEDIA_THREADS,
      logger: collectingLogger(warnings),
    });
    telephony = a;

    const relayed: { call: IncomingCall; leg: OutgoingCall }[] = [];
    const setupFailures: string[] = [];
    /** Calls that ended before the bench hung them up. */
    const endedEarly: string[] = [];
    let allRelayed: () => void = () => {};
    const everyCallRelayed = new Promise<void>((resolve) => {
      allRelayed = resolve;
    });
    a.onIncomingCall((call) => {
      void (async () => {
        call.once("ended", (end) => {
          if (!closing) endedEarly.push(`a caller's call ended: ${JSON.stringify(end)}`);
        });
        if (!(await call.accept())) {
          setupFailures.push(`A could not accept a caller's call (state ${call.state})`);
          return;
        }
        const leg = a.callUri(roomUri, { nextTo: call });
        leg.once("failed", (failure) =>
          setupFailures.push(`A's call to B failed: ${JSON.stringify(failure)}`),
        );
        leg.once("ended", (end) => {
          if (!closing) endedEarly.push(`a call to B ended: ${JSON.stringify(end)}`);
        });
        leg.once("answered", () => {
          call.relay(leg);
          relayed.push({ call, leg });
          if (relayed.length === calls) allRelayed();
        });
      })();
    });

    callers = await Sipp.start({
      scenario: CALLER_SCENARIO,
      remote: `127.0.0.1:${a.sipPort}`,
      calls,
      rate: CALL_RATE,
      timeoutSeconds,
      pcap: pcaps.caller,
      // Every call at once: SIPp otherwise caps open calls at 3 × rate × -d (1 s by default).
      args: ["-l", String(calls)],
      traceMessages: false,
    });
    const callerSipp = callers;
    const setupTimer = new AbortController();
    const setupTimedOut = await Promise.race([
      everyCallRelayed.then(() => false),
      sleep(SETUP_TIMEOUT_MS, true, { signal: setupTimer.signal }).catch(() => true),
      callerSipp.exited.then(() => true),
    ]);
    setupTimer.abort();
    if (setupTimedOut) {
      problems.push(
        `only ${relayed.length} of ${calls} calls were answered and relayed within ${SETUP_TIMEOUT_MS / 1000} s`,
        ...setupFailures.slice(0, 5),
        ...(callerSipp.errors() === "" ? [] : [`callers' SIPp: ${callerSipp.errors().slice(0, 500)}`]),
        ...warnings.slice(-5),
      );
      return emptyRow(calls, problems, notes);
    }
    await sleep(WARM_UP_MS);

    const pairs: PortPair[] = relayed.map(({ call, leg }) => ({
      callerPort: call.mediaStream?.localPort ?? 0,
      legPort: leg.mediaStream?.localPort ?? 0,
    }));
    const ourPorts = new Set(pairs.flatMap((pair) => [pair.callerPort, pair.legPort]));
    const isOurs = (port: number) => ourPorts.has(port) || ourPorts.has(port - 1);
    const captureFile = path.join(KEEP_CAPTURES ?? workDir, `relay-${calls}.pcapng`);
    capture = await Capture.start(`udp portrange ${rtpPorts.min}-${rtpPorts.max}`, captureFile);
    // dumpcap reports "Capturing on" as it starts: let it settle before the window opens.
    await sleep(300);

    const dropsBefore = udpDropsAt(isOurs);
    const machineBefore = machineJiffies();
    const sippBefore = childJiffies(process.pid, "sipp");
    const roomBefore = room.jiffies();
    const captureBefore = capture.jiffies();
    const cpuBefore = process.cpuUsage();
    const wallBefore = performance.now();
    const from = BigInt(Date.now()) * 1_000_000n;
    await sleep(SECONDS * 1000);
    const to = BigInt(Date.now()) * 1_000_000n;
    const cpu = process.cpuUsage(cpuBefore);
    const wallMs = performance.now() - wallBefore;
    const machine = machineJiffies();
    const sippJiffies = childJiffies(process.pid, "sipp") - sippBefore;
    const roomJiffies = room.jiffies() - roomBefore;
    const captureJiffies = capture.jiffies() - captureBefore;
    const udpDropsOurs = udpDropsAt(isOurs) - dropsBefore;
    const notUp = relayed.filter(({ call, leg }) => call.state !== "answered" || leg.state !== "answered");
    if (notUp.length > 0) {
      problems.push(`${notUp.length} of ${calls} relayed pairs were not both up at A at the window's end`);
    }
    problems.push(...endedEarly.slice(0, 5), ...(await room.checkUp(calls)));

    await sleep(CAPTURE_TAIL_MS);
    const tsharkDrops = await capture.stop();
    closing = true;
    await a.close();
    telephony = undefined;
    const callersOutcome = await callers.result(15_000).catch(() => null);
    if (callersOutcome === null) problems.push("the callers' SIPp still running 15 s after A closed");
    else if (callersOutcome.code !== 0) {
      problems.push(
        `the callers' SIPp exited ${callersOutcome.code ?? callersOutcome.signal}: ${callers.errors().slice(0, 500)}`,
      );
    }
    problems.push(...(await room.finish()));

    const { packets, interfaceDrops } = readPcapng(
      captureFile,
      (source, destination) => ourPorts.has(source) || ourPorts.has(destination),
    );
    if (KEEP_CAPTURES === undefined) fs.rmSync(captureFile, { force: true });
    const analysed = delays(packets, pairs, from, to, Number(to - from) / 1e9);
    problems.push(...analysed.problems.slice(0, 10));
    if (analysed.problems.length > 10) problems.push(`... and ${analysed.problems.length - 10} more`);
    const coreJiffies = (machine.total - machineBefore.total) / os.cpus().length;
    const percentOfCore = (jiffies: number) => (jiffies / coreJiffies) * 100;
    const cpuPercent = ((cpu.user + cpu.system) / 1000 / wallMs) * 100;
    const roomCpuPercent = percentOfCore(roomJiffies);
    const sippCpuPercent = percentOfCore(sippJiffies);
    const captureCpuPercent = percentOfCore(captureJiffies);
    const machinePercent = percentOfCore(machine.busy - machineBefore.busy);
    if (problems.length > 0) problems.push(...warnings.slice(-5));
    const captureDrops = Math.max(tsharkDrops, interfaceDrops);
    if (udpDropsOurs > 0)
      notes.push(`${udpDropsOurs} datagrams dropped at A's RTP sockets (full receive buffers)`);
    if (captureDrops > 0)
      notes.push(`the capture dropped ${captureDrops} packets: they are missing from the pairing`);
    return {
      calls,
      mediaThreads: MEDIA_THREADS,
      directions: analysed.figures,
      cpuPercent,
      roomCpuPercent: ROOM_KIND === "sipp" ? Number.NaN : roomCpuPercent,
      sippCpuPercent,
      captureCpuPercent,
      othersCpuPercent: Math.max(
        0,
        machinePercent - cpuPercent - roomCpuPercent - sippCpuPercent - captureCpuPercent,
      ),
      udpDropsOurs,
      captureDrops,
      problems,
      notes,
    };
  } finally {
    capture?.kill();
    closing = true;
    await telephony?.close();
    await callers?.stop();
    await room?.stop();
  }
}

function emptyRow(calls: number, problems: string[], notes: string[]): Row {
  return {
    calls,
    mediaThreads: MEDIA_THREADS,
    directions: [],
    cpuPercent: Number.NaN,
    roomCpuPercent: Number.NaN,
    sippCpuPercent: Number.NaN,
    captureCpuPercent: Number.NaN,
    othersCpuPercent: Number.NaN,
    udpDropsOurs: 0,
    captureDrops: 0,
    problems,
    notes,
  };
}

// ---- The table ----

function table(rows: readonly Row[]): string {
  const header = [
    "calls",
    "A media threads",
    "B",
    "direction",
    "packets in",
    "relayed %",
    "worst call %",
    "p50 ms",
    "p99 ms",
    "p99.9 ms",
    "max ms",
    "mean ms",
    "A CPU %",
    "A CPU % per call",
    "B CPU %",
    "SIPp CPU %",
    "capture CPU %",
    "others CPU %",
    "UDP drops ours",
    "capture drops",
  ];
  const leftAligned = new Set([2, 3]);
  const cells = rows.flatMap((row) =>
    row.directions.map((figures) => [
      String(row.calls),
      String(row.mediaThreads),
      ROOM_KIND,
      figures.direction,
      String(figures.received),
      ((figures.relayed / Math.max(1, figures.received)) * 100).toFixed(2),
      (figures.minRelayedShare * 100).toFixed(2),
      figures.p50.toFixed(3),
      figures.p99.toFixed(3),
      figures.p999.toFixed(3),
      figures.max.toFixed(3),
      figures.mean.toFixed(3),
      row.cpuPercent.toFixed(1),
      (row.cpuPercent / row.calls).toFixed(3),
      Number.isNaN(row.roomCpuPercent) ? "-" : row.roomCpuPercent.toFixed(0),
      row.sippCpuPercent.toFixed(0),
      row.captureCpuPercent.toFixed(0),
      row.othersCpuPercent.toFixed(0),
      String(row.udpDropsOurs),
      String(row.captureDrops),
    ]),
  );
  const widths = header.map((title, column) =>
    Math.max(title.length, ...cells.map((cellRow) => cellRow[column]?.length ?? 0)),
  );
  const line = (cellRow: string[]) =>
    `| ${cellRow
      .map((cell, column) =>
        leftAligned.has(column) ? cell.padEnd(widths[column] ?? 0) : cell.padStart(widths[column] ?? 0),
      )
      .join(" | ")} |`;
  const rule = `|${widths
    .map((width, column) => (leftAligned.has(column) ? "-".repeat(width + 2) : `${"-".repeat(width + 1)}:`))
    .join("|")}|`;
  return [line(header), rule, ...cells.map(line)].join("\n");
}

async function main(): Promise<void> {
  for (const calls of CALLS) {
    if (!(Number.isInteger(calls) && calls > 0 && calls <= MAX_CALLS))
      throw new Error(`BENCH_CALLS: each count must be 1 to ${MAX_CALLS}, got ${calls}`);
  }
  if (!(SECONDS > 0)) throw new Error(`BENCH_SECONDS must be positive, got ${process.env.BENCH_SECONDS}`);
  if (ROOM_KIND !== "bridgeline" && ROOM_KIND !== "sipp")
    throw new Error(`BENCH_ROOM must be bridgeline or sipp, got ${ROOM_KIND}`);
  if (findBinary("sipp") === null)
    throw new Error("sipp is not installed (Debian: apt-get install sip-tester)");
  const load = () =>
    os
      .loadavg()
      .map((value) => value.toFixed(2))
      .join(" ");
  process.stderr.write(
    `A's media threads: ${MEDIA_THREADS}${MEDIA_THREADS === 0 ? " (media on the main thread)" : ""}; B: ${ROOM_KIND}; ${os.availableParallelism()} cores; load average ${load()}\n`,
  );
  const workDir = fs.mkdtempSync(path.join(os.tmpdir(), "bridgeline-bench-relay-"));
  const pcaps = { caller: path.join(workDir, "caller.pcap"), room: path.join(workDir, "room.pcap") };
  writeRtpPcap(pcaps.caller, noiseStream(PCAP_SECONDS, 0x5eed, 0x5eed1e55));
  writeRtpPcap(pcaps.room, noiseStream(PCAP_SECONDS, 0xb00b, 0x0000b00b));
  const rows: Row[] = [];
  let valid = true;
  try {
    for (const calls of CALLS) {
      process.stderr.write(`${calls} relayed calls: setting up, then ${SECONDS} s measured...\n`);
      const row = await runLevel(calls, pcaps, workDir).catch((error: unknown) => {
        const message = error instanceof Error ? error.message : String(error);
        return emptyRow(calls, [`the run failed: ${message}`], []);
      });
      rows.push(row);
      process.stderr.write(`  done; load average ${load()}\n`);
      for (const note of row.notes) process.stderr.write(`  note: ${note}\n`);
      if (row.problems.length > 0) {
        valid = false;
        process.stderr.write(`  INVALID:\n    ${row.problems.join("\n    ")}\n`);
      }
    }
  } finally {
    fs.rmSync(workDir, { recursive: true, force: true });
  }
  process.stdout.write(`${table(rows.filter((row) => row.problems.length === 0))}\n`);
  if (!valid) {
    process.stderr.write(
      "\n*** INVALID RUN: some calls were not answered and relayed for the whole window, or A did not relay what it received (see INVALID above); only valid levels are in the table ***\n",
    );
    process.exitCode = 1;
  }
}

const roomPorts = process.env[ROOM_CHILD_ENV];
if (roomPorts === undefined) await main();
else await roomInstance(JSON.parse(roomPorts) as { min: number; max: number });
