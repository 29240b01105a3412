/**
 * Media inputs to a live call in the room: RTP packets built field by field (versions, padding,
 * CSRC counts, header extensions, payload types, sequence and timestamp jumps, sources, lengths that
 * lie) and then often damaged byte by byte, non-RTP junk, RTCP compound packets (SR, RR, SDES, BYE,
 * APP, feedback, XR, unknown types, counts and lengths that lie), and RFC 4733 telephone-event
 * payloads (any event code, stuck, ended without a start, storms of new events, short and long
 * payloads). Most are sent from the call's own RTP/RTCP socket, the rest from a stranger's.
 */
import { createSocket, type Socket } from "node:dgram";
import { mutateBytes } from "./mutate.js";
import type { Random } from "./random.js";
import { type Call, TELEPHONE_EVENT } from "./sip-peer.js";
import { type FuzzContext, Pacer, type Target } from "./target.js";

const PAYLOAD_TYPES = [0, 8, 9, 13, 18, TELEPHONE_EVENT, 96, 127, 72, 73, 76, 77, 35];

/** An RTP packet with every field chosen, some of them lying about the rest. */
export function rtpPacket(
  rng: Random,
  call: Call,
  previous: { sequence: number; timestamp: number },
): Buffer {
  const version = rng.chance(0.9) ? 2 : rng.below(4);
  const csrcCount = rng.chance(0.7) ? 0 : rng.below(16);
  const extension = rng.chance(0.2);
  const padding = rng.chance(0.15);
  const payloadType = rng.chance(0.5) ? 0 : rng.chance(0.5) ? rng.pick(PAYLOAD_TYPES) : rng.below(128);
  previous.sequence =
    (rng.chance(0.7)
      ? previous.sequence + 1
      : rng.pick([previous.sequence, previous.sequence - 1, previous.sequence + 30_000, rng.below(65_536)])) &
    0xffff;
  previous.timestamp =
    (rng.chance(0.7)
      ? previous.timestamp + 160
      : rng.pick([previous.timestamp, 0, 0xffffffff, previous.timestamp - 160, rng.uint32()])) >>> 0;
  const ssrc = rng.chance(0.8) ? call.ssrc : rng.chance(0.5) ? rng.uint32() : rng.pick([0, 0xffffffff]);
  const parts: Buffer[] = [];
  const head = Buffer.alloc(12);
  head[0] = (version << 6) | (padding ? 0x20 : 0) | (extension ? 0x10 : 0) | csrcCount;
  head[1] = (rng.chance(0.1) ? 0x80 : 0) | payloadType;
  head.writeUInt16BE(previous.sequence, 2);
  head.writeUInt32BE(previous.timestamp, 4);
  head.writeUInt32BE(ssrc >>> 0, 8);
  parts.push(head);
  // The CSRC list, sometimes shorter than its count says.
  parts.push(rng.bytes(4 * (rng.chance(0.8) ? csrcCount : rng.below(csrcCount + 1))));
  if (extension) {
    const words = rng.chance(0.7) ? rng.below(8) : rng.pick([0xffff, 255, 1000]);
    const header = Buffer.alloc(4);
    header.writeUInt16BE(rng.pick([0xbede, 0x1000, rng.below(65_536)]), 0);
    header.writeUInt16BE(words, 2);
    parts.push(header, rng.bytes(4 * (rng.chance(0.7) ? Math.min(words, 64) : rng.below(8))));
  }
  const payloadLength = rng.chance(0.7) ? 160 : rng.length(1400);
  parts.push(rng.bytes(payloadLength));
  if (padding) {
    const count = rng.chance(0.5) ? rng.between(1, 4) : rng.pick([0, 255, payloadLength + 13, 128]);
    const pad = Buffer.alloc(Math.max(1, Math.min(count, 255)));
    pad[pad.length - 1] = count & 0xff;
    parts.push(pad);
  }
  const packet = Buffer.concat(parts);
  return rng.chance(0.3) ? mutateBytes(rng, packet) : packet;
}

/** What is not RTP at all: random bytes, STUN- and DTLS-looking starts, empty datagrams. */
export function junk(rng: Random): Buffer {
  const bytes = rng.bytes(rng.length(1400));
  if (bytes.length > 0 && rng.chance(0.3)) bytes[0] = rng.pick([0x00, 0x01, 0x16, 0x14, 0x40, 0xc0, 0x80]);
  return bytes;
}

/** One RTCP packet: a header (count and length that may lie) and a body of its type. */
function rtcpPacket(rng: Random, ssrc: number): Buffer {
  const type = rng.chance(0.8)
    ? rng.between(200, 207)
    : rng.chance(0.5)
      ? rng.below(256)
      : rng.between(192, 223);
  let count = rng.chance(0.7) ? rng.below(4) : rng.below(32);
  const body: Buffer[] = [];
  const word = (value: number) => {
    const bytes = Buffer.alloc(4);
    bytes.writeUInt32BE(value >>> 0);
    return bytes;
  };
  switch (type) {
    case 200:
    case 201:
      body.push(word(ssrc));
      if (type === 200) body.push(rng.bytes(20));
      for (let i = rng.chance(0.8) ? count : rng.below(32); i > 0; i--) body.push(rng.bytes(24));
      break;
    case 202:
      for (let chunk = rng.chance(0.8) ? count : rng.below(32); chunk > 0; chunk--) {
        body.push(word(rng.chance(0.5) ? ssrc : rng.uint32()));
        const items: Buffer[] = [];
        for (let item = rng.below(5); item > 0; item--) {
          const length = rng.chance(0.8) ? rng.below(40) : 255;
          const text = rng.bytes(rng.chance(0.8) ? length : rng.below(300));
          items.push(Buffer.from([rng.chance(0.8) ? rng.between(1, 8) : rng.below(256), length]), text);
        }
        const itemBytes = Buffer.concat([...items, Buffer.alloc(1)]);
        body.push(itemBytes, Buffer.alloc(rng.chance(0.8) ? (4 - (itemBytes.length % 4)) % 4 : rng.below(4)));
      }
      break;
    case 203: {
      for (let i = rng.chance(0.8) ? count : rng.below(32); i > 0; i--)
        body.push(word(rng.chance(0.5) ? ssrc : rng.uint32()));
      if (rng.chance(0.5)) {
        const length = rng.below(256);
        body.push(Buffer.from([length]), rng.bytes(rng.chance(0.7) ? length : rng.below(300)));
      }
      break;
    }
    case 204:
      body.push(word(ssrc), Buffer.from(rng.pick(["ABCD", "\0\0\0\0", "xxxx"])), rng.bytes(4 * rng.below(8)));
      break;
    case 205:
    case 206:
      count = rng.below(32);
      body.push(word(ssrc), word(rng.uint32()), rng.bytes(4 * rng.below(8)));
      break;
    default:
      body.push(word(ssrc), rng.bytes(rng.length(200)));
  }
  const content = Buffer.concat(body);
  const padding = rng.chance(0.1);
  const padded = padding
    ? Buffer.concat([content, Buffer.from([0, 0, 0, rng.pick([4, 0, 255, 8])])])
    : content;
  const trueWords = Math.ceil((padded.length + 4) / 4) - 1;
  const header = Buffer.alloc(4);
  header[0] = ((rng.chance(0.9) ? 2 : rng.below(4)) << 6) | (padding ? 0x20 : 0) | (count & 0x1f);
  header[1] = type;
  header.writeUInt16BE(
    rng.chance(0.8)
      ? trueWords
      : rng.pick([0, 0xffff, trueWords + 1, trueWords - 1, rng.below(65_536)]) & 0xffff,
    2,
  );
  const packet = Buffer.concat([header, padded, Buffer.alloc((4 - (padded.length % 4)) % 4)]);
  return packet;
}

export function rtcpCompound(rng: Random, ssrc: number): Buffer {
  const packets: Buffer[] = [];
  for (let i = rng.chance(0.8) ? rng.between(1, 3) : rng.between(4, 40); i > 0; i--)
    packets.push(rtcpPacket(rng, ssrc));
  const compound = Buffer.concat(packets);
  return rng.chance(0.25) ? mutateBytes(rng, compound) : compound;
}

/** Telephone-event state: the event being "pressed" and its start timestamp. */
interface KeyState {
  event: number;
  start: number;
  duration: number;
}

/** An RFC 4733 payload on the call's stream: key presses (real, stuck, ended twice, unknown codes) and junk. */
function eventPacket(rng: Random, call: Call, key: KeyState): Buffer {
  const way = rng.below(10);
  if (way < 2 || key.duration === 0) {
    // A new event: sometimes a new one every packet (a storm).
    key.event = rng.chance(0.8) ? rng.below(16) : rng.below(256);
    key.start = rng.chance(0.9) ? call.timestamp : rng.uint32();
    key.duration = 0;
  }
  key.duration = rng.chance(0.8)
    ? Math.min(0xffff, key.duration + 160)
    : rng.pick([0, 0xffff, key.duration - 320, rng.below(65_536)]);
  const end = rng.chance(0.3);
  let payload: Buffer;
  if (rng.chance(0.8)) {
    payload = Buffer.alloc(4);
    payload[0] = key.event;
    payload[1] = (end ? 0x80 : 0) | (rng.chance(0.1) ? 0x40 : 0) | rng.below(64);
    payload.writeUInt16BE(key.duration & 0xffff, 2);
  } else payload = rng.bytes(rng.chance(0.5) ? rng.below(4) : rng.between(5, 64));
  const packet = call.packet(
    rng.chance(0.95) ? TELEPHONE_EVENT : rng.below(128),
    key.duration <= 160,
    key.start >>> 0,
    payload,
  );
  if (end && rng.chance(0.7)) key.duration = 0;
  return rng.chance(0.1) ? mutateBytes(rng, packet) : packet;
}

/** A target that sends datagrams to the victim call's media, from its own socket or a stranger's. */
function mediaTarget(
  name: string,
  rng: Random,
  perSecond: number,
  make: (call: Call) => { bytes: Buffer; rtcp: boolean },
): Target {
  return {
    name,
    async run(context: FuzzContext, stats) {
      const stranger: Socket = createSocket("udp4");
      await new Promise<void>((resolve) => stranger.bind(0, "127.0.0.1", resolve));
      const pacer = new Pacer(perSecond);
      while (context.running()) {
        const call = await context.victim();
        const { bytes, rtcp } = make(call);
        const port = call.remote.port + (rtcp ? 1 : 0);
        const own = rtcp ? call.rtcp : call.rtp;
        const from = rng.chance(0.9) ? own : stranger;
        try {
          from.send(bytes, port, call.remote.address);
        } catch {
          // The call ended and closed its sockets meanwhile.
        }
        stats.inputs++;
        await pacer.next();
      }
      stranger.close();
    },
  };
}

export function rtpTarget(rng: Random, perSecond: number): Target {
  const previous = { sequence: rng.below(65_536), timestamp: rng.uint32() };
  return mediaTarget("rtp", rng, perSecond, (call) => ({
    bytes: rng.chance(0.85)
      ? rtpPacket(rng, call, previous)
      : rng.chance(0.5)
        ? junk(rng)
        : rtcpCompound(rng, call.ssrc),
    rtcp: false,
  }));
}

export function rtcpTarget(rng: Random, perSecond: number): Target {
  return mediaTarget("rtcp", rng, perSecond, (call) => ({
    bytes: rng.chance(0.9) ? rtcpCompound(rng, call.ssrc) : junk(rng),
    rtcp: true,
  }));
}

export function rtpEventTarget(rng: Random, perSecond: number): Target {
  const key: KeyState = { event: 0, start: 0, duration: 0 };
  return mediaTarget("rtp-events", rng, perSecond, (call) => ({
    bytes: eventPacket(rng, call, key),
    rtcp: false,
  }));
}
