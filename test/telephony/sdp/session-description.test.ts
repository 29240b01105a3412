import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  type AcceptResult,
  type AnswerResult,
  AUDIO_CODECS,
  acceptAnswer,
  answerOffer,
  createOffer,
  holdMedia,
  type LocalMedia,
  type NegotiatedMedia,
  type OpusParameters,
  resumeMedia,
  WIDEBAND_AUDIO_CODECS,
} from "../../../src/telephony/sdp/session-description.js";

/** SDP text from lines, CRLF-terminated as on the wire. */
const sdp = (...lines: string[]) => `${lines.join("\r\n")}\r\n`;

const bridge: LocalMedia = { address: "198.51.100.7", port: 30000, sessionId: "4711", sessionVersion: 1 };

function answered(result: AnswerResult): { answer: string; media: NegotiatedMedia } {
  assert.ok(result.ok, result.ok ? "" : `answerOffer failed: ${result.status} ${result.reason}`);
  return result;
}

function accepted(result: AcceptResult): NegotiatedMedia {
  assert.ok(result.ok, result.ok ? "" : `acceptAnswer failed: ${result.reason}`);
  return result.media;
}

/** The failure status of an answer, "ok" when it succeeded. */
function statusOf(result: AnswerResult): number | "ok" {
  return result.ok ? "ok" : result.status;
}

/** The m= lines of an SDP text. */
const mLines = (text: string) => text.split("\r\n").filter((line) => line.startsWith("m="));

const baresipOffer = sdp(
  "v=0",
  "o=- 1380035429 2076596046 IN IP4 192.168.1.50",
  "s=-",
  "c=IN IP4 192.168.1.50",
  "t=0 0",
  "m=audio 10000 RTP/AVP 0 8 101",
  "b=AS:80",
  "a=rtpmap:0 PCMU/8000",
  "a=rtpmap:8 PCMA/8000",
  "a=rtpmap:101 telephone-event/8000",
  "a=fmtp:101 0-15",
  "a=ptime:20",
  "a=sendrecv",
  "a=label:1",
  "a=rtcp-rsize",
  "a=ssrc:3297606620 cname:sip:alice@192.168.1.50",
);

const asteriskOffer = (direction: string) =>
  sdp(
    "v=0",
    "o=- 1795290548 1795290550 IN IP4 203.0.113.5",
    "s=Asterisk",
    "c=IN IP4 203.0.113.5",
    "t=0 0",
    "m=audio 17372 RTP/AVP 0 8 3 111 101",
    "a=rtpmap:0 PCMU/8000",
    "a=rtpmap:8 PCMA/8000",
    "a=rtpmap:3 GSM/8000",
    "a=rtpmap:111 G726-32/8000",
    "a=rtpmap:101 telephone-event/8000",
    "a=fmtp:101 0-16",
    "a=ptime:20",
    "a=maxptime:150",
    `a=${direction}`,
  );

describe("createOffer", () => {
  it("writes the whole offer with CRLF line endings", () => {
    assert.equal(
      createOffer(bridge),
      sdp(
        "v=0",
        "o=- 4711 1 IN IP4 198.51.100.7",
        "s=-",
        "c=IN IP4 198.51.100.7",
        "t=0 0",
        "m=audio 30000 RTP/AVP 0 8 101",
        "a=rtpmap:0 PCMU/8000",
        "a=rtpmap:8 PCMA/8000",
        "a=rtpmap:101 telephone-event/8000",
        "a=fmtp:101 0-16",
        "a=ptime:20",
        "a=sendrecv",
      ),
    );
  });

  it("uses IN IP6 for an IPv6 address and lists the codecs in our order", () => {
    const offer = createOffer({
      address: "2001:db8::7",
      port: 30002,
      codecs: ["PCMA"],
      direction: "sendonly",
      sessionId: "9",
      sessionVersion: 3,
    });
    assert.match(offer, /^o=- 9 3 IN IP6 2001:db8::7\r$/m);
    assert.match(offer, /^c=IN IP6 2001:db8::7\r$/m);
    assert.deepEqual(mLines(offer), ["m=audio 30002 RTP/AVP 8 101"]);
    assert.doesNotMatch(offer, /PCMU/);
    assert.match(offer, /^a=sendonly\r$/m);
  });

  it("refuses an empty codec list", () => {
    assert.throws(() => createOffer({ ...bridge, codecs: [] }), RangeError);
  });
});

describe("answerOffer (RFC 3264 §6)", () => {
  it("answers baresip's PCMU/PCMA offer with PCMU and its telephone-event", () => {
    const { answer, media } = answered(answerOffer(baresipOffer, bridge));
    assert.deepEqual(media, {
      codec: "PCMU",
      payloadType: 0,
      clockRate: 8000,
      receiveFormats: [{ codec: "PCMU", payloadType: 0, clockRate: 8000 }],
      telephoneEventPayloadType: 101,
      telephoneEvents: [{ payloadType: 101, clockRate: 8000 }],
      remoteAddress: "192.168.1.50",
      remotePort: 10000,
      direction: "sendrecv",
      ptime: 20,
    });
    assert.equal(
      answer,
      sdp(
        "v=0",
        "o=- 4711 1 IN IP4 198.51.100.7",
        "s=-",
        "c=IN IP4 198.51.100.7",
        "t=0 0",
        "m=audio 30000 RTP/AVP 0 101",
        "a=rtpmap:0 PCMU/8000",
        "a=rtpmap:101 telephone-event/8000",
        "a=fmtp:101 0-16",
        "a=ptime:20",
        "a=sendrecv",
      ),
    );
  });

  it("chooses by our preference, not the offerer's order", () => {
    const { answer, media } = answered(answerOffer(baresipOffer, { ...bridge, codecs: ["PCMA", "PCMU"] }));
    assert.equal(media.codec, "PCMA");
    assert.equal(media.payloadType, 8);
    assert.deepEqual(mLines(answer), ["m=audio 30000 RTP/AVP 8 101"]);
  });

  it("takes PCMA from a PCMA-only SIPp offer, with the offered ptime", () => {
    const sippOffer = sdp(
      "v=0",
      "o=user1 53655765 2353687637 IN IP4 127.0.0.1",
      "s=-",
      "c=IN IP4 127.0.0.1",
      "t=0 0",
      "m=audio 6000 RTP/AVP 8 101",
      "a=rtpmap:8 PCMA/8000",
      "a=rtpmap:101 telephone-event/8000",
      "a=fmtp:101 0-11,16",
      "a=ptime:30",
    );
    const { answer, media } = answered(answerOffer(sippOffer, bridge));
    assert.equal(media.codec, "PCMA");
    assert.equal(media.payloadType, 8);
    assert.equal(media.remoteAddress, "127.0.0.1");
    assert.equal(media.remotePort, 6000);
    assert.equal(media.ptime, 30);
    assert.equal(media.direction, "sendrecv", "no direction attribute means sendrecv");
    assert.match(answer, /^a=rtpmap:8 PCMA\/8000\r$/m);
    assert.match(answer, /^a=ptime:20\r$/m);
  });

  it("takes PCMU from SIPp's minimal offer without telephone-event, and offers none back", () => {
    const sippOffer = sdp(
      "v=0",
      "o=user1 53655765 2353687637 IN IP4 127.0.0.1",
      "s=-",
      "c=IN IP4 127.0.0.1",
      "t=0 0",
      "m=audio 6000 RTP/AVP 0",
      "a=rtpmap:0 PCMU/8000",
    );
    const { answer, media } = answered(answerOffer(sippOffer, bridge));
    assert.equal(media.codec, "PCMU");
    assert.equal(media.telephoneEventPayloadType, undefined);
    assert.deepEqual(mLines(answer), ["m=audio 30000 RTP/AVP 0"]);
    assert.doesNotMatch(answer, /telephone-event|fmtp/);
  });

  it("recognises G.711 without rtpmap lines by its static payload type", () => {
    const offer = sdp(
      "v=0",
      "o=- 1 1 IN IP4 192.0.2.1",
      "s=-",
      "c=IN IP4 192.0.2.1",
      "t=0 0",
      "m=audio 4000 RTP/AVP 18 8",
    );
    assert.equal(answered(answerOffer(offer, bridge)).media.codec, "PCMA");
  });

  it("rejects a G.729-only offer with 488", () => {
    const offer = sdp(
      "v=0",
      "o=- 3742 3742 IN IP4 192.0.2.20",
      "s=SIP Call",
      "c=IN IP4 192.0.2.20",
      "t=0 0",
      "m=audio 5004 RTP/AVP 18 101",
      "a=rtpmap:18 G729/8000",
      "a=fmtp:18 annexb=no",
      "a=rtpmap:101 telephone-event/8000",
      "a=fmtp:101 0-15",
      "a=sendrecv",
    );
    assert.equal(statusOf(answerOffer(offer, bridge)), 488);
  });

  it("rejects with 488 when the offer only has codecs we left out of our list", () => {
    const offer = asteriskOffer("sendrecv").replace(" 0 8 3", " 8 3");
    assert.equal(statusOf(answerOffer(offer, { ...bridge, codecs: ["PCMU"] })), 488);
  });

  it("echoes a dynamic telephone-event payload type and skips one at another clock rate", () => {
    const offer = sdp(
      "v=0",
      "o=bob 2890 2890 IN IP4 192.0.2.30",
      "s=Talk",
      "c=IN IP4 192.0.2.30",
      "t=0 0",
      "m=audio 7078 RTP/AVP 96 0 8 101 97",
      "a=rtpmap:96 opus/48000/2",
      "a=rtpmap:101 telephone-event/48000",
      "a=rtpmap:97 telephone-event/8000",
      "a=fmtp:97 0-15",
    );
    const { answer, media } = answered(answerOffer(offer, bridge));
    assert.equal(media.telephoneEventPayloadType, 97);
    assert.deepEqual(mLines(answer), ["m=audio 30000 RTP/AVP 0 97"]);
    assert.match(answer, /^a=rtpmap:97 telephone-event\/8000\r$/m);
    assert.match(answer, /^a=fmtp:97 0-16\r$/m);
  });

  it("echoes telephone-event on payload type 96", () => {
    const offer = baresipOffer.replaceAll("101", "96");
    const { answer, media } = answered(answerOffer(offer, bridge));
    assert.equal(media.telephoneEventPayloadType, 96);
    assert.deepEqual(mLines(answer), ["m=audio 30000 RTP/AVP 0 96"]);
  });

  it("matches G.711 under a dynamic payload type by rtpmap name, case-insensitively, 8000 Hz mono only", () => {
    const offer = (rtpmap: string) =>
      sdp(
        "v=0",
        "o=- 1 1 IN IP4 192.0.2.1",
        "s=-",
        "c=IN IP4 192.0.2.1",
        "t=0 0",
        "m=audio 4000 RTP/AVP 98",
        `a=rtpmap:98 ${rtpmap}`,
      );
    const { answer, media } = answered(answerOffer(offer("pcma/8000"), bridge));
    assert.equal(media.codec, "PCMA");
    assert.equal(media.payloadType, 98);
    assert.deepEqual(mLines(answer), ["m=audio 30000 RTP/AVP 98"]);
    assert.match(answer, /^a=rtpmap:98 PCMA\/8000\r$/m);
    assert.equal(statusOf(answerOffer(offer("PCMU/16000"), bridge)), 488);
    assert.equal(statusOf(answerOffer(offer("PCMU/8000/2"), bridge)), 488);
  });

  it("takes the session-level c= when the stream has none, and the stream's when it has one", () => {
    const offer = sdp(
      "v=0",
      "o=- 20518 0 IN IP4 192.0.2.40",
      "s=-",
      "c=IN IP4 192.0.2.40",
      "t=0 0",
      "m=audio 49170 RTP/AVP 0",
    );
    assert.equal(answered(answerOffer(offer, bridge)).media.remoteAddress, "192.0.2.40");
    const withMediaLevel = offer.replace(
      "m=audio 49170 RTP/AVP 0\r\n",
      "m=audio 49170 RTP/AVP 0\r\nc=IN IP4 192.0.2.41\r\n",
    );
    assert.equal(answered(answerOffer(withMediaLevel, bridge)).media.remoteAddress, "192.0.2.41");
  });

  it("rejects the video stream of an audio+video offer with port 0, keeping the m= lines in order", () => {
    const offer = sdp(
      "v=0",
      "o=- 1380035429 2076596046 IN IP4 192.168.1.50",
      "s=-",
      "c=IN IP4 192.168.1.50",
      "t=0 0",
      "m=video 10002 RTP/AVP 100 96",
      "a=rtpmap:100 H264/90000",
      "a=fmtp:100 packetization-mode=0",
      "a=rtpmap:96 VP8/90000",
      "a=sendrecv",
      "m=audio 10000 RTP/AVP 0 8 101",
      "a=rtpmap:0 PCMU/8000",
      "a=rtpmap:8 PCMA/8000",
      "a=rtpmap:101 telephone-event/8000",
      "a=fmtp:101 0-15",
      "a=sendrecv",
    );
    const { answer, media } = answered(answerOffer(offer, bridge));
    assert.deepEqual(mLines(answer), ["m=video 0 RTP/AVP 100 96", "m=audio 30000 RTP/AVP 0 101"]);
    assert.doesNotMatch(answer, /H264|VP8/);
    assert.equal(media.remotePort, 10000);
  });

  it("accepts the first acceptable audio stream and rejects the others", () => {
    const offer = sdp(
      "v=0",
      "o=- 1 1 IN IP4 192.0.2.1",
      "s=-",
      "c=IN IP4 192.0.2.1",
      "t=0 0",
      "m=audio 5000 RTP/SAVP 0",
      "a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:PS1uQCVeeCFCanVmcjkpPywjNWhcYD0mXXtxaVBR",
      "m=audio 5002 RTP/AVP 18",
      "m=audio 0 RTP/AVP 0",
      "m=audio 5004 RTP/AVP 8",
      "m=audio 5006 RTP/AVP 0",
    );
    const { answer, media } = answered(answerOffer(offer, bridge));
    assert.deepEqual(mLines(answer), [
      "m=audio 0 RTP/SAVP 0",
      "m=audio 0 RTP/AVP 18",
      "m=audio 0 RTP/AVP 0",
      "m=audio 30000 RTP/AVP 8",
      "m=audio 0 RTP/AVP 0",
    ]);
    assert.equal(media.remotePort, 5004);
    assert.doesNotMatch(answer, /crypto/);
  });

  it("answers a hold (sendonly) with recvonly, and Asterisk's unhold with sendrecv", () => {
    const hold = answered(answerOffer(asteriskOffer("sendonly"), bridge));
    assert.equal(hold.media.direction, "recvonly");
    assert.match(hold.answer, /^a=recvonly\r$/m);
    const unhold = answered(answerOffer(asteriskOffer("sendrecv"), bridge));
    assert.equal(unhold.media.direction, "sendrecv");
    assert.match(unhold.answer, /^a=sendrecv\r$/m);
  });

  it("answers recvonly with sendonly and inactive with inactive", () => {
    const recvonly = answered(answerOffer(asteriskOffer("recvonly"), bridge));
    assert.equal(recvonly.media.direction, "sendonly");
    assert.match(recvonly.answer, /^a=sendonly\r$/m);
    const inactive = answered(answerOffer(asteriskOffer("inactive"), bridge));
    assert.equal(inactive.media.direction, "inactive");
    assert.match(inactive.answer, /^a=inactive\r$/m);
  });

  it("limits a sendrecv offer to our own direction, and a hold to what we are willing to do", () => {
    const ours = answered(answerOffer(asteriskOffer("sendrecv"), { ...bridge, direction: "sendonly" }));
    assert.equal(ours.media.direction, "sendonly");
    assert.match(ours.answer, /^a=sendonly\r$/m);
    const bothHolding = answered(
      answerOffer(asteriskOffer("sendonly"), { ...bridge, direction: "sendonly" }),
    );
    assert.equal(bothHolding.media.direction, "inactive");
  });

  it("takes a session-level direction when the stream has none", () => {
    const offer = sdp(
      "v=0",
      "o=- 1 2 IN IP4 192.0.2.1",
      "s=-",
      "c=IN IP4 192.0.2.1",
      "t=0 0",
      "a=sendonly",
      "m=audio 4000 RTP/AVP 0",
    );
    assert.equal(answered(answerOffer(offer, bridge)).media.direction, "recvonly");
  });

  it("treats c=0.0.0.0 as RFC 2543 hold: inactive", () => {
    const offer = asteriskOffer("sendrecv").replace("c=IN IP4 203.0.113.5", "c=IN IP4 0.0.0.0");
    const { answer, media } = answered(answerOffer(offer, bridge));
    assert.equal(media.direction, "inactive");
    assert.match(answer, /^a=inactive\r$/m);
  });

  it("answers 400 to text that is not SDP", () => {
    for (const garbage of [
      "",
      "hello world",
      "<html><body>not sdp</body></html>",
      "INVITE sip:a@b SIP/2.0\r\n",
    ]) {
      assert.equal(statusOf(answerOffer(garbage, bridge)), 400, JSON.stringify(garbage));
    }
  });

  it("answers 400 to a malformed m= line, a missing o= line, or an audio stream without c=", () => {
    const malformed = asteriskOffer("sendrecv").replace("m=audio 17372 RTP/AVP", "m=audio port RTP/AVP");
    assert.equal(statusOf(answerOffer(malformed, bridge)), 400);
    const noOrigin = asteriskOffer("sendrecv").replace(/o=[^\r]*\r\n/, "");
    assert.equal(statusOf(answerOffer(noOrigin, bridge)), 400);
    const noConnection = asteriskOffer("sendrecv").replace(/c=[^\r]*\r\n/, "");
    assert.equal(statusOf(answerOffer(noConnection, bridge)), 400);
  });
});

describe("acceptAnswer (RFC 3264 §7)", () => {
  const ourOffer = createOffer(bridge);
  const asteriskAnswer = (mLine: string, ...attributes: string[]) =>
    sdp(
      "v=0",
      "o=- 1795290548 1795290548 IN IP4 203.0.113.5",
      "s=Asterisk",
      "c=IN IP4 203.0.113.5",
      "t=0 0",
      mLine,
      ...attributes,
    );

  it("reads Asterisk's PCMA answer", () => {
    const answer = asteriskAnswer(
      "m=audio 17372 RTP/AVP 8 101",
      "a=rtpmap:8 PCMA/8000",
      "a=rtpmap:101 telephone-event/8000",
      "a=fmtp:101 0-16",
      "a=ptime:20",
      "a=maxptime:150",
      "a=sendrecv",
    );
    assert.deepEqual(accepted(acceptAnswer(ourOffer, answer)), {
      codec: "PCMA",
      payloadType: 8,
      clockRate: 8000,
      receiveFormats: [{ codec: "PCMA", payloadType: 8, clockRate: 8000 }],
      telephoneEventPayloadType: 101,
      telephoneEvents: [{ payloadType: 101, clockRate: 8000 }],
      remoteAddress: "203.0.113.5",
      remotePort: 17372,
      direction: "sendrecv",
      ptime: 20,
    });
  });

  it("takes the first answered codec we offered, and the answer's telephone-event type", () => {
    const answer = asteriskAnswer(
      "m=audio 17372 RTP/AVP 3 0 8 96",
      "a=rtpmap:3 GSM/8000",
      "a=rtpmap:96 telephone-event/8000",
    );
    const media = accepted(acceptAnswer(ourOffer, answer));
    assert.equal(media.codec, "PCMU");
    assert.equal(media.telephoneEventPayloadType, 96);
  });

  it("receives every answered codec we offered, in the answer's order: the far end may switch between them", () => {
    const answer = asteriskAnswer("m=audio 17372 RTP/AVP 0 3 8 101", "a=rtpmap:3 GSM/8000");
    const media = accepted(acceptAnswer(ourOffer, answer));
    assert.equal(media.codec, "PCMU");
    assert.deepEqual(media.receiveFormats, [
      { codec: "PCMU", payloadType: 0, clockRate: 8000 },
      { codec: "PCMA", payloadType: 8, clockRate: 8000 },
    ]);
  });

  it("has no telephone-event when the answer drops it", () => {
    const media = accepted(acceptAnswer(ourOffer, asteriskAnswer("m=audio 17372 RTP/AVP 0")));
    assert.equal(media.telephoneEventPayloadType, undefined);
  });

  it("fails when the answer holds no codec we offered", () => {
    const pcmuOnly = createOffer({ ...bridge, codecs: ["PCMU"] });
    const result = acceptAnswer(pcmuOnly, asteriskAnswer("m=audio 17372 RTP/AVP 8"));
    assert.equal(result.ok, false);
  });

  it("fails when the audio stream is rejected or the m= lines do not match the offer", () => {
    assert.equal(acceptAnswer(ourOffer, asteriskAnswer("m=audio 0 RTP/AVP 0")).ok, false);
    const twoLines = asteriskAnswer("m=audio 17372 RTP/AVP 0", "m=video 0 RTP/AVP 31");
    assert.equal(acceptAnswer(ourOffer, twoLines).ok, false);
    assert.equal(acceptAnswer(ourOffer, "not sdp").ok, false);
  });

  it("derives our direction from the answer's", () => {
    const withDirection = (direction: string) =>
      accepted(acceptAnswer(ourOffer, asteriskAnswer("m=audio 17372 RTP/AVP 0", `a=${direction}`))).direction;
    assert.equal(withDirection("sendonly"), "recvonly");
    assert.equal(withDirection("recvonly"), "sendonly");
    assert.equal(withDirection("inactive"), "inactive");
    assert.equal(withDirection("sendrecv"), "sendrecv");
  });

  it("is inactive when the answer's address is 0.0.0.0", () => {
    const answer = asteriskAnswer("m=audio 17372 RTP/AVP 0").replace(
      "c=IN IP4 203.0.113.5",
      "c=IN IP4 0.0.0.0",
    );
    assert.equal(accepted(acceptAnswer(ourOffer, answer)).direction, "inactive");
  });
});

describe("offer/answer round trips", () => {
  const peer: LocalMedia = { address: "192.0.2.99", port: 40000, sessionId: "777", sessionVersion: 5 };

  it("our offer, answered by our own answerOffer, is accepted by acceptAnswer", () => {
    const offer = createOffer(bridge);
    const { answer, media: theirs } = answered(answerOffer(offer, peer));
    const ours = accepted(acceptAnswer(offer, answer));
    assert.deepEqual(theirs, {
      codec: "PCMU",
      payloadType: 0,
      clockRate: 8000,
      receiveFormats: [{ codec: "PCMU", payloadType: 0, clockRate: 8000 }],
      telephoneEventPayloadType: 101,
      telephoneEvents: [{ payloadType: 101, clockRate: 8000 }],
      remoteAddress: bridge.address,
      remotePort: bridge.port,
      direction: "sendrecv",
      ptime: 20,
    });
    assert.deepEqual(ours, { ...theirs, remoteAddress: peer.address, remotePort: peer.port });
  });

  it("holds and resumes with re-offers of the next version (RFC 3264 §8.4)", () => {
    const held = holdMedia(bridge);
    assert.equal(held.sessionVersion, bridge.sessionVersion + 1);
    assert.equal(held.sessionId, bridge.sessionId);
    const holdOffer = createOffer(held);
    assert.match(holdOffer, /^o=- 4711 2 IN IP4 198\.51\.100\.7\r$/m);
    assert.match(holdOffer, /^a=sendonly\r$/m);
    const { answer, media: theirs } = answered(answerOffer(holdOffer, peer));
    assert.equal(theirs.direction, "recvonly");
    assert.equal(accepted(acceptAnswer(holdOffer, answer)).direction, "sendonly");

    const resumed = resumeMedia(held);
    assert.equal(resumed.sessionVersion, bridge.sessionVersion + 2);
    const resumeOffer = createOffer(resumed);
    const back = answered(answerOffer(resumeOffer, peer));
    assert.equal(back.media.direction, "sendrecv");
    assert.equal(accepted(acceptAnswer(resumeOffer, back.answer)).direction, "sendrecv");
  });

  it("holds a stream we only received as inactive", () => {
    assert.equal(holdMedia({ ...bridge, direction: "recvonly" }).direction, "inactive");
    assert.equal(holdMedia({ ...bridge, direction: "sendonly" }).direction, "sendonly");
  });
});

describe("G.722 and Opus (RFC 3551 §4.5.2, RFC 7587)", () => {
  const wideband: LocalMedia = { ...bridge, codecs: WIDEBAND_AUDIO_CODECS };
  /** The peer's Opus fmtp when it says nothing (RFC 7587 §6.1's defaults). */
  const opusDefaults: OpusParameters = {
    useInbandFec: false,
    maxAverageBitrate: undefined,
    stereo: false,
    spropStereo: false,
    maxPlaybackRate: 48000,
  };
  /** A wideband phone's offer: Opus first, under its own payload type, and a telephone-event per clock rate. */
  const phoneOffer = sdp(
    "v=0",
    "o=- 2238 3912 IN IP4 192.168.1.60",
    "s=-",
    "c=IN IP4 192.168.1.60",
    "t=0 0",
    "m=audio 10010 RTP/AVP 96 9 0 8 97 101",
    "a=rtpmap:96 opus/48000/2",
    "a=fmtp:96 stereo=1;sprop-stereo=1;maxaveragebitrate=28000",
    "a=rtpmap:9 G722/8000",
    "a=rtpmap:0 PCMU/8000",
    "a=rtpmap:8 PCMA/8000",
    "a=rtpmap:97 telephone-event/48000",
    "a=fmtp:97 0-15",
    "a=rtpmap:101 telephone-event/8000",
    "a=fmtp:101 0-15",
    "a=ptime:20",
    "a=sendrecv",
  );
  /** A one-stream offer of `formats`, with these attribute lines. */
  const offerOf = (formats: string, ...attributes: string[]) =>
    sdp(
      "v=0",
      "o=- 1 1 IN IP4 192.0.2.1",
      "s=-",
      "c=IN IP4 192.0.2.1",
      "t=0 0",
      `m=audio 4000 RTP/AVP ${formats}`,
      ...attributes,
    );

  it("keeps G.711 the default, and names the wideband order: Opus, G.722, PCMU, PCMA", () => {
    assert.deepEqual(AUDIO_CODECS, ["PCMU", "PCMA"]);
    assert.deepEqual(WIDEBAND_AUDIO_CODECS, ["opus", "G722", "PCMU", "PCMA"]);
  });

  it("offers the wideband order: Opus with its fmtp and maxptime, G.722 at 9/8000, a telephone-event per clock rate", () => {
    assert.equal(
      createOffer(wideband),
      sdp(
        "v=0",
        "o=- 4711 1 IN IP4 198.51.100.7",
        "s=-",
        "c=IN IP4 198.51.100.7",
        "t=0 0",
        "m=audio 30000 RTP/AVP 111 9 0 8 110 101",
        "a=rtpmap:111 opus/48000/2",
        "a=rtpmap:9 G722/8000",
        "a=rtpmap:0 PCMU/8000",
        "a=rtpmap:8 PCMA/8000",
        "a=rtpmap:110 telephone-event/48000",
        "a=rtpmap:101 telephone-event/8000",
        "a=fmtp:111 useinbandfec=1;maxaveragebitrate=20000",
        "a=fmtp:110 0-16",
        "a=fmtp:101 0-16",
        "a=ptime:20",
        "a=maxptime:20",
        "a=sendrecv",
      ),
    );
  });

  it("offers in the order the codecs are named, with the telephone-events their clock rates need", () => {
    const cases: [LocalMedia["codecs"], boolean, string][] = [
      [["G722", "PCMU"], true, "m=audio 30000 RTP/AVP 9 0 101"],
      [["PCMA", "opus"], true, "m=audio 30000 RTP/AVP 8 111 101 110"],
      [["opus"], true, "m=audio 30000 RTP/AVP 111 110"],
      [["G722"], true, "m=audio 30000 RTP/AVP 9 101"],
      [["PCMU", "G722", "opus", "PCMA"], true, "m=audio 30000 RTP/AVP 0 9 111 8 101 110"],
      [["opus", "PCMU"], false, "m=audio 30000 RTP/AVP 111 0"],
    ];
    for (const [codecs, telephoneEvents, mLine] of cases) {
      const offer = createOffer({ ...bridge, codecs, telephoneEvents });
      assert.deepEqual(mLines(offer), [mLine], String(codecs));
      const hasOpus = codecs?.includes("opus") === true;
      assert.equal(/^a=maxptime:20\r$/m.test(offer), hasOpus, `maxptime with ${codecs}`);
      assert.equal(/^a=rtpmap:\d+ telephone-event\/48000\r$/m.test(offer), hasOpus && telephoneEvents);
    }
  });

  it("writes the local media's Opus bitrate, and refuses one RFC 7587 does not allow or a codec named twice", () => {
    const offer = createOffer({ ...bridge, codecs: ["opus"], opusMaxAverageBitrate: 32000 });
    assert.match(offer, /^a=fmtp:111 useinbandfec=1;maxaveragebitrate=32000\r$/m);
    for (const bitrate of [5999, 510001, 20000.5]) {
      assert.throws(
        () => createOffer({ ...bridge, codecs: ["opus"], opusMaxAverageBitrate: bitrate }),
        RangeError,
        String(bitrate),
      );
    }
    assert.throws(() => createOffer({ ...bridge, codecs: ["PCMU", "opus", "PCMU"] }), RangeError);
  });

  it("answers a wideband phone with Opus under the phone's payload type, our fmtp, and its telephone-event/48000", () => {
    const { answer, media } = answered(answerOffer(phoneOffer, wideband));
    const opus = {
      codec: "opus",
      payloadType: 96,
      clockRate: 48000,
      opus: { ...opusDefaults, maxAverageBitrate: 28000, stereo: true, spropStereo: true },
    };
    assert.deepEqual(media, {
      ...opus,
      receiveFormats: [opus],
      telephoneEventPayloadType: 97,
      telephoneEvents: [{ payloadType: 97, clockRate: 48000 }],
      remoteAddress: "192.168.1.60",
      remotePort: 10010,
      direction: "sendrecv",
      ptime: 20,
    });
    assert.equal(
      answer,
      sdp(
        "v=0",
        "o=- 4711 1 IN IP4 198.51.100.7",
        "s=-",
        "c=IN IP4 198.51.100.7",
        "t=0 0",
        "m=audio 30000 RTP/AVP 96 97",
        "a=rtpmap:96 opus/48000/2",
        "a=rtpmap:97 telephone-event/48000",
        "a=fmtp:96 useinbandfec=1;maxaveragebitrate=20000",
        "a=fmtp:97 0-16",
        "a=ptime:20",
        "a=maxptime:20",
        "a=sendrecv",
      ),
    );
  });

  it("chooses by our preference, not the phone's, with the telephone-event at the chosen codec's rate", () => {
    const cases: [LocalMedia["codecs"], string, number, number, string][] = [
      [["G722", "PCMU"], "G722", 9, 101, "m=audio 30000 RTP/AVP 9 101"],
      [["PCMA", "opus"], "PCMA", 8, 101, "m=audio 30000 RTP/AVP 8 101"],
      [["PCMU", "G722", "opus"], "PCMU", 0, 101, "m=audio 30000 RTP/AVP 0 101"],
      [["opus", "G722"], "opus", 96, 97, "m=audio 30000 RTP/AVP 96 97"],
      [undefined, "PCMU", 0, 101, "m=audio 30000 RTP/AVP 0 101"],
    ];
    for (const [codecs, codec, payloadType, telephoneEvent, mLine] of cases) {
      const { answer, media } = answered(answerOffer(phoneOffer, { ...bridge, codecs }));
      assert.deepEqual(
        [media.codec, media.payloadType, media.telephoneEventPayloadType, mLines(answer)],
        [codec, payloadType, telephoneEvent, [mLine]],
        String(codecs),
      );
    }
    const g722 = answered(answerOffer(phoneOffer, { ...bridge, codecs: ["G722"] }));
    assert.equal(g722.media.clockRate, 8000, "G.722's RTP clock is 8000 (RFC 3551 §4.5.2)");
    assert.match(g722.answer, /^a=rtpmap:9 G722\/8000\r$/m);
    assert.match(g722.answer, /^a=rtpmap:101 telephone-event\/8000\r$/m);
    assert.doesNotMatch(g722.answer, /maxptime|opus|fmtp:9 /);
  });

  it("takes Opus under whatever dynamic payload type the offer gives it, as opus/48000/2 only, in any case", () => {
    const at = (payloadType: number, rtpmap: string) =>
      answerOffer(offerOf(`${payloadType} 0`, `a=rtpmap:${payloadType} ${rtpmap}`), {
        ...bridge,
        codecs: ["opus"],
      });
    const { answer, media } = answered(at(120, "OPUS/48000/2"));
    assert.deepEqual([media.codec, media.payloadType, media.clockRate], ["opus", 120, 48000]);
    assert.deepEqual(media.opus, opusDefaults);
    assert.deepEqual(mLines(answer), ["m=audio 30000 RTP/AVP 120"]);
    assert.match(answer, /^a=rtpmap:120 opus\/48000\/2\r$/m);
    assert.match(answer, /^a=fmtp:120 useinbandfec=1;maxaveragebitrate=20000\r$/m);
    assert.doesNotMatch(answer, /:111 /, "our own offer's payload type is not used in an answer");
    for (const wrong of ["opus/48000", "opus/16000/2", "opus/48000/1"])
      assert.equal(statusOf(at(96, wrong)), 488, wrong);
  });

  it("takes G.722 by its static payload type 9 without an rtpmap, or a dynamic one at 8000 Hz only", () => {
    const { answer, media } = answered(answerOffer(offerOf("9 0"), wideband));
    assert.deepEqual([media.codec, media.payloadType, media.clockRate], ["G722", 9, 8000]);
    assert.deepEqual(media.receiveFormats, [{ codec: "G722", payloadType: 9, clockRate: 8000 }]);
    assert.deepEqual(mLines(answer), ["m=audio 30000 RTP/AVP 9"]);
    assert.match(answer, /^a=rtpmap:9 G722\/8000\r$/m);
    const dynamic = answered(answerOffer(offerOf("98 0", "a=rtpmap:98 g722/8000"), wideband));
    assert.deepEqual([dynamic.media.codec, dynamic.media.payloadType], ["G722", 98]);
    assert.equal(statusOf(answerOffer(offerOf("98", "a=rtpmap:98 G722/16000"), wideband)), 488);
  });

  it("reads the peer's Opus fmtp: RFC 7587 §7's parameters, their defaults, names in any case, values out of range ignored", () => {
    const fmtpOf = (fmtp: string | undefined) =>
      answered(
        answerOffer(
          offerOf("96", "a=rtpmap:96 opus/48000/2", ...(fmtp === undefined ? [] : [`a=fmtp:96 ${fmtp}`])),
          wideband,
        ),
      ).media.opus;
    assert.deepEqual(
      fmtpOf(
        "maxplaybackrate=16000; sprop-maxcapturerate=16000; maxaveragebitrate=20000; stereo=1; useinbandfec=1; usedtx=0",
      ),
      {
        useInbandFec: true,
        maxAverageBitrate: 20000,
        stereo: true,
        spropStereo: false,
        maxPlaybackRate: 16000,
      },
    );
    assert.deepEqual(fmtpOf(undefined), opusDefaults);
    assert.deepEqual(fmtpOf("MaxAverageBitrate=64000;USEINBANDFEC=1;sprop-stereo=1"), {
      ...opusDefaults,
      useInbandFec: true,
      maxAverageBitrate: 64000,
      spropStereo: true,
    });
    assert.deepEqual(
      fmtpOf("maxaveragebitrate=600000;maxplaybackrate=4000;useinbandfec=yes;stereo=2"),
      opusDefaults,
    );
  });

  it("answers Opus with the offer's telephone-event/8000 when it has none at 48000, to receive keys on alone (ours go as tones)", () => {
    const noWideEvents = phoneOffer
      .replace(" 97 101", " 101")
      .replace("a=rtpmap:97 telephone-event/48000\r\na=fmtp:97 0-15\r\n", "");
    const { answer, media } = answered(answerOffer(noWideEvents, wideband));
    assert.equal(media.codec, "opus");
    // RFC 4733 §2.1: events go at the rate of the codec they go with, so none of ours go on it.
    assert.equal(media.telephoneEventPayloadType, undefined);
    assert.deepEqual(media.telephoneEvents, [{ payloadType: 101, clockRate: 8000 }]);
    assert.deepEqual(mLines(answer), ["m=audio 30000 RTP/AVP 96 101"]);
    assert.match(answer, /^a=rtpmap:101 telephone-event\/8000\r$/m);
  });

  it("refuses with 488 naming the codecs we support", () => {
    const reasonOf = (result: AnswerResult) => (result.ok ? "ok" : `${result.status} ${result.reason}`);
    assert.equal(
      reasonOf(answerOffer(offerOf("0", "a=rtpmap:0 PCMU/8000"), { ...bridge, codecs: ["opus", "G722"] })),
      "488 no audio stream offers opus or G722 over RTP/AVP",
    );
    assert.equal(
      reasonOf(answerOffer(offerOf("18", "a=rtpmap:18 G729/8000"), bridge)),
      "488 no audio stream offers PCMU or PCMA over RTP/AVP",
    );
    assert.equal(
      reasonOf(answerOffer(offerOf("18"), wideband)),
      "488 no audio stream offers opus, G722, PCMU or PCMA over RTP/AVP",
    );
    const key = { suite: "AES_CM_128_HMAC_SHA1_80" as const, inline: Buffer.alloc(30, 1).toString("base64") };
    assert.equal(
      reasonOf(
        answerOffer(offerOf("0"), { ...bridge, codecs: ["opus"], srtp: { policy: "optional", keys: [key] } }),
      ),
      "488 no audio stream offers opus over RTP/AVP or RTP/SAVP",
    );
  });

  const peerAnswer = (mLine: string, ...attributes: string[]) =>
    sdp("v=0", "o=- 88 88 IN IP4 203.0.113.9", "s=-", "c=IN IP4 203.0.113.9", "t=0 0", mLine, ...attributes);

  it("accepts an Opus answer: every format it lists with its clock rate and fmtp, a telephone-event per rate", () => {
    const answer = peerAnswer(
      "m=audio 7078 RTP/AVP 96 0 97 101",
      "a=rtpmap:96 opus/48000/2",
      "a=fmtp:96 useinbandfec=1; maxaveragebitrate=24000",
      "a=rtpmap:0 PCMU/8000",
      "a=rtpmap:97 telephone-event/48000",
      "a=rtpmap:101 telephone-event/8000",
    );
    const opus = {
      codec: "opus",
      payloadType: 96,
      clockRate: 48000,
      opus: { ...opusDefaults, useInbandFec: true, maxAverageBitrate: 24000 },
    };
    // The far end may switch to PCMU, and send its keys at that rate, packet by packet.
    assert.deepEqual(accepted(acceptAnswer(createOffer(wideband), answer)), {
      ...opus,
      receiveFormats: [opus, { codec: "PCMU", payloadType: 0, clockRate: 8000 }],
      telephoneEventPayloadType: 97,
      telephoneEvents: [
        { payloadType: 97, clockRate: 48000 },
        { payloadType: 101, clockRate: 8000 },
      ],
      remoteAddress: "203.0.113.9",
      remotePort: 7078,
      direction: "sendrecv",
      ptime: 20,
    });
  });

  it("accepts G.722 answered without an rtpmap, with telephone-event/8000", () => {
    const media = accepted(
      acceptAnswer(
        createOffer(wideband),
        peerAnswer("m=audio 7078 RTP/AVP 9 101", "a=rtpmap:101 telephone-event/8000"),
      ),
    );
    assert.deepEqual(
      [media.codec, media.payloadType, media.clockRate, media.telephoneEventPayloadType],
      ["G722", 9, 8000, 101],
    );
  });

  it("sends no keys as events at another codec's rate, and takes none at a rate we did not offer", () => {
    const opusWithNarrowEvents = accepted(
      acceptAnswer(
        createOffer(wideband),
        peerAnswer(
          "m=audio 7078 RTP/AVP 96 101",
          "a=rtpmap:96 opus/48000/2",
          "a=rtpmap:101 telephone-event/8000",
        ),
      ),
    );
    assert.equal(opusWithNarrowEvents.codec, "opus");
    assert.equal(opusWithNarrowEvents.telephoneEventPayloadType, undefined);
    assert.deepEqual(opusWithNarrowEvents.telephoneEvents, [{ payloadType: 101, clockRate: 8000 }]);
    const narrowOffer = createOffer({ ...bridge, codecs: ["G722", "PCMU"] });
    const g722 = accepted(
      acceptAnswer(
        narrowOffer,
        peerAnswer(
          "m=audio 7078 RTP/AVP 9 97 101",
          "a=rtpmap:97 telephone-event/48000",
          "a=rtpmap:101 telephone-event/8000",
        ),
      ),
    );
    assert.equal(g722.telephoneEventPayloadType, 101);
    assert.deepEqual(g722.telephoneEvents, [{ payloadType: 101, clockRate: 8000 }]);
  });

  it("round trip: a wideband offer answered by a wideband peer is Opus both ways, each side with the other's fmtp", () => {
    const offer = createOffer({ ...wideband, opusMaxAverageBitrate: 32000 });
    const peer: LocalMedia = {
      address: "192.0.2.99",
      port: 40000,
      sessionId: "777",
      sessionVersion: 5,
      codecs: WIDEBAND_AUDIO_CODECS,
      opusMaxAverageBitrate: 24000,
    };
    const { answer, media: theirs } = answered(answerOffer(offer, peer));
    const ours = accepted(acceptAnswer(offer, answer));
    assert.deepEqual(theirs.opus, { ...opusDefaults, useInbandFec: true, maxAverageBitrate: 32000 });
    assert.deepEqual(ours.opus, { ...opusDefaults, useInbandFec: true, maxAverageBitrate: 24000 });
    for (const media of [theirs, ours]) {
      assert.deepEqual(
        [media.codec, media.payloadType, media.clockRate, media.telephoneEventPayloadType],
        ["opus", 111, 48000, 110],
      );
    }
    const narrowPeer = answered(answerOffer(offer, { ...peer, codecs: undefined }));
    assert.deepEqual([narrowPeer.media.codec, narrowPeer.media.telephoneEventPayloadType], ["PCMU", 101]);
    const narrow = accepted(acceptAnswer(offer, narrowPeer.answer));
    assert.deepEqual([narrow.codec, narrow.clockRate, narrow.telephoneEventPayloadType], ["PCMU", 8000, 101]);
  });
});

describe("SRTP keys by SDES (RFC 4568)", () => {
  const key80 = { suite: "AES_CM_128_HMAC_SHA1_80" as const, inline: Buffer.alloc(30, 1).toString("base64") };
  const key32 = { suite: "AES_CM_128_HMAC_SHA1_32" as const, inline: Buffer.alloc(30, 2).toString("base64") };
  const theirs80 = Buffer.alloc(30, 9).toString("base64");
  const base = { address: "192.0.2.10", port: 40000, sessionId: "1", sessionVersion: 1 };
  const peerOffer = (profile: string, crypto: string[]) =>
    [
      "v=0",
      "o=- 2 2 IN IP4 198.51.100.5",
      "s=-",
      "c=IN IP4 198.51.100.5",
      "t=0 0",
      `m=audio 50000 ${profile} 0 101`,
      "a=rtpmap:0 PCMU/8000",
      "a=rtpmap:101 telephone-event/8000",
      ...crypto,
      "",
    ].join("\r\n");

  it("required offers RTP/SAVP with a crypto line per key; optional offers them in RTP/AVP", () => {
    const required = createOffer({ ...base, srtp: { policy: "required", keys: [key80, key32] } });
    assert.match(required, /m=audio 40000 RTP\/SAVP 0 8 101/);
    assert.match(
      required,
      new RegExp(`a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:${key80.inline.replace(/[+/]/g, "\\$&")}`),
    );
    assert.match(required, /a=crypto:2 AES_CM_128_HMAC_SHA1_32 inline:/);
    assert.match(
      createOffer({ ...base, srtp: { policy: "optional", keys: [key80] } }),
      /m=audio 40000 RTP\/AVP .*[\s\S]*a=crypto:1 /,
    );
    assert.doesNotMatch(createOffer(base), /a=crypto/);
  });

  it("answers the first crypto line with a suite it knows, in the offer's profile, with its own key of that suite", () => {
    const result = answerOffer(
      peerOffer("RTP/SAVP", [
        `a=crypto:1 F8_128_HMAC_SHA1_80 inline:${theirs80}`,
        `a=crypto:2 AES_CM_128_HMAC_SHA1_80 inline:${theirs80}`,
      ]),
      { ...base, srtp: { policy: "optional", keys: [key32, key80] } },
    );
    assert.ok(result.ok);
    assert.match(result.answer, /m=audio 40000 RTP\/SAVP 0 101/);
    assert.match(result.answer, /a=crypto:2 AES_CM_128_HMAC_SHA1_80 inline:/);
    assert.deepEqual(result.media.srtp, {
      send: key80,
      receive: { suite: "AES_CM_128_HMAC_SHA1_80", inline: theirs80 },
    });
  });

  it("skips offered suites it holds no key for: with only _32 of ours, an offer of _80 then _32 gets _32", () => {
    const result = answerOffer(
      peerOffer("RTP/SAVP", [
        `a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:${theirs80}`,
        `a=crypto:2 AES_CM_128_HMAC_SHA1_32 inline:${theirs80}`,
      ]),
      { ...base, srtp: { policy: "required", keys: [key32] } },
    );
    assert.ok(result.ok);
    assert.match(result.answer, /a=crypto:2 AES_CM_128_HMAC_SHA1_32 inline:/);
    assert.equal(result.media.srtp?.send, key32);
  });

  it("takes the RFC 6188 and RFC 7714 suites with keys of their own length, and skips a key of the wrong length", () => {
    const gcm256 = { suite: "AEAD_AES_256_GCM" as const, inline: Buffer.alloc(44, 3).toString("base64") };
    const cm256 = {
      suite: "AES_256_CM_HMAC_SHA1_80" as const,
      inline: Buffer.alloc(46, 4).toString("base64"),
    };
    const theirsGcm256 = Buffer.alloc(44, 7).toString("base64");
    const result = answerOffer(
      peerOffer("RTP/SAVP", [
        `a=crypto:1 AEAD_AES_256_GCM inline:${theirs80}`,
        `a=crypto:2 AEAD_AES_256_GCM inline:${theirsGcm256}`,
        `a=crypto:3 AES_256_CM_HMAC_SHA1_80 inline:${Buffer.alloc(46, 8).toString("base64")}`,
      ]),
      { ...base, srtp: { policy: "required", keys: [cm256, gcm256] } },
    );
    assert.ok(result.ok);
    assert.match(result.answer, /a=crypto:2 AEAD_AES_256_GCM inline:/);
    assert.deepEqual(result.media.srtp, {
      send: gcm256,
      receive: { suite: "AEAD_AES_256_GCM", inline: theirsGcm256 },
    });
  });

  it("required refuses a plain offer with 488; off or optional answers it plain; an RTP/SAVP offer needs a key we can use", () => {
    const plain = peerOffer("RTP/AVP", []);
    const required = answerOffer(plain, { ...base, srtp: { policy: "required", keys: [key80] } });
    assert.equal(required.ok, false);
    assert.equal(!required.ok && required.status, 488);
    const optional = answerOffer(plain, { ...base, srtp: { policy: "optional", keys: [key80] } });
    assert.ok(optional.ok);
    assert.equal(optional.media.srtp, undefined);
    assert.doesNotMatch(optional.answer, /a=crypto/);
    const savp = answerOffer(
      peerOffer("RTP/SAVP", [`a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:${theirs80}`]),
      base,
    );
    assert.equal(!savp.ok && savp.status, 488);
  });

  it("reads the key the answer chose by tag; required fails an answer without one", () => {
    const offer = createOffer({ ...base, srtp: { policy: "required", keys: [key80, key32] } });
    const answer = peerOffer("RTP/SAVP", [`a=crypto:2 AES_CM_128_HMAC_SHA1_32 inline:${theirs80}`]);
    const accepted = acceptAnswer(offer, answer);
    assert.ok(accepted.ok);
    assert.deepEqual(accepted.media.srtp, {
      send: key32,
      receive: { suite: "AES_CM_128_HMAC_SHA1_32", inline: theirs80 },
    });
    const plain = acceptAnswer(offer, peerOffer("RTP/SAVP", []));
    assert.equal(plain.ok, false);
  });
});
