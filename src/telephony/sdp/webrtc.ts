/**
 * The session descriptions of a browser's call (WebRTC, RFC 8829 JSEP): the browser offers, werift
 * answers inside the media thread, and the answer is put right here before it goes back: our own host
 * candidates, and ICE-lite said at session level. What the stream is told of the negotiation is read
 * from the two descriptions as for a telephone call.
 */
import { isIPv6 } from "node:net";
import { type MediaDescription, parse, type SessionDescription, write } from "sdp-transform";
import type { RtpSessionConfiguration } from "../media/rtp/rtp-stream.js";
import { opusParametersOf } from "./session-description.js";

/** Why an offer cannot be answered. */
export class WebRtcOfferError extends Error {
  override name = "WebRtcOfferError";
}

/** RFC 8445 §5.1.2.1's priority of a host candidate, type preference 126, local preference 65535. */
const HOST_PRIORITY = 2130706431;

/** The offer's audio section, checked for what a browser's call needs: Opus, ICE and DTLS. */
export function offeredAudio(offer: string): MediaDescription {
  let session: SessionDescription;
  try {
    session = parse(offer);
  } catch {
    throw new WebRtcOfferError("the offer is not a session description");
  }
  if (session.version !== 0) throw new WebRtcOfferError("the offer is not a session description");
  const audio = (session.media ?? []).find((media) => media.type === "audio" && media.port !== 0);
  if (audio === undefined) throw new WebRtcOfferError("the offer has no audio");
  if (!audio.rtp.some((format) => format.codec.toLowerCase() === "opus" && format.rate === 48000))
    throw new WebRtcOfferError("the offer's audio has no Opus");
  // A page without a microphone would be hung up by the media timeout: refused now, with the reason.
  const direction = audio.direction ?? session.direction ?? "sendrecv";
  if (direction !== "sendrecv" && direction !== "sendonly")
    throw new WebRtcOfferError("the offer sends no audio (the page needs a microphone)");
  if (
    (audio.iceUfrag ?? session.iceUfrag) === undefined ||
    (audio.fingerprint ?? session.fingerprint) === undefined
  )
    throw new WebRtcOfferError("the offer has no ICE credentials or no DTLS fingerprint");
  return audio;
}

/**
 * Werift's answer as the browser gets it: its candidates replaced by one host candidate per address
 * the browser may reach us at (werift lists every local interface, whatever it was bound to), on the
 * port it listens on, and `a=ice-lite` at session level (werift writes it in the media section,
 * where RFC 8839 §5.3 does not have it and Chromium ignores it).
 */
export function browserAnswer(answer: string, addresses: readonly string[], port: number): string {
  const session = parse(answer);
  session.icelite = "ice-lite";
  for (const media of session.media) {
    delete (media as { icelite?: string }).icelite;
    if (media.port === 0) continue;
    media.port = port;
    const first = addresses[0] ?? "0.0.0.0";
    media.connection = { version: isIPv6(first) ? 6 : 4, ip: first };
    media.candidates = addresses.map((ip, index) => ({
      foundation: String(index + 1),
      component: 1,
      transport: "udp",
      priority: HOST_PRIORITY - index,
      ip,
      port,
      type: "host",
    }));
    media.endOfCandidates = "end-of-candidates";
  }
  return write(session);
}

/**
 * What the stream is told: Opus under the answer's payload type both ways, the browser's keys as
 * telephone-events (none sent to it: werift's sender gives every packet the audio's payload type),
 * and the browser's Opus fmtp from the offer. The address is the transport's business, not ours.
 */
export function browserMediaConfiguration(offer: string, answer: string): RtpSessionConfiguration {
  const answered = parse(answer).media.find((media) => media.type === "audio" && media.port !== 0);
  const opus = answered?.rtp.find((format) => format.codec.toLowerCase() === "opus");
  if (answered === undefined || opus === undefined) throw new WebRtcOfferError("no Opus was agreed");
  const events = answered.rtp
    .filter((format) => format.codec.toLowerCase() === "telephone-event")
    .map((format) => format.payload);
  const opusOffered = opusParametersOf(offeredAudio(offer), opus.payload);
  return {
    codec: "opus",
    payloadType: opus.payload,
    receiveFormats: [{ codec: "opus", payloadType: opus.payload }],
    receiveTelephoneEventPayloadTypes: events,
    opus: {
      maxAverageBitrate: opusOffered.maxAverageBitrate,
      useInbandFec: opusOffered.useInbandFec,
      maxPlaybackRate: opusOffered.maxPlaybackRate,
    },
    remoteAddress: "0.0.0.0",
    remotePort: 9,
    direction: "sendrecv",
  };
}
