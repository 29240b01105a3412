/**
 * SRTP and SRTCP inputs to live SRTP calls in the room (SDES keys, RFC 4568), one call per suite the
 * service knows (AES-CM with HMAC-SHA1 80 and 32 of RFC 4568, their 256-bit keys of RFC 6188, AES-GCM
 * 128 and 256 of RFC 7714), the inputs taking the suites in turn. The fuzzer knows every key: packets
 * correctly encrypted and authenticated around hostile plaintext (the rtp and rtcp targets' packets:
 * lying headers, extensions, padding, CSRC counts), so that what the service decrypts is hostile;
 * tags damaged; payloads damaged after the tag was made; replays; rollover counters and sequence
 * numbers far ahead and behind; truncation; MKI-like bytes between the payload and the tag or after
 * it; plain RTP and junk on the SRTP port; SRTCP with indexes replayed, at the edge (0, 2^31 - 1),
 * unencrypted (E flag clear), with bad tags or cut short. Authentic packets come
 * from the call's own socket; a stranger's socket sends only what must not authenticate, so that a
 * service latching onto it would be a finding. Each call must keep hearing the room under its suite.
 */
import { createCipheriv, createHmac } from "node:crypto";
import { createSocket, type Socket } from "node:dgram";
import { SrtpSender } from "../../src/telephony/media/rtp/srtp.js";
import {
  type PacketProtection,
  protectionWith,
  type SessionKeys,
  sessionKeys,
} from "../../src/telephony/media/rtp/srtp-protection.js";
import { SRTP_SUITES, type SrtpSuite, SUITES } from "../../src/telephony/media/rtp/srtp-suites.js";
import { junk, rtcpCompound, rtpPacket } from "./media-targets.js";
import { mutateBytes } from "./mutate.js";
import type { Random } from "./random.js";
import type { Call, CallSrtp } from "./sip-peer.js";
import { count, type FuzzContext, Pacer, sleep, type Target, type TargetStats } from "./target.js";

const RTP_HEADER_LENGTH = 12;
const RTCP_HEADER_LENGTH = 8;
/** The E flag of the SRTCP index word (RFC 3711 section 3.4). */
const ENCRYPTED_FLAG = 0x80000000;
const GCM_IV_LENGTH = 12;
/** How long an SRTP call may hear nothing authentic from the room before it is a finding. */
const SILENCE_MS = 5_000;

/** What the target keeps for one SRTP call: senders under its key, and packets to replay. */
class Keyed {
  readonly sender: SrtpSender;
  /** The call's packet protection (SRTCP with any index) and its SRTCP session keys. */
  readonly protection: PacketProtection;
  readonly rtcpKeys: SessionKeys;
  readonly sent: Buffer[] = [];
  readonly sentRtcp: Buffer[] = [];
  rtcpIndex = 0;
  readonly previous: { sequence: number; timestamp: number };
  /** When the call last heard the room: how many packets it had received then. */
  heard: { received: number; at: number };

  constructor(
    readonly call: Call,
    readonly srtp: CallSrtp,
    rng: Random,
  ) {
    this.sender = new SrtpSender(srtp.ours);
    const keys = sessionKeys(srtp.ours);
    this.protection = protectionWith(srtp.ours.suite, keys.rtp, keys.rtcp);
    this.rtcpKeys = keys.rtcp;
    this.previous = { sequence: rng.below(65_536), timestamp: rng.uint32() };
    this.heard = { received: call.received, at: performance.now() };
  }

  get suite(): SrtpSuite {
    return this.srtp.ours.suite;
  }

  remember(list: Buffer[], packet: Buffer): void {
    list.push(packet);
    if (list.length > 64) list.shift();
  }
}

/** An RTP packet protected with `sender`; undefined when too short to be RTP. */
function protect(sender: SrtpSender, plain: Buffer): Buffer | undefined {
  if (plain.length < RTP_HEADER_LENGTH) return undefined;
  const out = Buffer.alloc(plain.length + sender.overhead);
  plain.copy(out);
  return out.subarray(0, sender.protectRtp(out, plain.length));
}

/**
 * SRTCP with the index word written as given (E flag and all), authentic. HMAC-SHA1 suites: the
 * payload left plain whatever the E flag says (with E set the service decrypts it into noise).
 * GCM: with E set, sealed as usual; with E clear, the unencrypted form of RFC 7714 section 9.2 (the
 * whole packet and the word as associated data, no plaintext).
 */
function srtcpWithWord(keyed: Keyed, plain: Buffer, word: number): Buffer {
  const tagLength = keyed.protection.rtcpTagLength;
  if (SUITES[keyed.suite].aead) {
    if ((word & ENCRYPTED_FLAG) !== 0) return keyed.protection.sealRtcp(plain, word & 0x7fffffff);
    // The IV of section 9.1: 00 00 || SSRC || 00 00 || index, XOR the session salt.
    const iv = Buffer.alloc(GCM_IV_LENGTH);
    iv.writeUInt32BE(plain.readUInt32BE(4), 2);
    iv.writeUInt32BE(word >>> 0, 8);
    for (let i = 0; i < GCM_IV_LENGTH; i++) iv[i] = (iv[i] as number) ^ (keyed.rtcpKeys.salt[i] as number);
    const wordBytes = Buffer.alloc(4);
    wordBytes.writeUInt32BE(word >>> 0);
    const cipher = createCipheriv(
      keyed.rtcpKeys.key.length === 32 ? "aes-256-gcm" : "aes-128-gcm",
      keyed.rtcpKeys.key,
      iv,
      { authTagLength: tagLength },
    );
    cipher.setAAD(Buffer.concat([plain, wordBytes]));
    cipher.final();
    return Buffer.concat([plain, cipher.getAuthTag(), wordBytes]);
  }
  const out = Buffer.alloc(plain.length + 4 + tagLength);
  plain.copy(out);
  out.writeUInt32BE(word >>> 0, plain.length);
  createHmac("sha1", keyed.rtcpKeys.auth)
    .update(out.subarray(0, plain.length + 4))
    .digest()
    .copy(out, plain.length + 4, 0, tagLength);
  return out;
}

/** One SRTP input: its bytes, whether to the RTCP port, whether it may authenticate, and its kind. */
interface Input {
  bytes: Buffer;
  rtcp: boolean;
  authentic: boolean;
  kind: string;
}

function srtpInput(rng: Random, keyed: Keyed): Input {
  const { call, sender } = keyed;
  const way = rng.below(100);
  if (way < 40) {
    // Hostile plaintext, correctly protected.
    const bytes = protect(sender, rtpPacket(rng, call, keyed.previous));
    if (bytes === undefined) return { bytes: junk(rng), rtcp: false, authentic: false, kind: "junk" };
    keyed.remember(keyed.sent, bytes);
    return { bytes, rtcp: false, authentic: true, kind: "srtp hostile plaintext" };
  }
  if (way < 47) {
    // A rollover counter far from the receiver's: a sender that believes it has wrapped many times.
    const roc = rng.pick([1, 2, 0x7fff, 0xffff, 0xffffffff, rng.uint32()]);
    const jumped = new SrtpSender(keyed.srtp.ours, {
      streams: [[call.ssrc, roc, keyed.previous.sequence]],
      rtcpIndex: 0,
    });
    keyed.previous.sequence =
      (keyed.previous.sequence + rng.pick([1, 0x8000, 0xffff, rng.below(65_536)])) & 0xffff;
    const bytes = protect(jumped, call.packet(0, false, keyed.previous.timestamp, rng.bytes(160)));
    return { bytes: bytes ?? Buffer.alloc(0), rtcp: false, authentic: true, kind: "srtp rollover jump" };
  }
  if (way < 55) {
    // A replay of an authentic packet.
    const replayed = keyed.sent.length === 0 ? undefined : rng.pick(keyed.sent);
    if (replayed !== undefined) return { bytes: replayed, rtcp: false, authentic: true, kind: "srtp replay" };
  }
  const valid = protect(sender, call.packet(0, false, keyed.previous.timestamp, rng.bytes(160))) as Buffer;
  if (way < 65) {
    // Damaged after protection: the tag, or what the tag covers.
    const bytes = Buffer.from(valid);
    const at = rng.chance(0.5) ? bytes.length - 1 - rng.below(sender.overhead) : rng.below(bytes.length);
    bytes[at] = (bytes[at] as number) ^ (1 << rng.below(8));
    return { bytes, rtcp: false, authentic: false, kind: "srtp bad tag" };
  }
  if (way < 72)
    return {
      bytes: valid.subarray(0, rng.below(valid.length)),
      rtcp: false,
      authentic: false,
      kind: "srtp truncated",
    };
  if (way < 78) {
    // MKI-like bytes (none was negotiated) between the payload and the tag, or after the tag.
    const mki = rng.bytes(rng.pick([1, 2, 4, 8, rng.length(64)]));
    const tagAt = valid.length - sender.overhead;
    const bytes = rng.chance(0.5)
      ? Buffer.concat([valid.subarray(0, tagAt), mki, valid.subarray(tagAt)])
      : Buffer.concat([valid, mki]);
    return { bytes, rtcp: false, authentic: false, kind: "srtp mki" };
  }
  if (way < 84)
    return {
      bytes: rng.chance(0.5) ? rtpPacket(rng, call, keyed.previous) : junk(rng),
      rtcp: false,
      authentic: false,
      kind: "plain rtp or junk",
    };
  if (way < 88)
    return { bytes: mutateBytes(rng, valid), rtcp: false, authentic: false, kind: "srtp damaged" };
  return srtcpInput(rng, keyed);
}

function srtcpInput(rng: Random, keyed: Keyed): Input {
  const plain = rtcpCompound(rng, keyed.call.ssrc);
  if (plain.length < RTCP_HEADER_LENGTH)
    return { bytes: plain, rtcp: true, authentic: false, kind: "srtcp short" };
  const way = rng.below(100);
  if (way < 40) {
    const bytes = keyed.protection.sealRtcp(plain, keyed.rtcpIndex);
    keyed.rtcpIndex = (keyed.rtcpIndex + 1) & 0x7fffffff;
    keyed.remember(keyed.sentRtcp, bytes);
    return { bytes, rtcp: true, authentic: true, kind: "srtcp hostile plaintext" };
  }
  if (way < 55) {
    // Indexes at the edges, far ahead, behind; or unencrypted (E clear) with any index.
    const index =
      rng.pick([0, 0x7fffffff, keyed.rtcpIndex + 1_000_000, keyed.rtcpIndex - 100, rng.uint32()]) >>> 0;
    const bytes = rng.chance(0.5)
      ? keyed.protection.sealRtcp(plain, index & 0x7fffffff)
      : srtcpWithWord(keyed, plain, rng.chance(0.5) ? index & 0x7fffffff : index);
    return { bytes, rtcp: true, authentic: true, kind: "srtcp odd index" };
  }
  if (way < 65) {
    const replayed = keyed.sentRtcp.length === 0 ? undefined : rng.pick(keyed.sentRtcp);
    if (replayed !== undefined) return { bytes: replayed, rtcp: true, authentic: true, kind: "srtcp replay" };
  }
  const valid = keyed.protection.sealRtcp(plain, keyed.rtcpIndex);
  if (way < 80) {
    const bytes = Buffer.from(valid);
    const at = rng.below(bytes.length);
    bytes[at] = (bytes[at] as number) ^ (1 << rng.below(8));
    return { bytes, rtcp: true, authentic: false, kind: "srtcp bad tag" };
  }
  if (way < 90)
    return {
      bytes: valid.subarray(0, rng.below(valid.length)),
      rtcp: true,
      authentic: false,
      kind: "srtcp truncated",
    };
  return {
    bytes: rng.chance(0.5) ? plain : junk(rng),
    rtcp: true,
    authentic: false,
    kind: "plain rtcp or junk",
  };
}

export function srtpTarget(rng: Random, perSecond: number): Target {
  return {
    name: "srtp",
    async run(context: FuzzContext, stats: TargetStats) {
      const stranger: Socket = createSocket("udp4");
      await new Promise<void>((resolve) => stranger.bind(0, "127.0.0.1", resolve));
      const keyedBySuite = new Map<SrtpSuite, Keyed>();
      const pacer = new Pacer(perSecond);
      for (let turn = 0; context.running(); turn++) {
        // The suites in turn, one input each.
        const suite = SRTP_SUITES[turn % SRTP_SUITES.length] as SrtpSuite;
        const call = await context.srtpVictim(suite);
        if (call.srtp?.ours.suite !== suite)
          throw new Error(`the SRTP victim call under ${suite} has no such keys`);
        let keyed = keyedBySuite.get(suite);
        if (keyed?.call !== call) {
          keyed = new Keyed(call, call.srtp, rng);
          keyedBySuite.set(suite, keyed);
        }
        // The room's audio, protected under the service's key, must keep coming.
        if (call.received > keyed.heard.received)
          keyed.heard = { received: call.received, at: performance.now() };
        else if (performance.now() - keyed.heard.at > SILENCE_MS && !call.ended) {
          context.found(
            `the SRTP call under ${suite} heard nothing authentic from the room for ${SILENCE_MS / 1000} s`,
          );
          keyed.heard.at = performance.now();
        }
        const input = srtpInput(rng, keyed);
        const own = input.rtcp ? call.rtcp : call.rtp;
        const from = !input.authentic && rng.chance(0.2) ? stranger : own;
        try {
          from.send(input.bytes, call.remote.port + (input.rtcp ? 1 : 0), call.remote.address);
        } catch {
          // The call ended and closed its sockets meanwhile.
        }
        stats.inputs++;
        count(stats, from === stranger ? `${input.kind} (stranger)` : input.kind);
        await pacer.next();
      }
      await sleep(200);
      stranger.close();
    },
  };
}
