// Long because it is one concern, offer/answer for one audio stream: the offer, the answer and the rules both read.
/**
 * SDP offer/answer (RFC 3264) for one G.711 audio stream: PCMU (PT 0), PCMA (PT 8) and RFC 4733
 * telephone-events, 20 ms packets, with the stream directions that put calls on hold (§8.4), and
 * SRTP keys by SDES (RFC 4568): `required` offers RTP/SAVP with a=crypto, `optional` RTP/AVP with
 * a=crypto (either answer is taken). Parsing and writing are sdp-transform's; this module checks
 * what it parsed and negotiates.
 */
import { isIPv6 } from "node:net";
import { type MediaDescription, parse, type SessionDescription, write } from "sdp-transform";
import {
  inlineKeyLength,
  SRTP_SUITES,
  type SrtpKeyMaterial,
  type SrtpSuite,
} from "../media/rtp/srtp-suites.js";

export type AudioCodec = "PCMU" | "PCMA";

/** The direction attribute of a stream (RFC 3264 §5.1); absent means sendrecv. */
export type Direction = "sendrecv" | "sendonly" | "recvonly" | "inactive";

export interface LocalMedia {
  /** Where we receive RTP: the c= address (IPv4 or IPv6) and the m= port. */
  address: string;
  port: number;
  /** The codecs we accept, most preferred first; default PCMU then PCMA. */
  codecs?: readonly AudioCodec[];
  /**
   * Whether our offers list RFC 4733 telephone-events (default true); without them a peer sends
   * keys by SIP INFO or as tones. Answers list them whenever the offer does.
   */
  telephoneEvents?: boolean;
  /** What we are willing to do; default sendrecv. */
  direction?: Direction;
  /** o= sess-id: numeric, fixed for the dialog. */
  sessionId: string;
  /** o= sess-version: must grow by one with every changed description we send (RFC 3264 §8). */
  sessionVersion: number;
  /** SRTP: whether it must be had, and our keys, one per suite, offered in this order. */
  srtp?: { readonly policy: "optional" | "required"; readonly keys: readonly SrtpKeyMaterial[] };
}

export interface NegotiatedMedia {
  codec: AudioCodec;
  /** The payload type the remote listed the codec under; we send with it. */
  payloadType: number;
  /**
   * Every audio format of the answer that we have, in its order (the first is what we send): the far
   * end may send any of them, switching packet by packet (RFC 3264 §6.1 and §7).
   */
  receiveFormats: readonly { readonly codec: AudioCodec; readonly payloadType: number }[];
  /** The telephone-event payload type the remote listed, undefined when it has none. */
  telephoneEventPayloadType: number | undefined;
  /** Where to send RTP. */
  remoteAddress: string;
  remotePort: number;
  /** Our direction: whether we send and whether we receive. */
  direction: Direction;
  /** The packetization in ms the remote asked to receive (a=ptime, RFC 4566 §6); 20 when it did not say. */
  ptime: number;
  /** SRTP keys when negotiated: ours protects what we send, theirs opens what we receive. */
  srtp?: { send: SrtpKeyMaterial; receive: SrtpKeyMaterial };
}

export type AnswerResult =
  | { ok: true; answer: string; media: NegotiatedMedia }
  | { ok: false; status: 488 | 400; reason: string };

export type AcceptResult = { ok: true; media: NegotiatedMedia } | { ok: false; reason: string };

/** Static payload types of RFC 3551 §6, Table 4. */
const STATIC_PAYLOAD_TYPES: Readonly<Record<AudioCodec, number>> = { PCMU: 0, PCMA: 8 };
/** The codecs this service has, in its default order of preference. */
export const AUDIO_CODECS: readonly AudioCodec[] = ["PCMU", "PCMA"];
const CLOCK_RATE = 8000;
const OFFERED_TELEPHONE_EVENT_PAYLOAD_TYPE = 101;
/** DTMF 0-9 * # A-D and flash (RFC 4733 §3.2). */
const TELEPHONE_EVENTS = "0-16";
const PTIME = 20;
const RTP_PROFILE = "RTP/AVP";
const SRTP_PROFILE = "RTP/SAVP";

const SENDS: Readonly<Record<Direction, boolean>> = {
  sendrecv: true,
  sendonly: true,
  recvonly: false,
  inactive: false,
};
const RECEIVES: Readonly<Record<Direction, boolean>> = {
  sendrecv: true,
  sendonly: false,
  recvonly: true,
  inactive: false,
};

/**
 * The complete offer for our audio stream, CRLF line endings. A re-offer (RFC 3264 §8) is another
 * createOffer with the same sessionId and sessionVersion + 1; holdMedia and resumeMedia make those.
 */
export function createOffer(local: LocalMedia): string {
  const codecs = local.codecs ?? AUDIO_CODECS;
  if (codecs.length === 0) throw new RangeError("an offer needs at least one codec");
  const media = audioMedia(
    local,
    codecs.map((codec) => ({ codec, payloadType: STATIC_PAYLOAD_TYPES[codec] })),
    local.telephoneEvents === false ? undefined : OFFERED_TELEPHONE_EVENT_PAYLOAD_TYPE,
    local.direction ?? "sendrecv",
  );
  if (local.srtp !== undefined) {
    media.protocol = local.srtp.policy === "required" ? SRTP_PROFILE : RTP_PROFILE;
    media.crypto = local.srtp.keys.map((key, i) => ({
      id: i + 1,
      suite: key.suite,
      config: `inline:${key.inline}`,
    }));
  }
  return write(sessionOf(local, [media]));
}

/**
 * The media for a re-offer that puts the call on hold (RFC 3264 §8.4): a stream we sent and received
 * becomes sendonly, one we only received becomes inactive. Send createOffer(held) and keep `held`
 * for the next re-offer.
 */
export function holdMedia(local: LocalMedia): LocalMedia {
  const direction = local.direction ?? "sendrecv";
  return {
    ...local,
    direction: directionOf(SENDS[direction], false),
    sessionVersion: local.sessionVersion + 1,
  };
}

/** The same media as a new version: what a new answer or offer that changes nothing of ours says (§8). */
export function nextVersion(local: LocalMedia): LocalMedia {
  return { ...local, sessionVersion: local.sessionVersion + 1 };
}

/** The media for a re-offer that takes the call off hold: sendrecv again, next version (RFC 3264 §8). */
export function resumeMedia(local: LocalMedia): LocalMedia {
  return { ...local, direction: "sendrecv", sessionVersion: local.sessionVersion + 1 };
}

/**
 * Answers an offer (RFC 3264 §6): accepts the first RTP/AVP audio stream that offers one of our
 * codecs, picking by our preference, and rejects every other stream with port 0. 400 when the offer
 * is not SDP we can read, 488 when there is nothing we can accept.
 */
export function answerOffer(offerText: string, local: LocalMedia): AnswerResult {
  const offer = parseDescription(offerText);
  if (typeof offer === "string") return { ok: false, status: 400, reason: offer };
  const preferences = local.codecs ?? AUDIO_CODECS;
  let index = -1;
  let choice: CodecChoice | undefined;
  for (const [i, offered] of offer.media.entries()) {
    const usable =
      isActiveRtpAudio(offered) ||
      (offered.protocol === SRTP_PROFILE && local.srtp !== undefined && isActive(offered));
    choice = usable ? preferredCodec(offered, preferences) : undefined;
    if (choice !== undefined) {
      index = i;
      break;
    }
  }
  if (choice === undefined) {
    return { ok: false, status: 488, reason: "no audio stream offers PCMU or PCMA over RTP/AVP" };
  }
  const offered = offer.media[index] as MediaDescription;
  // RFC 4568 §7.1.1: take the first crypto line with a suite we accept, answering with our own key.
  let theirs: ReturnType<typeof cryptoOf>;
  let ours: SrtpKeyMaterial | undefined;
  for (const line of offered.crypto ?? []) {
    theirs = cryptoOf(line);
    ours = theirs === undefined ? undefined : local.srtp?.keys.find((key) => key.suite === theirs?.suite);
    if (ours !== undefined) break;
  }
  if (local.srtp?.policy === "required" && ours === undefined)
    return { ok: false, status: 488, reason: "SRTP is required and the offer has no key we can use" };
  if (offered.protocol === SRTP_PROFILE && ours === undefined)
    return { ok: false, status: 488, reason: "an RTP/SAVP offer without a crypto suite we support" };
  const remoteAddress = connectionAddress(offered, offer);
  if (remoteAddress === undefined) {
    return { ok: false, status: 400, reason: "the audio stream has no c= line" };
  }
  const telephoneEventPayloadType = telephoneEventPayloadTypeOf(offered);
  // §6.1: the answer's direction mirrors the offer's, limited by what we are willing to do
  const direction = negotiatedDirection(
    streamDirection(offered, offer),
    local.direction ?? "sendrecv",
    remoteAddress,
  );
  const accepted = audioMedia(local, [choice], telephoneEventPayloadType, direction);
  accepted.protocol = offered.protocol;
  if (ours !== undefined && theirs !== undefined)
    accepted.crypto = [{ id: theirs.id, suite: ours.suite, config: `inline:${ours.inline}` }];
  // §6: the answer has as many m= lines as the offer, in the same order
  const media = offer.media.map((m, i) => (i === index ? accepted : rejectedMedia(m)));
  return {
    ok: true,
    answer: write(sessionOf(local, media)),
    media: {
      codec: choice.codec,
      payloadType: choice.payloadType,
      // Our answer lists the one codec we chose.
      receiveFormats: [choice],
      telephoneEventPayloadType,
      remoteAddress,
      remotePort: offered.port,
      direction,
      ptime: ptimeOf(offered),
      ...(ours !== undefined && theirs !== undefined ? { srtp: { send: ours, receive: theirs.key } } : {}),
    },
  };
}

/**
 * Reads the answer to an offer we sent (RFC 3264 §7): the codec is the first one in the answer that
 * we offered; our direction is the reverse of the answer's, limited by what we offered.
 */
export function acceptAnswer(offerWeSent: string, answerText: string): AcceptResult {
  const offer = parseDescription(offerWeSent);
  if (typeof offer === "string") return { ok: false, reason: `our offer: ${offer}` };
  const answer = parseDescription(answerText);
  if (typeof answer === "string") return { ok: false, reason: answer };
  if (answer.media.length !== offer.media.length) {
    return {
      ok: false,
      reason: `the answer has ${answer.media.length} m= lines for the offer's ${offer.media.length}`,
    };
  }
  const index = offer.media.findIndex((media) => media.type === "audio" && isActive(media));
  if (index < 0) return { ok: false, reason: "our offer has no audio stream" };
  const offered = offer.media[index] as MediaDescription;
  const answered = answer.media[index] as MediaDescription;
  if (answered.port === 0) return { ok: false, reason: "the audio stream was rejected" };
  if (answered.type !== "audio" || answered.protocol !== offered.protocol) {
    return { ok: false, reason: `the answer's m= line ${index + 1} is not ${offered.protocol} audio` };
  }
  // RFC 4568 §7.1.2: the answer's crypto line names the one of ours it took, by tag, with its key.
  const answeredCrypto = answered.crypto?.map(cryptoOf).find((crypto) => crypto !== undefined);
  const ourCrypto = offered.crypto?.map(cryptoOf).find((crypto) => crypto?.id === answeredCrypto?.id);
  const srtp =
    answeredCrypto !== undefined && ourCrypto !== undefined && ourCrypto.suite === answeredCrypto.suite
      ? { send: ourCrypto.key, receive: answeredCrypto.key }
      : undefined;
  if (srtp === undefined && offered.protocol === SRTP_PROFILE)
    return { ok: false, reason: "SRTP is required and the answer has no key for it" };
  const offeredCodecs = payloadTypesOf(offered).map((payloadType) => codecOf(offered, payloadType));
  const receiveFormats: CodecChoice[] = [];
  for (const payloadType of payloadTypesOf(answered)) {
    const codec = codecOf(answered, payloadType);
    if (codec !== undefined && offeredCodecs.includes(codec)) receiveFormats.push({ codec, payloadType });
  }
  const choice = receiveFormats[0];
  if (choice === undefined) return { ok: false, reason: "the answer has none of the codecs we offered" };
  const remoteAddress = connectionAddress(answered, answer);
  if (remoteAddress === undefined) return { ok: false, reason: "the audio stream has no c= line" };
  const offeredTelephoneEvents = telephoneEventPayloadTypeOf(offered) !== undefined;
  return {
    ok: true,
    media: {
      codec: choice.codec,
      payloadType: choice.payloadType,
      receiveFormats,
      telephoneEventPayloadType: offeredTelephoneEvents ? telephoneEventPayloadTypeOf(answered) : undefined,
      remoteAddress,
      remotePort: answered.port,
      direction: negotiatedDirection(
        streamDirection(answered, answer),
        streamDirection(offered, offer),
        remoteAddress,
      ),
      ptime: ptimeOf(answered),
      ...(srtp === undefined ? {} : { srtp }),
    },
  };
}

/**
 * An a=crypto line we can use: a known suite and one inline key of its length (master key and salt),
 * no lifetime or MKI games.
 */
function cryptoOf(crypto: {
  id: number;
  suite: string;
  config: string;
  sessionConfig?: string;
}): { id: number; suite: SrtpSuite; key: SrtpKeyMaterial } | undefined {
  const suite = SRTP_SUITES.find((known) => known === crypto.suite);
  const inline = /^inline:([A-Za-z0-9+/]+={0,2})(?:\|.*)?$/.exec(crypto.config)?.[1];
  if (suite === undefined || inline === undefined || crypto.sessionConfig !== undefined) return undefined;
  if (Buffer.from(inline, "base64").length !== inlineKeyLength(suite)) return undefined;
  return { id: crypto.id, suite, key: { suite, inline } };
}

interface CodecChoice {
  codec: AudioCodec;
  payloadType: number;
}

/**
 * sdp-transform parses whatever lines it recognises and skips the rest, so a description is checked
 * here: v=0, o=, and m= lines with media, port, protocol and formats (RFC 4566 §5). Returns the
 * reason when it is not usable.
 */
function parseDescription(text: string): SessionDescription | string {
  const description = parse(text);
  if (description.version !== 0) return "not an SDP description: no v=0 line";
  if (description.origin === undefined) return "the description has no o= line";
  for (const [i, m] of description.media.entries()) {
    const wellFormed =
      typeof m.type === "string" &&
      m.type.length > 0 &&
      Number.isInteger(m.port) &&
      m.port <= 65535 &&
      typeof m.protocol === "string" &&
      m.protocol.length > 0 &&
      formatsOf(m).length > 0;
    if (!wellFormed) return `m= line ${i + 1} is malformed`;
  }
  return description;
}

function sessionOf(local: LocalMedia, media: MediaDescription[]): SessionDescription {
  const ipVersion = isIPv6(local.address) ? 6 : 4;
  return {
    version: 0,
    origin: {
      username: "-",
      sessionId: local.sessionId,
      sessionVersion: local.sessionVersion,
      netType: "IN",
      ipVer: ipVersion,
      address: local.address,
    },
    name: "-",
    connection: { version: ipVersion, ip: local.address },
    timing: { start: 0, stop: 0 },
    media,
  };
}

function audioMedia(
  local: LocalMedia,
  codecs: readonly CodecChoice[],
  telephoneEventPayloadType: number | undefined,
  direction: Direction,
): MediaDescription {
  const media: MediaDescription = {
    type: "audio",
    port: local.port,
    protocol: RTP_PROFILE,
    payloads: codecs.map((c) => c.payloadType).join(" "),
    rtp: codecs.map((c) => ({ payload: c.payloadType, codec: c.codec, rate: CLOCK_RATE })),
    fmtp: [],
    ptime: PTIME,
    direction,
  };
  if (telephoneEventPayloadType !== undefined) {
    media.payloads += ` ${telephoneEventPayloadType}`;
    media.rtp.push({ payload: telephoneEventPayloadType, codec: "telephone-event", rate: CLOCK_RATE });
    media.fmtp.push({ payload: telephoneEventPayloadType, config: TELEPHONE_EVENTS });
  }
  return media;
}

/** A declined stream: port 0, the offered formats kept because an m= line needs at least one (RFC 3264 §6). */
function rejectedMedia(offered: MediaDescription): MediaDescription {
  return {
    type: offered.type,
    port: 0,
    protocol: offered.protocol,
    payloads: formatsOf(offered),
    rtp: [],
    fmtp: [],
  };
}

function isActiveRtpAudio(media: MediaDescription): boolean {
  return media.type === "audio" && isActive(media) && media.protocol === RTP_PROFILE;
}

function isActive(media: MediaDescription): boolean {
  return media.port !== 0;
}

/** The m= line's formats; sdp-transform turns a lone numeric format into a number. */
function formatsOf(media: MediaDescription): string {
  return media.payloads === undefined ? "" : String(media.payloads).trim();
}

function payloadTypesOf(media: MediaDescription): number[] {
  const payloadTypes: number[] = [];
  for (const format of formatsOf(media).split(/\s+/)) {
    const payloadType = Number(format);
    if (Number.isInteger(payloadType) && payloadType >= 0 && payloadType <= 127)
      payloadTypes.push(payloadType);
  }
  return payloadTypes;
}

/** PT 0 and 8 are G.711 by assignment (RFC 3551 §6); any other needs an rtpmap of PCMU or PCMA, 8000 Hz, mono. */
function codecOf(media: MediaDescription, payloadType: number): AudioCodec | undefined {
  if (payloadType === STATIC_PAYLOAD_TYPES.PCMU) return "PCMU";
  if (payloadType === STATIC_PAYLOAD_TYPES.PCMA) return "PCMA";
  const rtpmap = media.rtp.find((r) => r.payload === payloadType);
  if (rtpmap === undefined || rtpmap.rate !== CLOCK_RATE) return undefined;
  if (rtpmap.encoding !== undefined && rtpmap.encoding !== 1) return undefined;
  const name = String(rtpmap.codec).toUpperCase();
  return name === "PCMU" || name === "PCMA" ? name : undefined;
}

function preferredCodec(
  media: MediaDescription,
  preferences: readonly AudioCodec[],
): CodecChoice | undefined {
  const offered = payloadTypesOf(media);
  for (const codec of preferences) {
    const payloadType = offered.find((pt) => codecOf(media, pt) === codec);
    if (payloadType !== undefined) return { codec, payloadType };
  }
  return undefined;
}

/** The telephone-event format at our clock rate (RFC 4733 §7.1.1: its rate is the audio codec's). */
function telephoneEventPayloadTypeOf(media: MediaDescription): number | undefined {
  return payloadTypesOf(media).find((payloadType) => {
    const rtpmap = media.rtp.find((r) => r.payload === payloadType);
    return (
      rtpmap !== undefined &&
      String(rtpmap.codec).toLowerCase() === "telephone-event" &&
      rtpmap.rate === CLOCK_RATE
    );
  });
}

/** The media-level c= overrides the session-level one (RFC 4566 §5.7). */
function connectionAddress(media: MediaDescription, session: SessionDescription): string | undefined {
  const connection = media.connection ?? session.connection;
  if (connection === undefined || typeof connection.ip !== "string" || connection.ip.length === 0) {
    return undefined;
  }
  return connection.ip;
}

/** A media-level direction overrides the session-level one; neither means sendrecv (RFC 3264 §5.1). */
function streamDirection(media: MediaDescription, session: SessionDescription): Direction {
  return media.direction ?? session.direction ?? "sendrecv";
}

/**
 * Our direction, given the remote's and our own wish: we send only if they receive, and receive only
 * if they send (RFC 3264 §6.1). A remote c= of 0.0.0.0 is the RFC 2543 way of holding (RFC 3264 §8.4),
 * which leaves nothing to send to, so the stream is inactive.
 */
function negotiatedDirection(remote: Direction, wanted: Direction, remoteAddress: string): Direction {
  if (remoteAddress === "0.0.0.0") return "inactive";
  return directionOf(RECEIVES[remote] && SENDS[wanted], SENDS[remote] && RECEIVES[wanted]);
}

function directionOf(sends: boolean, receives: boolean): Direction {
  if (sends) return receives ? "sendrecv" : "sendonly";
  return receives ? "recvonly" : "inactive";
}

function ptimeOf(media: MediaDescription): number {
  return typeof media.ptime === "number" && media.ptime > 0 ? media.ptime : PTIME;
}
