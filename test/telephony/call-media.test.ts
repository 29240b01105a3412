/**
 * What a call tells its media of a negotiation (call.ts mediaConfiguration): every format agreed, the
 * telephone-events at every rate, and the peer's Opus fmtp, from real offers and answers made by the
 * SDP module.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { mediaConfiguration } from "../../src/telephony/call.js";
import {
  acceptAnswer,
  answerOffer,
  createOffer,
  type LocalMedia,
  type NegotiatedMedia,
  WIDEBAND_AUDIO_CODECS,
} from "../../src/telephony/sdp/session-description.js";

const sdp = (...lines: string[]) => `${lines.join("\r\n")}\r\n`;

const ours: LocalMedia = {
  address: "127.0.0.1",
  port: 30000,
  sessionId: "4711",
  sessionVersion: 1,
  codecs: WIDEBAND_AUDIO_CODECS,
};

function answered(offer: string, local: LocalMedia = ours): { answer: string; media: NegotiatedMedia } {
  const result = answerOffer(offer, local);
  assert.ok(result.ok, result.ok ? "" : `answerOffer failed: ${result.status} ${result.reason}`);
  return result;
}

function accepted(offer: string, answer: string): NegotiatedMedia {
  const result = acceptAnswer(offer, answer);
  assert.ok(result.ok, result.ok ? "" : `acceptAnswer failed: ${result.reason}`);
  return result.media;
}

/** baresip 1.0.0's offer with audio_codecs=opus/48000/2, as it sent it here. */
const baresipOpusOffer = sdp(
  "v=0",
  "o=- 1 2 IN IP4 127.0.0.1",
  "s=-",
  "c=IN IP4 127.0.0.1",
  "t=0 0",
  "m=audio 35104 RTP/AVP 96 101",
  "a=rtpmap:96 opus/48000/2",
  "a=fmtp:96 stereo=1;sprop-stereo=1",
  "a=rtpmap:101 telephone-event/8000",
  "a=fmtp:101 0-15",
  "a=sendrecv",
);

describe("a call's media configuration, from what was negotiated", () => {
  it("answering baresip's Opus offer: its telephone-event/8000 taken for its keys alone, none to send ours on (RFC 4733 §2.1)", () => {
    const { answer, media } = answered(baresipOpusOffer);
    assert.deepEqual(mediaConfiguration(media), {
      codec: "opus",
      payloadType: 96,
      receiveFormats: [{ codec: "opus", payloadType: 96 }],
      telephoneEventPayloadType: undefined,
      receiveTelephoneEventPayloadTypes: [101],
      // stereo=1 asks for stereo, which a mono encoder may ignore (RFC 7587 §6.1); nothing else said.
      opus: { maxAverageBitrate: undefined, useInbandFec: false, maxPlaybackRate: 48000 },
      remoteAddress: "127.0.0.1",
      remotePort: 35104,
      direction: "sendrecv",
      srtp: undefined,
    });
    assert.match(answer, /^m=audio 30000 RTP\/AVP 96 101\r$/m);
    assert.match(answer, /^a=rtpmap:101 telephone-event\/8000\r$/m);
  });

  it("answering an offer of every codec: Opus first, with the peer's fmtp and its telephone-event at 48 kHz", () => {
    const { media } = answered(
      sdp(
        "v=0",
        "o=- 1 1 IN IP4 192.0.2.10",
        "s=-",
        "c=IN IP4 192.0.2.10",
        "t=0 0",
        "m=audio 40000 RTP/AVP 0 9 107 101 106",
        "a=rtpmap:107 opus/48000/2",
        "a=fmtp:107 useinbandfec=1;maxaveragebitrate=24000;maxplaybackrate=16000",
        "a=rtpmap:101 telephone-event/8000",
        "a=rtpmap:106 telephone-event/48000",
        "a=sendonly",
      ),
    );
    assert.deepEqual(mediaConfiguration(media), {
      codec: "opus",
      payloadType: 107,
      receiveFormats: [{ codec: "opus", payloadType: 107 }],
      telephoneEventPayloadType: 106,
      receiveTelephoneEventPayloadTypes: [106],
      opus: { maxAverageBitrate: 24000, useInbandFec: true, maxPlaybackRate: 16000 },
      remoteAddress: "192.0.2.10",
      remotePort: 40000,
      direction: "recvonly",
      srtp: undefined,
    });
  });

  it("a trunk's answer of G.722 and PCMU to our offer of both: G.722 sent, both received, no Opus settings", () => {
    const offer = createOffer({ ...ours, codecs: ["G722", "PCMU"] });
    const media = accepted(
      offer,
      sdp(
        "v=0",
        "o=carrier 1 1 IN IP4 203.0.113.5",
        "s=-",
        "c=IN IP4 203.0.113.5",
        "t=0 0",
        "m=audio 6000 RTP/AVP 9 0 101",
        "a=rtpmap:101 telephone-event/8000",
      ),
    );
    assert.deepEqual(mediaConfiguration(media), {
      codec: "G722",
      payloadType: 9,
      receiveFormats: [
        { codec: "G722", payloadType: 9 },
        { codec: "PCMU", payloadType: 0 },
      ],
      telephoneEventPayloadType: 101,
      receiveTelephoneEventPayloadTypes: [101],
      remoteAddress: "203.0.113.5",
      remotePort: 6000,
      direction: "sendrecv",
      srtp: undefined,
    });
  });

  it("an answer of Opus and PCMU with telephone-events at both rates: keys sent at 48 kHz, taken at either", () => {
    const offer = createOffer(ours);
    const media = accepted(
      offer,
      sdp(
        "v=0",
        "o=peer 1 1 IN IP4 203.0.113.9",
        "s=-",
        "c=IN IP4 203.0.113.9",
        "t=0 0",
        "m=audio 7000 RTP/AVP 111 0 110 101",
        "a=rtpmap:111 opus/48000/2",
        "a=fmtp:111 useinbandfec=1",
        "a=rtpmap:110 telephone-event/48000",
        "a=rtpmap:101 telephone-event/8000",
      ),
    );
    const configuration = mediaConfiguration(media);
    assert.equal(configuration.codec, "opus");
    assert.deepEqual(configuration.receiveFormats, [
      { codec: "opus", payloadType: 111 },
      { codec: "PCMU", payloadType: 0 },
    ]);
    assert.equal(configuration.telephoneEventPayloadType, 110);
    assert.deepEqual(configuration.receiveTelephoneEventPayloadTypes, [110, 101]);
    assert.deepEqual(configuration.opus, {
      maxAverageBitrate: undefined,
      useInbandFec: true,
      maxPlaybackRate: 48000,
    });
  });

  it("carries the SRTP keys agreed: ours to send with, theirs to receive with", () => {
    const local: LocalMedia = {
      ...ours,
      srtp: {
        policy: "optional",
        keys: [{ suite: "AES_CM_128_HMAC_SHA1_80", inline: "WnD7c1ksDGs+dIefCEo8omPg4uO8DYIinNGL5yxQ" }],
      },
    };
    const { media } = answered(
      sdp(
        "v=0",
        "o=- 1 1 IN IP4 192.0.2.10",
        "s=-",
        "c=IN IP4 192.0.2.10",
        "t=0 0",
        "m=audio 40000 RTP/SAVP 9",
        "a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:d0RmdmcmVCspeEc3QGZiNWpVLFJhQX1cfHAwJSoj",
      ),
      local,
    );
    assert.deepEqual(mediaConfiguration(media).srtp, {
      send: { suite: "AES_CM_128_HMAC_SHA1_80", inline: "WnD7c1ksDGs+dIefCEo8omPg4uO8DYIinNGL5yxQ" },
      receive: { suite: "AES_CM_128_HMAC_SHA1_80", inline: "d0RmdmcmVCspeEc3QGZiNWpVLFJhQX1cfHAwJSoj" },
    });
    assert.equal(mediaConfiguration(media).codec, "G722");
  });
});
