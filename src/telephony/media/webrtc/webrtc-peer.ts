/**
 * A browser's call on a media thread: werift (WebRTC in TypeScript) as an ICE-lite agent that runs
 * ICE, DTLS and SRTP, under an RtpSession like every telephone call's, which it carries RTP for. The
 * session's audio, jitter buffer, Opus FEC, keys (the page's buttons send RFC 4733 events), mixing
 * and recording are the same as a phone's; werift only moves packets.
 *
 * werift answers RTCP itself (receiver and sender reports for the DTLS-SRTP transport): the
 * session's own reports are not sent, and the browser's are not read by it.
 */
import type dgram from "node:dgram";
import { EventEmitter } from "node:events";
import type { RTCPeerConnection, RTCRtpTransceiver, RtpPacket } from "werift";
import {
  browserAnswer,
  browserMediaConfiguration,
  offeredAudio,
  WebRtcOfferError,
} from "../../sdp/webrtc.js";
import { MediaError } from "../media-error.js";
import type { CarriedPorts, DatagramPort } from "../rtp/rtp-session.js";
import type { RtpSessionConfiguration } from "../rtp/rtp-stream.js";

export interface WebRtcPeerOptions {
  /** The browser's offer, its candidates gathered. */
  readonly offer: string;
  /** Where werift's ICE socket binds. */
  readonly bindAddress: string;
  /** The UDP port it binds, the first of a pair reserved by the caller (given back through `released`). */
  readonly port: number;
  /** The addresses the browser may reach us at: our host candidates. */
  readonly candidateAddresses: readonly string[];
  /** Told once the session has closed the peer (the port is free again). */
  readonly released: () => void;
}

/** Chromium's and Firefox's payload types: an answer keeps the offer's (RFC 3264 §6.1). */
const OPUS_PAYLOAD_TYPE = 111;
/** telephone-event at Opus's clock (Chromium) and at 8000 (Chromium picks it too; Firefox offers only it). */
const TELEPHONE_EVENT_PAYLOAD_TYPES = { 48000: 110, 8000: 126 } as const;
const OPUS_CLOCK_RATE = 48000;

/** Where received packets say they came from: the session wants a source; the transport knows it. */
const BROWSER_SOURCE: dgram.RemoteInfo = { address: "0.0.0.0", port: 9, family: "IPv4", size: 0 };

/** Throws MEDIA_ERR_OFFER, with the reason, for an offer a browser's call cannot be made of. */
export function checkOffer(offer: string): void {
  try {
    offeredAudio(offer);
  } catch (error) {
    if (error instanceof WebRtcOfferError) throw new MediaError("MEDIA_ERR_OFFER", error.message);
    throw error;
  }
}

type Werift = typeof import("werift");
let werift: Promise<Werift> | undefined;

/** One datagram port of the session, whose packets werift carries (or, for RTCP, drops). */
class CarriedPort extends EventEmitter implements DatagramPort {
  constructor(private readonly sendPacket: (packet: Buffer) => void) {
    super();
  }

  send(
    buffer: Buffer,
    offset: number,
    length: number,
    _port: number,
    _address: string,
    sent?: () => void,
  ): void {
    this.sendPacket(buffer.subarray(offset, offset + length));
    sent?.();
  }

  close(closed?: () => void): void {
    this.removeAllListeners("message");
    closed?.();
  }
}

export type WebRtcPeerEvents = {
  /** The browser left (DTLS closed) or can no longer be reached (ICE failed). */
  closed: [reason: string];
};

export class WebRtcPeer extends EventEmitter<WebRtcPeerEvents> {
  /** The answer to send back to the browser. */
  readonly answer: string;
  /** What the session is configured with. */
  readonly configuration: RtpSessionConfiguration;
  /** What the session sends and receives through. */
  readonly ports: CarriedPorts;
  readonly #pc: RTCPeerConnection;
  /** Set once the peer is closing (by either end): its packets are no longer passed on. */
  #closing: Promise<void> | undefined;

  /** Answers the browser's offer; throws MEDIA_ERR_OFFER for one that cannot be answered. */
  static async answer(options: WebRtcPeerOptions): Promise<WebRtcPeer> {
    checkOffer(options.offer);
    // Loaded on the first browser call: most threads never carry one.
    werift ??= import("werift");
    const { RTCPeerConnection, RTCRtpCodecParameters } = await werift;
    const pc = new RTCPeerConnection({
      iceLite: true,
      // werift's default asks Google's STUN server for a reflexive candidate: none here, we say ours.
      iceServers: [],
      iceUseIpv6: false,
      // werift wants a range of two or more: the pair reserved (it binds the first it can).
      icePortRange: [options.port, options.port + 1],
      iceInterfaceAddresses: { udp4: options.bindAddress, udp6: undefined },
      codecs: {
        audio: [
          new RTCRtpCodecParameters({
            mimeType: "audio/opus",
            clockRate: OPUS_CLOCK_RATE,
            channels: 2,
            payloadType: OPUS_PAYLOAD_TYPE,
          }),
          ...Object.entries(TELEPHONE_EVENT_PAYLOAD_TYPES).map(
            ([clockRate, payloadType]) =>
              new RTCRtpCodecParameters({
                mimeType: "audio/telephone-event",
                clockRate: Number(clockRate),
                payloadType,
              }),
          ),
        ],
      },
      headerExtensions: { audio: [], video: [] },
    });
    try {
      let transceiver: RTCRtpTransceiver | undefined;
      // The browser's track comes with its offer, before the peer below exists to take its packets.
      const received: { listener: (packet: RtpPacket) => void } = { listener: () => {} };
      pc.onTransceiverAdded.subscribe((added) => {
        if (added.kind !== "audio" || transceiver !== undefined) return;
        transceiver = added;
        added.setDirection("sendrecv");
        added.onTrack.subscribe((track) => {
          track.onReceiveRtp.subscribe((packet) => received.listener(packet));
        });
      });
      await pc.setRemoteDescription({ type: "offer", sdp: options.offer });
      await pc.setLocalDescription(await pc.createAnswer());
      const local = pc.localDescription?.sdp;
      if (local === undefined || transceiver === undefined)
        throw new MediaError("MEDIA_ERR_OFFER", "werift made no answer with audio");
      // The port werift bound (the pair's first, or its second when the first was taken meanwhile).
      const port = boundPort(local) ?? options.port;
      const answer = browserAnswer(local, options.candidateAddresses, port);
      const configuration = browserMediaConfiguration(options.offer, answer);
      return new WebRtcPeer(pc, transceiver, received, answer, configuration, options);
    } catch (error) {
      await pc.close().catch(() => undefined);
      if (error instanceof MediaError) throw error;
      throw new MediaError(
        "MEDIA_ERR_OFFER",
        `the offer could not be answered: ${(error as Error).message}`,
        {
          cause: error,
        },
      );
    }
  }

  private constructor(
    pc: RTCPeerConnection,
    transceiver: RTCRtpTransceiver,
    received: { listener: (packet: RtpPacket) => void },
    answer: string,
    configuration: RtpSessionConfiguration,
    options: WebRtcPeerOptions,
  ) {
    super();
    this.#pc = pc;
    this.answer = answer;
    this.configuration = configuration;
    const rtp = new CarriedPort((packet) => void transceiver.sender.sendRtp(packet));
    // The session's RTCP stays here (werift reports on the transport itself).
    const rtcp = new CarriedPort(() => {});
    received.listener = (packet) => {
      if (this.#closing === undefined) rtp.emit("message", packet.serialize(), BROWSER_SOURCE);
    };
    pc.connectionStateChange.subscribe((state) => {
      if (state === "failed") this.#end("the browser could not be reached (ICE failed)");
    });
    // A page that closes its connection sends a DTLS close_notify: werift closes the DTLS transport
    // but leaves the connection's state as it was.
    transceiver.dtlsTransport.onStateChange.subscribe((state) => {
      if (state === "closed") this.#end("the browser closed the call");
      else if (state === "failed") this.#end("the DTLS handshake with the browser failed");
    });
    this.ports = {
      rtp,
      rtcp,
      // The port is free once werift's socket has closed.
      released: () => void this.#end("closed here").then(options.released),
    };
  }

  /** Closes the peer once, telling why; resolves once its socket is closed. */
  #end(reason: string): Promise<void> {
    if (this.#closing === undefined) {
      this.#closing = this.#pc.close().catch(() => undefined);
      this.emit("closed", reason);
    }
    return this.#closing;
  }
}

/** The port of the first candidate werift gathered: the one its socket is bound to. */
function boundPort(sdp: string): number | undefined {
  const candidate = /^a=candidate:\S+ \d+ udp \d+ \S+ (\d+) typ host/im.exec(sdp);
  return candidate === null ? undefined : Number(candidate[1]);
}
