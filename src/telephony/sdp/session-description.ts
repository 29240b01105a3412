// Long because it is one concern, offer/answer for one audio stream: the offer, the answer and the rules both read.
/**
 * SDP offer/answer (RFC 3264) for one audio stream: PCMU (PT 0) and PCMA (PT 8); G.722 (PT 9, whose
 * RTP clock is 8000 although it samples at 16 kHz: RFC 3551 §4.5.2); Opus (a dynamic PT,
 * opus/48000/2 with its fmtp, ptime and maxptime: RFC 7587 §6 and §7); RFC 4733 telephone-events at
 * the clock rate of the codec they go with; 20 ms packets, with the stream directions that put calls
 * on hold (§8.4), and SRTP keys by SDES (RFC 4568): `required` offers RTP/SAVP with a=crypto,
 * `optional` RTP/AVP with a=crypto (either answer is taken). Parsing and writing are sdp-transform's;
 * this module checks what it parsed and negotiates.
 */
import { isIPv6 } from "node:net";
import { type MediaDescription, parse, parseParams, type SessionDescription, write } from "sdp-transform";
import type { AudioCodecName } from "../media/rtp/rtp-stream.js";
import {
  inlineKeyLength,
  SRTP_SUITES,
  type SrtpKeyMaterial,
  type SrtpSuite,
} from "../media/rtp/srtp-suites.js";

/** The codecs the media path carries, by their SDP encoding names. */
export type AudioCodec = AudioCodecName;

/** The direction attribute of a stream (RFC 3264 §5.1); absent means sendrecv. */
export type Direction = "sendrecv" | "sendonly" | "recvonly" | "inactive";

export interface LocalMedia {
  /** Where we receive RTP: the c= address (IPv4 or IPv6) and the m= port. */
  address: string;
  port: number;
  /** The codecs we accept, most preferred first, each once; default AUDIO_CODECS (PCMU then PCMA). */
  codecs?: readonly AudioCodec[];
  /**
   * The most we want to receive in Opus, in bits per second (maxaveragebitrate, RFC 7587 §6.1: 6000
   * to 510000); default 20000, the top of the range RFC 7587 §3.1.1 gives wideband speech.
   */
  opusMaxAverageBitrate?: number;
  /**
   * Whether our offers list RFC 4733 telephone-events (default true), one per clock rate of the
   * codecs offered; without them a peer sends keys by SIP INFO or as tones. Answers list the one at
   * the chosen codec's rate whenever the offer has it, else the offer's first (for the peer's keys
   * alone: see answerOffer).
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

/**
 * What the peer's fmtp says about an Opus format (RFC 7587 §6.1): how it wants to receive, which our
 * encoder honours, and what it sends. Parameters it left out have their RFC defaults; a value outside
 * the range the RFC allows counts as left out.
 */
export interface OpusParameters {
  /** useinbandfec: its decoder uses in-band FEC, so we send it (default 0, false). */
  readonly useInbandFec: boolean;
  /** maxaveragebitrate: the most it wants to receive, bits per second; undefined when it did not say. */
  readonly maxAverageBitrate: number | undefined;
  /** stereo: it prefers to receive stereo (default 0, mono). */
  readonly stereo: boolean;
  /** sprop-stereo: it is likely to send stereo (default 0). */
  readonly spropStereo: boolean;
  /** maxplaybackrate: the highest sample rate it plays out, Hz; we need not encode above it (default 48000). */
  readonly maxPlaybackRate: number;
}

/** An audio format both sides agreed to: a codec under a payload type. */
export interface NegotiatedFormat {
  readonly codec: AudioCodec;
  readonly payloadType: number;
  /** Its RTP clock rate: 8000 for PCMU, PCMA and G.722 (RFC 3551 §4.5.2), 48000 for Opus (RFC 7587 §4.1). */
  readonly clockRate: number;
  /** For Opus only: the peer's fmtp for this payload type. */
  readonly opus?: OpusParameters;
}

/** A telephone-event format (RFC 4733 §7.1.1): its payload type and its clock rate, that of the codec it goes with. */
export interface TelephoneEventFormat {
  readonly payloadType: number;
  readonly clockRate: number;
}

/** The format we send (codec, payloadType, clockRate and, for Opus, the peer's fmtp), and the rest. */
export interface NegotiatedMedia extends NegotiatedFormat {
  /**
   * Every audio format of the answer that we have, in its order (the first is what we send): the far
   * end may send any of them, switching packet by packet (RFC 3264 §6.1 and §7), each at its own clock rate.
   */
  receiveFormats: readonly NegotiatedFormat[];
  /**
   * The telephone-event payload type at the clock rate of what we send, which our keys go out with;
   * undefined when the remote listed none at that rate (RFC 4733 §2.1: an event's timestamps are the audio's).
   */
  telephoneEventPayloadType: number | undefined;
  /** Every telephone-event format agreed, each with its clock rate: the far end's keys may come in any of them. */
  telephoneEvents: readonly TelephoneEventFormat[];
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

/** The RTP clock rates of the codecs this module has. */
type ClockRate = 8000 | 48000;

interface CodecDefinition {
  /** Its encoding name in an rtpmap, matched case-insensitively (RFC 4855 §3). */
  readonly name: string;
  readonly clockRate: ClockRate;
  /** The channels its rtpmap names: always 2 for Opus, whatever it carries (RFC 7587 §7). */
  readonly channels: number;
  /** The payload type our offers give it: its static one (RFC 3551 §6, Table 4) or a dynamic one. */
  readonly payloadType: number;
  /** Whether that payload type is its by assignment, so that an offer needs no rtpmap for it. */
  readonly isStatic: boolean;
}

const CODECS: Readonly<Record<AudioCodec, CodecDefinition>> = {
  PCMU: { name: "PCMU", clockRate: 8000, channels: 1, payloadType: 0, isStatic: true },
  PCMA: { name: "PCMA", clockRate: 8000, channels: 1, payloadType: 8, isStatic: true },
  G722: { name: "G722", clockRate: 8000, channels: 1, payloadType: 9, isStatic: true },
  opus: { name: "opus", clockRate: 48000, channels: 2, payloadType: 111, isStatic: false },
};
/** G.711, PCMU first: what an offer or answer takes when its LocalMedia names no codecs. */
export const AUDIO_CODECS: readonly AudioCodec[] = ["PCMU", "PCMA"];
/**
 * Every codec this module negotiates, in the order calls prefer by default (telephony.ts, which
 * names the codecs of every call): Opus, then G.722, then G.711.
 */
export const WIDEBAND_AUDIO_CODECS: readonly AudioCodec[] = ["opus", "G722", "PCMU", "PCMA"];
/** The dynamic payload type our offers give telephone-event at each clock rate. */
const OFFERED_TELEPHONE_EVENT_PAYLOAD_TYPES: Readonly<Record<ClockRate, number>> = { 8000: 101, 48000: 110 };
/** DTMF 0-9 * # A-D and flash (RFC 4733 §3.2). */
const TELEPHONE_EVENTS = "0-16";
const PTIME = 20;
/**
 * The longest Opus packet we ask for (a=maxptime, RFC 7587 §7; 120 ms when unsaid): one 20 ms frame,
 * so that a lost packet is the 20 ms in-band FEC and concealment cover.
 */
const OPUS_MAX_PTIME = 20;
/** RFC 7587 §6.1's range for maxaveragebitrate. */
const OPUS_BITRATE_RANGE = { min: 6000, max: 510000 };
const DEFAULT_OPUS_MAX_AVERAGE_BITRATE = 20000;
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

/** The codec an rtpmap encoding name or a setting names, case-insensitively (RFC 4855 §3). */
export function audioCodecNamed(name: string): AudioCodec | undefined {
  const wanted = name.toLowerCase();
  return WIDEBAND_AUDIO_CODECS.find((codec) => CODECS[codec].name.toLowerCase() === wanted);
}

/**
 * The complete offer for our audio stream, CRLF line endings. A re-offer (RFC 3264 §8) is another
 * createOffer with the same sessionId and sessionVersion + 1; holdMedia and resumeMedia make those.
 */
export function createOffer(local: LocalMedia): string {
  const codecs = local.codecs ?? AUDIO_CODECS;
  if (codecs.length === 0) throw new RangeError("an offer needs at least one codec");
  if (new Set(codecs).size !== codecs.length) throw new RangeError("an offer names each codec once");
  const formats = codecs.map((codec) => ({ codec, payloadType: CODECS[codec].payloadType }));
  // RFC 4733 §7.1.1: one telephone-event per clock rate, in the order the codecs bring them
  const clockRates = [...new Set(codecs.map((codec) => CODECS[codec].clockRate))];
  const telephoneEvents =
    local.telephoneEvents === false
      ? []
      : clockRates.map((clockRate) => ({
          payloadType: OFFERED_TELEPHONE_EVENT_PAYLOAD_TYPES[clockRate],
          clockRate,
        }));
  const media = audioMedia(local, formats, telephoneEvents, local.direction ?? "sendrecv");
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
 * codecs, picking by our preference under the offer's payload type, with the offer's telephone-event
 * at that codec's clock rate (or at another, to receive keys on), and rejects every other stream with
 * port 0. 400 when the offer is not SDP we can read, 488 when there is nothing we can accept.
 */
export function answerOffer(offerText: string, local: LocalMedia): AnswerResult {
  const offer = parseDescription(offerText);
  if (typeof offer === "string") return { ok: false, status: 400, reason: offer };
  const preferences = local.codecs ?? AUDIO_CODECS;
  let index = -1;
  let choice: NegotiatedFormat | undefined;
  for (const [i, offered] of offer.media.entries()) {
    const usable =
      isActiveRtpAudio(offered) ||
      (offered.protocol === SRTP_PROFILE && local.srtp !== undefined && isActive(offered));
    choice = usable ? preferredFormat(offered, preferences) : undefined;
    if (choice !== undefined) {
      index = i;
      break;
    }
  }
  if (choice === undefined) {
    const profiles = local.srtp === undefined ? RTP_PROFILE : `${RTP_PROFILE} or ${SRTP_PROFILE}`;
    return {
      ok: false,
      status: 488,
      reason: `no audio stream offers ${alternatives(preferences)} over ${profiles}`,
    };
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
  // RFC 4733 §7.1.1: the telephone-event at the rate of the codec it goes with, which our keys
  // take. An offer with telephone-events at other rates alone (baresip 1.0 lists telephone-event/8000
  // beside Opus) still has its first answered, for the peer's keys only: events share the audio's
  // timestamp base whatever their rtpmap says (§2.1), and without one in the answer such a peer
  // sends its keys no way at all. Ours go to it as tones.
  const offeredEvents = telephoneEventsOf(offered);
  const telephoneEvent = offeredEvents.find((event) => event.clockRate === choice.clockRate);
  const receivedEvent = telephoneEvent ?? offeredEvents[0];
  const telephoneEvents = receivedEvent === undefined ? [] : [receivedEvent];
  // §6.1: the answer's direction mirrors the offer's, limited by what we are willing to do
  const direction = negotiatedDirection(
    streamDirection(offered, offer),
    local.direction ?? "sendrecv",
    remoteAddress,
  );
  const accepted = audioMedia(local, [choice], telephoneEvents, direction);
  accepted.protocol = offered.protocol;
  if (ours !== undefined && theirs !== undefined)
    accepted.crypto = [{ id: theirs.id, suite: ours.suite, config: `inline:${ours.inline}` }];
  // §6: the answer has as many m= lines as the offer, in the same order
  const media = offer.media.map((m, i) => (i === index ? accepted : rejectedMedia(m)));
  return {
    ok: true,
    answer: write(sessionOf(local, media)),
    media: {
      ...choice,
      // Our answer lists the one codec we chose, and at most one telephone-event.
      receiveFormats: [choice],
      telephoneEventPayloadType: telephoneEvent?.payloadType,
      telephoneEvents,
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
 * we offered, and we receive every one of ours it lists; its telephone-events are taken at the rates
 * we offered them; our direction is the reverse of the answer's, limited by what we offered.
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
  const receiveFormats: NegotiatedFormat[] = [];
  for (const payloadType of payloadTypesOf(answered)) {
    const format = formatOf(answered, payloadType);
    if (format !== undefined && offeredCodecs.includes(format.codec)) receiveFormats.push(format);
  }
  const choice = receiveFormats[0];
  if (choice === undefined) return { ok: false, reason: "the answer has none of the codecs we offered" };
  const remoteAddress = connectionAddress(answered, answer);
  if (remoteAddress === undefined) return { ok: false, reason: "the audio stream has no c= line" };
  // The answer's telephone-events at the rates we offered them; we send at the rate of what we send.
  const offeredEventRates = telephoneEventsOf(offered).map((event) => event.clockRate);
  const telephoneEvents = telephoneEventsOf(answered).filter((event) =>
    offeredEventRates.includes(event.clockRate),
  );
  return {
    ok: true,
    media: {
      ...choice,
      receiveFormats,
      telephoneEventPayloadType: telephoneEvents.find((event) => event.clockRate === choice.clockRate)
        ?.payloadType,
      telephoneEvents,
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

/** Our m= line: the formats, then the telephone-events, each with its rtpmap, and our fmtp for Opus. */
function audioMedia(
  local: LocalMedia,
  formats: readonly { readonly codec: AudioCodec; readonly payloadType: number }[],
  telephoneEvents: readonly TelephoneEventFormat[],
  direction: Direction,
): MediaDescription {
  const media: MediaDescription = {
    type: "audio",
    port: local.port,
    protocol: RTP_PROFILE,
    payloads: [...formats, ...telephoneEvents].map((format) => format.payloadType).join(" "),
    rtp: [],
    fmtp: [],
    ptime: PTIME,
    direction,
  };
  for (const { codec, payloadType } of formats) {
    const { name, clockRate, channels } = CODECS[codec];
    media.rtp.push({
      payload: payloadType,
      codec: name,
      rate: clockRate,
      ...(channels > 1 ? { encoding: channels } : {}),
    });
    if (codec === "opus") {
      media.fmtp.push({ payload: payloadType, config: ourOpusParameters(local) });
      media.maxptime = OPUS_MAX_PTIME;
    }
  }
  for (const { payloadType, clockRate } of telephoneEvents) {
    media.rtp.push({ payload: payloadType, codec: "telephone-event", rate: clockRate });
    media.fmtp.push({ payload: payloadType, config: TELEPHONE_EVENTS });
  }
  return media;
}

/** Our Opus fmtp (RFC 7587 §6.1): we decode in-band FEC, and the most we want to receive. */
function ourOpusParameters(local: LocalMedia): string {
  const bitrate = local.opusMaxAverageBitrate ?? DEFAULT_OPUS_MAX_AVERAGE_BITRATE;
  if (!Number.isInteger(bitrate) || bitrate < OPUS_BITRATE_RANGE.min || bitrate > OPUS_BITRATE_RANGE.max)
    throw new RangeError(
      `opusMaxAverageBitrate must be a whole number from ${OPUS_BITRATE_RANGE.min} to ${OPUS_BITRATE_RANGE.max}`,
    );
  return `useinbandfec=1;maxaveragebitrate=${bitrate}`;
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

/**
 * A payload type's codec: PT 0, 8 and 9 are PCMU, PCMA and G.722 by assignment, rtpmap or not (RFC
 * 3551 §6); any other needs an rtpmap of one of our codecs at its clock rate and channels.
 */
function codecOf(media: MediaDescription, payloadType: number): AudioCodec | undefined {
  const assigned = WIDEBAND_AUDIO_CODECS.find(
    (codec) => CODECS[codec].isStatic && CODECS[codec].payloadType === payloadType,
  );
  if (assigned !== undefined) return assigned;
  const rtpmap = media.rtp.find((r) => r.payload === payloadType);
  if (rtpmap === undefined) return undefined;
  const codec = audioCodecNamed(String(rtpmap.codec));
  if (codec === undefined || rtpmap.rate !== CODECS[codec].clockRate) return undefined;
  // RFC 4566 §6: the channels are 1 when the rtpmap leaves them out
  return Number(rtpmap.encoding ?? 1) === CODECS[codec].channels ? codec : undefined;
}

/** A payload type as an agreed format, with the peer's fmtp for Opus; undefined when it is none of our codecs. */
function formatOf(media: MediaDescription, payloadType: number): NegotiatedFormat | undefined {
  const codec = codecOf(media, payloadType);
  if (codec === undefined) return undefined;
  const format = { codec, payloadType, clockRate: CODECS[codec].clockRate };
  return codec === "opus" ? { ...format, opus: opusParametersOf(media, payloadType) } : format;
}

/** The peer's Opus fmtp (RFC 7587 §6.1); names are case-insensitive (RFC 4855 §3), unknown ones ignored. */
export function opusParametersOf(media: MediaDescription, payloadType: number): OpusParameters {
  const config = media.fmtp.find((fmtp) => fmtp.payload === payloadType)?.config;
  const parameters = new Map(
    Object.entries(config === undefined ? {} : parseParams(config)).map(([name, value]) => [
      name.trim().toLowerCase(),
      String(value).trim(),
    ]),
  );
  const flag = (name: string) => parameters.get(name) === "1";
  const within = (name: string, min: number, max: number) => {
    const value = Number(parameters.get(name));
    return Number.isInteger(value) && value >= min && value <= max ? value : undefined;
  };
  return {
    useInbandFec: flag("useinbandfec"),
    maxAverageBitrate: within("maxaveragebitrate", OPUS_BITRATE_RANGE.min, OPUS_BITRATE_RANGE.max),
    stereo: flag("stereo"),
    spropStereo: flag("sprop-stereo"),
    maxPlaybackRate: within("maxplaybackrate", 8000, 48000) ?? 48000,
  };
}

/** The offered format of the codec we prefer most, under the payload type the offer gives it. */
function preferredFormat(
  media: MediaDescription,
  preferences: readonly AudioCodec[],
): NegotiatedFormat | undefined {
  const offered = payloadTypesOf(media);
  for (const codec of preferences) {
    const payloadType = offered.find((pt) => codecOf(media, pt) === codec);
    if (payloadType !== undefined) return formatOf(media, payloadType);
  }
  return undefined;
}

/** The telephone-event formats listed, in order, each at its clock rate (RFC 4733 §7.1.1). */
function telephoneEventsOf(media: MediaDescription): TelephoneEventFormat[] {
  const events: TelephoneEventFormat[] = [];
  for (const payloadType of payloadTypesOf(media)) {
    const rtpmap = media.rtp.find((r) => r.payload === payloadType);
    if (rtpmap === undefined || String(rtpmap.codec).toLowerCase() !== "telephone-event") continue;
    if (typeof rtpmap.rate === "number" && rtpmap.rate > 0)
      events.push({ payloadType, clockRate: rtpmap.rate });
  }
  return events;
}

/** "A, B or C". */
function alternatives(codecs: readonly AudioCodec[]): string {
  const names = codecs.map((codec) => CODECS[codec].name);
  return names.length === 1 ? names.join("") : `${names.slice(0, -1).join(", ")} or ${names.at(-1)}`;
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
