/** SRTP and SRTCP against the test vectors of RFC 3711 appendix B and libsrtp's, then round trips. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  protectRtcpWithIndex,
  type SrtpKeyMaterial,
  SrtpReceiver,
  SrtpSender,
  sessionKeys,
} from "../../../../src/telephony/media/rtp/srtp.js";

const hex = (text: string) => Buffer.from(text.replace(/\s+/g, ""), "hex");
const MASTER = hex("E1F97A0D3E018BE0D64FA32C06DE4139 0EC675AD498AFEEBB6960B3AABE6");
const SHA1_80: SrtpKeyMaterial = { suite: "AES_CM_128_HMAC_SHA1_80", inline: MASTER.toString("base64") };
const SHA1_32: SrtpKeyMaterial = { suite: "AES_CM_128_HMAC_SHA1_32", inline: MASTER.toString("base64") };
const RTP_PLAIN = hex("800f1234 decafbad cafebabe abababababababababababababababab");
const SRTP_80 = hex("800f1234 decafbad cafebabe 4e55dc4ce79978d88ca4d215949d2402 b78d6acc99ea179b8dbb");
const RTCP_PLAIN = hex("81c8000b cafebabe abababababababababababababababab");
const SRTCP = hex("81c8000b cafebabe 7128035be487b9bdbef89041f977a5a8 80000001 993e08cd54d6c1230798");

function protect(sender: SrtpSender, packet: Buffer): Buffer {
  const buffer = Buffer.alloc(packet.length + sender.overhead);
  packet.copy(buffer);
  return buffer.subarray(0, sender.protectRtp(buffer, packet.length));
}

/** An RTP packet of 20 bytes of payload with the given sequence number. */
function rtp(sequence: number, ssrc = 0x11223344): Buffer {
  const packet = Buffer.alloc(32, 0x55);
  packet.writeUInt16BE(0x8000, 0);
  packet.writeUInt16BE(sequence, 2);
  packet.writeUInt32BE(sequence * 160, 4);
  packet.writeUInt32BE(ssrc, 8);
  return packet;
}

describe("SRTP (RFC 3711)", () => {
  it("derives the session keys of appendix B.3", () => {
    const { rtp: keys } = sessionKeys(SHA1_80);
    assert.equal(keys.key.toString("hex"), "c61e7a93744f39ee10734afe3ff7a087");
    assert.equal(keys.salt.toString("hex"), "30cbbc08863d8c85d49db34a9ae1");
    assert.equal(keys.auth.toString("hex"), "cebe321f6ff7716b6fd4ab49af256a156d38baa4");
  });

  it("protects RTP as the reference vectors do, with an 80- and a 32-bit tag", () => {
    assert.deepEqual(protect(new SrtpSender(SHA1_80), RTP_PLAIN), SRTP_80);
    assert.deepEqual(protect(new SrtpSender(SHA1_32), RTP_PLAIN), SRTP_80.subarray(0, SRTP_80.length - 6));
  });

  it("opens the reference SRTP packet, and refuses it replayed or altered", () => {
    const receiver = new SrtpReceiver(SHA1_80);
    assert.deepEqual(receiver.unprotectRtp(SRTP_80), RTP_PLAIN);
    assert.equal(receiver.unprotectRtp(SRTP_80), undefined, "a replay");
    const altered = Buffer.from(SRTP_80);
    altered[15] = (altered[15] as number) ^ 1;
    assert.equal(new SrtpReceiver(SHA1_80).unprotectRtp(altered), undefined, "a flipped bit");
    assert.equal(new SrtpReceiver(SHA1_32).unprotectRtp(SRTP_80), undefined, "the wrong tag length");
  });

  it("protects and opens SRTCP as the reference vectors do", () => {
    assert.deepEqual(protectRtcpWithIndex(sessionKeys(SHA1_80).rtcp, RTCP_PLAIN, 1), SRTCP);
    const receiver = new SrtpReceiver(SHA1_80);
    assert.deepEqual(receiver.unprotectRtcp(SRTCP), RTCP_PLAIN);
    assert.equal(receiver.unprotectRtcp(SRTCP), undefined, "a replay");
  });

  it("carries the rollover counter across a sequence wrap, both ways, and takes late packets from before it", () => {
    const sender = new SrtpSender(SHA1_80);
    const receiver = new SrtpReceiver(SHA1_80);
    const sent = [0xfffd, 0xfffe, 0xffff, 0, 1, 2].map((sequence) => protect(sender, rtp(sequence)));
    // 0xffff arrives after 0 and 1: late, from the previous rollover.
    for (const index of [0, 1, 3, 4, 2, 5]) {
      const packet = sent[index] as Buffer;
      assert.deepEqual(receiver.unprotectRtp(packet), rtp(packet.readUInt16BE(2)), `packet ${index}`);
    }
    // A receiver that missed the wrap would use the wrong counter: the tag covers it.
    const fresh = new SrtpReceiver(SHA1_80);
    assert.ok(fresh.unprotectRtp(sent[0] as Buffer));
    assert.ok(fresh.unprotectRtp(sent[3] as Buffer), "0 after 0xfffd: the next rollover");
  });

  it("keeps a 64-packet replay window", () => {
    const sender = new SrtpSender(SHA1_80);
    const receiver = new SrtpReceiver(SHA1_80);
    const packets = Array.from({ length: 100 }, (_, sequence) => protect(sender, rtp(sequence + 1000)));
    assert.ok(receiver.unprotectRtp(packets[99] as Buffer));
    assert.ok(receiver.unprotectRtp(packets[40] as Buffer), "59 behind: inside the window");
    assert.equal(receiver.unprotectRtp(packets[40] as Buffer), undefined, "seen");
    assert.equal(receiver.unprotectRtp(packets[30] as Buffer), undefined, "69 behind: outside the window");
  });

  it("tells packets apart that share a place in the window 64 apart", () => {
    const sender = new SrtpSender(SHA1_80);
    const receiver = new SrtpReceiver(SHA1_80);
    const packets = Array.from({ length: 80 }, (_, sequence) =>
      protect(sender, rtp((sequence + 65500) % 0x10000)),
    );
    assert.ok(receiver.unprotectRtp(packets[10] as Buffer));
    assert.ok(receiver.unprotectRtp(packets[74] as Buffer), "64 later, across the wrap");
    assert.equal(receiver.unprotectRtp(packets[74] as Buffer), undefined, "seen");
    assert.equal(receiver.unprotectRtp(packets[10] as Buffer), undefined, "64 behind: outside the window");
    assert.ok(receiver.unprotectRtp(packets[11] as Buffer), "63 behind, never seen");
    assert.equal(receiver.unprotectRtp(packets[11] as Buffer), undefined, "seen");
    assert.ok(receiver.unprotectRtp(packets[50] as Buffer), "never seen");
  });
});
