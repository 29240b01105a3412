/**
 * SRTP and SRTCP against the test vectors of RFC 3711 appendix B, RFC 6188 section 7, RFC 7714
 * sections 16 and 17 and libsrtp's, then round trips in every suite.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { MAX_SRTP_SOURCES, SrtpReceiver, SrtpSender } from "../../../../src/telephony/media/rtp/srtp.js";
import { protectionWith, sessionKeys } from "../../../../src/telephony/media/rtp/srtp-protection.js";
import {
  newSrtpKey,
  SRTP_SUITES,
  type SrtpKeyMaterial,
  type SrtpSuite,
} from "../../../../src/telephony/media/rtp/srtp-suites.js";

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

/** Whether the receiver opened the datagram (rather than refusing it). */
function opened(receiver: SrtpReceiver, datagram: Buffer): boolean {
  return Buffer.isBuffer(receiver.unprotectRtp(datagram));
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
    assert.equal(receiver.unprotectRtp(SRTP_80), "replay");
    const altered = Buffer.from(SRTP_80);
    altered[15] = (altered[15] as number) ^ 1;
    assert.equal(new SrtpReceiver(SHA1_80).unprotectRtp(altered), "authentication", "a flipped bit");
    assert.equal(new SrtpReceiver(SHA1_32).unprotectRtp(SRTP_80), "authentication", "the wrong tag length");
    assert.equal(new SrtpReceiver(SHA1_80).unprotectRtp(SRTP_80.subarray(0, 21)), "malformed", "too short");
  });

  it("protects and opens SRTCP as the reference vectors do", () => {
    const { rtp, rtcp } = sessionKeys(SHA1_80);
    assert.deepEqual(protectionWith(SHA1_80.suite, rtp, rtcp).sealRtcp(RTCP_PLAIN, 1), SRTCP);
    const receiver = new SrtpReceiver(SHA1_80);
    assert.deepEqual(receiver.unprotectRtcp(SRTCP), RTCP_PLAIN);
    assert.equal(receiver.unprotectRtcp(SRTCP), "replay");
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
    assert.ok(opened(fresh, sent[0] as Buffer));
    assert.ok(opened(fresh, sent[3] as Buffer), "0 after 0xfffd: the next rollover");
  });

  it("keeps a 64-packet replay window", () => {
    const sender = new SrtpSender(SHA1_80);
    const receiver = new SrtpReceiver(SHA1_80);
    const packets = Array.from({ length: 100 }, (_, sequence) => protect(sender, rtp(sequence + 1000)));
    assert.ok(opened(receiver, packets[99] as Buffer));
    assert.ok(opened(receiver, packets[40] as Buffer), "59 behind: inside the window");
    assert.equal(receiver.unprotectRtp(packets[40] as Buffer), "replay", "seen");
    assert.equal(receiver.unprotectRtp(packets[30] as Buffer), "replay", "69 behind: outside the window");
  });

  it("tells packets apart that share a place in the window 64 apart", () => {
    const sender = new SrtpSender(SHA1_80);
    const receiver = new SrtpReceiver(SHA1_80);
    const packets = Array.from({ length: 80 }, (_, sequence) =>
      protect(sender, rtp((sequence + 65500) % 0x10000)),
    );
    assert.ok(opened(receiver, packets[10] as Buffer));
    assert.ok(opened(receiver, packets[74] as Buffer), "64 later, across the wrap");
    assert.equal(receiver.unprotectRtp(packets[74] as Buffer), "replay", "seen");
    assert.equal(receiver.unprotectRtp(packets[10] as Buffer), "replay", "64 behind: outside the window");
    assert.ok(opened(receiver, packets[11] as Buffer), "63 behind, never seen");
    assert.equal(receiver.unprotectRtp(packets[11] as Buffer), "replay", "seen");
    assert.ok(opened(receiver, packets[50] as Buffer), "never seen");
  });

  it("keeps state for at most 16 RTP sources, however many SSRCs a peer authenticates", () => {
    const sender = new SrtpSender(SHA1_80);
    const receiver = new SrtpReceiver(SHA1_80);
    for (let ssrc = 1; ssrc <= 1000; ssrc++) assert.ok(opened(receiver, protect(sender, rtp(7, ssrc))));
    assert.equal(receiver.state.streams.length, MAX_SRTP_SOURCES);
    // The sources heard last are the ones kept, with their replay windows.
    assert.deepEqual(
      receiver.state.streams.map(([ssrc]) => ssrc),
      Array.from({ length: MAX_SRTP_SOURCES }, (_, i) => 1000 - MAX_SRTP_SOURCES + 1 + i),
    );
    const latest = protect(sender, rtp(8, 1000));
    assert.ok(opened(receiver, latest));
    assert.equal(receiver.unprotectRtp(latest), "replay", "a replay on a kept source");
  });

  it("keeps SRTCP replay state for at most 16 sources, forgetting the longest known first", () => {
    const receiver = new SrtpReceiver(SHA1_80);
    // Each source's first SRTCP packet (index 0, from a sender of its own under the same key).
    const from = (ssrc: number) => {
      const packet = Buffer.from(RTCP_PLAIN);
      packet.writeUInt32BE(ssrc, 4);
      return new SrtpSender(SHA1_80).protectRtcp(packet);
    };
    const first = from(1);
    assert.ok(Buffer.isBuffer(receiver.unprotectRtcp(first)));
    assert.equal(receiver.unprotectRtcp(first), "replay", "a replay while its source is kept");
    for (let ssrc = 2; ssrc <= MAX_SRTP_SOURCES; ssrc++)
      assert.ok(Buffer.isBuffer(receiver.unprotectRtcp(from(ssrc))));
    assert.equal(receiver.unprotectRtcp(first), "replay", "16 sources: the first still kept");
    assert.ok(Buffer.isBuffer(receiver.unprotectRtcp(from(MAX_SRTP_SOURCES + 1))));
    assert.ok(Buffer.isBuffer(receiver.unprotectRtcp(first)), "the 17th source made the first one forgotten");
  });
});

describe("AES-256-CM (RFC 6188)", () => {
  const MASTER_256 = hex(
    "f0f04914b513f2763a1b1fa130f10e2998f6f6e43e4309d1e622a0e332b9f1b6 3b04803de51ee7c96423ab5b78d2",
  );
  const key = (suite: SrtpSuite): SrtpKeyMaterial => ({ suite, inline: MASTER_256.toString("base64") });

  it("derives the session keys of section 7.2 with the AES-256 PRF", () => {
    const { rtp: keys } = sessionKeys(key("AES_256_CM_HMAC_SHA1_80"));
    assert.equal(
      keys.key.toString("hex"),
      "5ba1064e30ec51613cad926c5a28ef731ec7fb397f70a960653caf06554cd8c4",
    );
    assert.equal(keys.salt.toString("hex"), "fa31791685ca444a9e07c6c64e93");
    assert.equal(keys.auth.toString("hex"), "fd9c32d39ed5fbb5a9dc96b30818454d1313dc05");
  });

  it("encrypts with the AES-256-CM keystream of section 7.1", () => {
    // Section 7.1: session key and salt given, SSRC 0, index 0: a zero payload becomes the keystream.
    const rtpKeys = {
      key: hex("57f82fe3613fd170a85ec93c40b1f0922ec4cb0dc025b58272147cc438944a98"),
      salt: hex("f0f1f2f3f4f5f6f7f8f9fafbfcfd"),
      auth: Buffer.alloc(20),
    };
    const protection = protectionWith("AES_256_CM_HMAC_SHA1_80", rtpKeys, rtpKeys);
    const buffer = Buffer.alloc(12 + 48 + 10);
    buffer[0] = 0x80;
    protection.sealRtp(buffer, 12, 60, 0, 0, 0);
    assert.equal(
      buffer.subarray(12, 60).toString("hex"),
      "92bdd28a93c3f52511c677d08b5515a49da71b2378a854f67050756ded165bac" + "63c4868b7096d88421b563b8c94c9a31",
    );
  });

  it("protects and opens libsrtp's AES_256_CM_HMAC_SHA1_80 packet, and the _32 one", () => {
    const protectedPacket = hex(
      "800f1234 decafbad cafebabe f1d9de17ff251ff1aa007774b0b4b40d a08d9d9a5b3a55d8873b",
    );
    assert.deepEqual(protect(new SrtpSender(key("AES_256_CM_HMAC_SHA1_80")), RTP_PLAIN), protectedPacket);
    const short = protect(new SrtpSender(key("AES_256_CM_HMAC_SHA1_32")), RTP_PLAIN);
    assert.deepEqual(short, protectedPacket.subarray(0, protectedPacket.length - 6));
    assert.deepEqual(
      new SrtpReceiver(key("AES_256_CM_HMAC_SHA1_80")).unprotectRtp(protectedPacket),
      RTP_PLAIN,
    );
    assert.deepEqual(new SrtpReceiver(key("AES_256_CM_HMAC_SHA1_32")).unprotectRtp(short), RTP_PLAIN);
    const wrongSize = { suite: "AES_CM_128_HMAC_SHA1_80" as const, inline: MASTER.toString("base64") };
    assert.equal(new SrtpReceiver(wrongSize).unprotectRtp(protectedPacket), "authentication");
  });
});

describe("AEAD AES-GCM (RFC 7714)", () => {
  // Sections 16 and 17 give session keys: the same key and salt for RTP and RTCP.
  const KEY_128 = hex("000102030405060708090a0b0c0d0e0f");
  const KEY_256 = hex("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f");
  const SALT = hex("517569642070726f2071756f");
  const gcm = (suite: SrtpSuite, key: Buffer) => {
    const keys = { key, salt: SALT, auth: Buffer.alloc(0) };
    return protectionWith(suite, keys, keys);
  };
  const RTP = hex(
    "8040f17b 8041f8d3 5501a0b2 47616c6c 69612065 7374206f 6d6e6973 20646976 69736120 696e2070 61727465 73207472 6573",
  );
  const RTCP = hex(
    "81c8000d 4d617273 4e545031 4e545032 52545020 0000042a 0000e930 4c756e61 deadbeef deadbeef deadbeef deadbeef deadbeef",
  );
  const cases = [
    {
      suite: "AEAD_AES_128_GCM" as const,
      key: KEY_128,
      srtp: "8040f17b 8041f8d3 5501a0b2 f24de3a3 fb34de6c acba861c 9d7e4bca be633bd5 0d294e6f 42a5f47a 51c7d19b 36de3adf 8833899d 7f27beb1 6a9152cf 765ee439 0cce",
      srtcp:
        "81c8000d 4d617273 63e94885 dcdab67c a727d766 2f6b7e99 7ff5c0f7 6c06f32d c676a5f1 730d6fda 4ce09b46 86303ded 0bb9275b c84aa458 96cf4d2f c5abf872 45d9eade 800005d4",
      unencryptedSrtcp:
        "81c8000d 4d617273 4e545031 4e545032 52545020 0000042a 0000e930 4c756e61 deadbeef deadbeef deadbeef deadbeef deadbeef 841dd968 3dd78ec9 2ae58790 125f62b3 000005d4",
    },
    {
      suite: "AEAD_AES_256_GCM" as const,
      key: KEY_256,
      srtp: "8040f17b 8041f8d3 5501a0b2 32b1de78 a822fe12 ef9f78fa 332e33aa b1801238 9a58e2f3 b50b2a02 76ffae0f 1ba63799 b87b7aa3 db36dfff d6b0f9bb 7878d7a7 6c13",
      srtcp:
        "81c8000d 4d617273 d50ae4d1 f5ce5d30 4ba297e4 7d470c28 2c3ece5d bffe0a50 a2eaa5c1 110555be 8415f658 c61de047 6f1b6fad 1d1eb30c 4446839f 57ff6f6c b26ac3be 800005d4",
      unencryptedSrtcp:
        "81c8000d 4d617273 4e545031 4e545032 52545020 0000042a 0000e930 4c756e61 deadbeef deadbeef deadbeef deadbeef deadbeef 91db4afb feee5a97 8fab4393 ed2615fe 000005d4",
    },
  ];
  for (const { suite, key, srtp, srtcp, unencryptedSrtcp } of cases) {
    it(`${suite}: seals and opens the SRTP packet of the RFC (IV of section 8.1, header as AAD)`, () => {
      const protection = gcm(suite, key);
      const buffer = Buffer.alloc(RTP.length + 16);
      RTP.copy(buffer);
      assert.equal(protection.sealRtp(buffer, 12, RTP.length, 0x5501a0b2, 0, 0xf17b), RTP.length + 16);
      assert.deepEqual(buffer, hex(srtp));
      assert.deepEqual(protection.openRtp(hex(srtp), 12, 0x5501a0b2, 0, 0xf17b), RTP);
      const altered = hex(srtp);
      altered[1] = (altered[1] as number) ^ 0x80;
      assert.equal(
        protection.openRtp(altered, 12, 0x5501a0b2, 0, 0xf17b),
        undefined,
        "the header is authenticated",
      );
      assert.equal(
        protection.openRtp(hex(srtp), 12, 0x5501a0b2, 1, 0xf17b),
        undefined,
        "another rollover counter",
      );
    });

    it(`${suite}: seals and opens the SRTCP packets of the RFC, encrypted and not (section 9)`, () => {
      const protection = gcm(suite, key);
      assert.deepEqual(protection.sealRtcp(RTCP, 0x5d4), hex(srtcp));
      assert.deepEqual(protection.openRtcp(hex(srtcp)), RTCP);
      assert.deepEqual(protection.openRtcp(hex(unencryptedSrtcp)), RTCP);
      const altered = hex(srtcp);
      altered[altered.length - 1] = (altered[altered.length - 1] as number) ^ 1;
      assert.equal(protection.openRtcp(altered), undefined, "the index is authenticated");
    });
  }

  it("derives GCM session keys from a 12-byte master salt padded to 14 (section 11)", () => {
    const master = Buffer.concat([KEY_128, hex("a0a1a2a3a4a5a6a7a8a9aaab")]);
    const keys = sessionKeys({ suite: "AEAD_AES_128_GCM", inline: master.toString("base64") });
    assert.equal(keys.rtp.key.toString("hex"), "077c6143cb221bc355ff23d5f984a16e");
    assert.equal(keys.rtp.salt.toString("hex"), "9af3e95364ebac9c99c5a7c4");
    assert.equal(keys.rtcp.key.toString("hex"), "615dcd9042600666f6fd4d9e4fe4519f");
    assert.equal(keys.rtcp.salt.toString("hex"), "fcca937b9112a500dac72269");
  });
});

describe("every suite", () => {
  for (const suite of SRTP_SUITES) {
    it(`${suite}: a stream and its reports go through, and a stranger's key, replays and truncation are refused`, () => {
      const material = newSrtpKey(suite);
      const sender = new SrtpSender(material);
      const receiver = new SrtpReceiver(material);
      const sent = [0xfffe, 0xffff, 0, 1].map((sequence) => protect(sender, rtp(sequence)));
      for (const packet of sent) assert.deepEqual(receiver.unprotectRtp(packet), rtp(packet.readUInt16BE(2)));
      assert.equal(receiver.unprotectRtp(sent[3] as Buffer), "replay");
      const stranger = protect(new SrtpSender(newSrtpKey(suite)), rtp(2));
      assert.equal(receiver.unprotectRtp(stranger), "authentication");
      assert.equal(receiver.unprotectRtp((sent[0] as Buffer).subarray(0, 12)), "malformed");
      const report = sender.protectRtcp(RTCP_PLAIN);
      assert.deepEqual(receiver.unprotectRtcp(report), RTCP_PLAIN);
      assert.equal(receiver.unprotectRtcp(report), "replay");
      // A stranger's second report: an index not seen yet, so only its key gives it away.
      const strangerSender = new SrtpSender(newSrtpKey(suite));
      strangerSender.protectRtcp(RTCP_PLAIN);
      assert.equal(receiver.unprotectRtcp(strangerSender.protectRtcp(RTCP_PLAIN)), "authentication");
      assert.equal(receiver.unprotectRtcp(report.subarray(0, 10)), "malformed");
    });
  }
});
