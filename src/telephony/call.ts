// Long because it is one concern: a call's state from either side, joining its SIP session to its RTP session.
/**
 * A telephone call as the layers above see it: signalling state as events, 20 ms frames of audio in
 * and out at its media's rate (8 or 16 kHz, by the codecs negotiated), DTMF both ways, hold, hang-up.
 * It joins one INVITE session to one RTP session and knows nothing of conferences.
 */
import { EventEmitter } from "node:events";
import type { CallCause, CallerVerification, CallQuality } from "../domain/call-record.js";
import type { Clock, TimerHandle } from "../domain/clock.js";
import { callQuality } from "./call-quality.js";
import { KEYPAD, keypadTones } from "./media/dtmf/keypad-tones.js";
import type { PlayoutKind } from "./media/jitter-buffer.js";
import type { MediaMix, MediaStream } from "./media/plane/media-plane.js";
import { type MediaSound, SOUND_SAMPLE_RATE, type StreamStats } from "./media/plane/protocol.js";
import type { RtpSessionConfiguration } from "./media/rtp/rtp-stream.js";
import { newSrtpKey, type SrtpPolicy, type SrtpSuite } from "./media/rtp/srtp-suites.js";
import {
  type AudioCodec,
  acceptAnswer,
  answerOffer,
  createOffer,
  holdMedia,
  type LocalMedia,
  type NegotiatedMedia,
  nextVersion,
  resumeMedia,
} from "./sdp/session-description.js";
import type { SipResponse } from "./sip/message/sip-message.js";
import type { IncomingInviteSession } from "./sip/user-agent/incoming-invite-session.js";
import { type InviteSession, NORMAL_CLEARING } from "./sip/user-agent/invite-session.js";
import type { Negotiated } from "./sip/user-agent/offer-answer.js";
import type { OutgoingInviteSession } from "./sip/user-agent/outgoing-invite-session.js";
import type { SessionEndedBy } from "./sip/user-agent/session-host.js";
import { VERIFICATION_NOT_CONFIGURED } from "./stir-shaken.js";
import type { DtmfMethod } from "./trunk.js";
import type { PacingLimit } from "./trunk-pacing.js";

export type CallState = "calling" | "ringing" | "answered" | "failed" | "ended";

export interface CallFailure {
  /** The SIP status: the final response, 408 for no answer or timeout, 503 when the trunk is unreachable. */
  readonly status: number;
  readonly reason: string;
  /**
   * Why, as a Reason header said it (RFC 3326): the far end's, in its final response or CANCEL; ours,
   * in the CANCEL we sent. Null when none was given (the status says what there is).
   */
  readonly cause: CallCause | null;
}

export interface CallEnd {
  readonly by: SessionEndedBy | "media-timeout" | "media-failed";
  readonly reason: string;
  /** Why, as the BYE's Reason header said it (RFC 3326): the far end's, or the one we sent; null without one. */
  readonly cause: CallCause | null;
}

export interface CallEvents {
  ringing: [];
  answered: [];
  failed: [failure: CallFailure];
  ended: [end: CallEnd];
  /** A key pressed at the far end, from RFC 4733 events or tones in the audio, once per press. */
  digit: [key: string];
  /** The far end put the call on hold (true) or took it off (false). */
  held: [held: boolean];
  /** While in a mix: the caller started (true) or stopped (false) talking. */
  talking: [talking: boolean];
  /**
   * A placed call waits its turn at a trunk (trunk-pacing.ts), for `why`: told at each trunk it waits
   * at, before its INVITE goes there (when it goes, nothing is told: it rings, answers or fails).
   */
  queued: [why: PacingLimit, trunk: string];
}

/** What a call needs of the telephony service that made it. */
export interface CallHost {
  /** Media for the call, opened on demand, on the thread of what it will work with when given. */
  openMedia(near?: MediaMix | MediaStream): Promise<MediaStream>;
  readonly mediaAddress: string;
  /** The SRTP suites to offer and accept, preferred first. */
  readonly srtpSuites: readonly SrtpSuite[];
  /** The codecs offered and accepted, preferred first, by calls whose options name none. */
  readonly codecs: readonly AudioCodec[];
  readonly logger?: { warn(fields: object, message: string): void };
  /** What the call's own timers run on: the ring timeout, the pauses between keys sent. */
  readonly clock: Clock;
  callFinished(call: Call): void;
}

/** What a call offers and accepts in its SDP. */
export interface CallMediaOptions {
  /** SRTP: off, or offered/answered with keys of its own; default off. */
  readonly srtp?: SrtpPolicy;
  /** Codecs offered and accepted, preferred first (a trunk profile's); default the host's. */
  readonly codecs?: readonly AudioCodec[];
  /**
   * How our keys reach the far end: RFC 4733 events (offered in our SDP; in-band tones when the peer
   * takes none), SIP INFO, or tones in the audio. Default rfc4733.
   */
  readonly dtmf?: DtmfMethod;
}

/** A key's length, as tones and INFO say it. */
const KEY_MS = 100;
/** The Reason of our CANCEL at the ring timeout: the callee was alerted and did not answer (Q.850). */
const NO_ANSWER: CallCause = { protocol: "Q.850", cause: 19, text: "No answer from user (user alerted)" };
/**
 * The Reason of our BYE when no RTP came for the media timeout: Q.850's normal, unspecified, as RTP
 * timeouts are commonly reported (the far end is most likely gone, not failed).
 */
const MEDIA_TIMEOUT: CallCause = { protocol: "Q.850", cause: 31, text: "Media timeout" };
/** The Reason of our BYE when our media broke under the call: a temporary failure of ours (Q.850). */
const MEDIA_FAILED: CallCause = { protocol: "Q.850", cause: 41, text: "Media failure" };
/** The Reason of our BYE to an answer we could not take (RFC 3264 section 6). */
const NOT_ACCEPTABLE: CallCause = { protocol: "SIP", cause: 488, text: "Not Acceptable Here" };
/**
 * Retry-After of "503 No Free Media Port": ports free as calls end, so about when some have ended, as
 * for the 503 past the limit of calls in progress (telephony.ts).
 */
const NO_MEDIA_PORT_RETRY_AFTER_SECONDS = 60;
/**
 * What the media is told of a negotiation: the codec we send, every format and telephone-event the
 * far end may send (RFC 3264 §6.1 and §7: it may switch packet by packet), and for Opus what the
 * peer's fmtp asked of our encoder (RFC 7587 §6.1).
 */
export function mediaConfiguration(media: NegotiatedMedia): RtpSessionConfiguration {
  const opus = media.opus;
  return {
    codec: media.codec,
    payloadType: media.payloadType,
    receiveFormats: media.receiveFormats.map(({ codec, payloadType }) => ({ codec, payloadType })),
    telephoneEventPayloadType: media.telephoneEventPayloadType,
    receiveTelephoneEventPayloadTypes: media.telephoneEvents.map((event) => event.payloadType),
    ...(opus === undefined
      ? {}
      : {
          opus: {
            maxAverageBitrate: opus.maxAverageBitrate,
            useInbandFec: opus.useInbandFec,
            maxPlaybackRate: opus.maxPlaybackRate,
          },
        }),
    remoteAddress: media.remoteAddress,
    remotePort: media.remotePort,
    direction: media.direction,
    srtp: media.srtp,
  };
}

export class Call extends EventEmitter<CallEvents> {
  #state: CallState = "calling";
  #media: MediaStream | undefined;
  #local: LocalMedia | undefined;
  #held = false;
  #finished = false;
  /** The media's final counts, once it was closed at the call's end. */
  #finalStats: Promise<StreamStats | null> | undefined;
  protected session: InviteSession | undefined;

  #srtp: SrtpPolicy;
  #mediaOptions: CallMediaOptions;
  #route: string | null;

  constructor(
    protected readonly host: CallHost,
    readonly direction: "outbound" | "inbound",
    /** The far end's number or user: who we call, or who calls us. */
    readonly remoteNumber: string,
    media: CallMediaOptions = {},
    route: string | null = null,
  ) {
    super();
    this.#srtp = media.srtp ?? "off";
    this.#mediaOptions = media;
    this.#route = route;
    this.invitedAt = host.clock.now();
  }

  /**
   * Where it went or came: a placed call's trunk URI (the trunk that carried it, once another was
   * failed over to) or the URI called, the number a caller dialled.
   */
  get route(): string | null {
    return this.#route;
  }

  /**
   * Before an INVITE to another trunk (no answer taken yet): that trunk's route and media options,
   * and a new offer made with them (fresh SRTP keys, its codecs); the media stream stays.
   */
  protected retarget(route: string, media: CallMediaOptions): void {
    this.#route = route;
    this.#srtp = media.srtp ?? "off";
    this.#mediaOptions = media;
    this.#local = undefined;
  }

  /** When the call began (our INVITE, or theirs arriving), ms since the epoch on the host's clock. */
  readonly invitedAt: number;
  #answeredAt: number | null = null;

  /** When it was answered; null until then. */
  get answeredAt(): number | null {
    return this.#answeredAt;
  }

  /** A browser's call (WebRTC, the join page) rather than a SIP one. */
  get fromBrowser(): boolean {
    return false;
  }

  /** Whether the media is SRTP (once negotiated). */
  get encrypted(): boolean {
    return this.#encrypted;
  }

  /**
   * Whether the call's signalling travels over SIP over TLS: the transport the INVITE truly came
   * on, or the one it went out on to the server that took it.
   */
  get signallingTls(): boolean {
    return false;
  }

  #encrypted = false;
  /** Whether the far end takes RFC 4733 events (once negotiated). */
  #telephoneEvents = false;
  #codec: AudioCodec | undefined;

  /** The codec we send in, once negotiated. */
  get codec(): AudioCodec | undefined {
    return this.#codec;
  }

  get state(): CallState {
    return this.#state;
  }

  /** Whether the far end holds the call. */
  get held(): boolean {
    return this.#held;
  }

  /**
   * Sends one 20 ms frame (160 samples at 8 kHz, 320 at 16 kHz: the media's rate, 16 kHz when G.722
   * or Opus was negotiated); the caller keeps the 20 ms pace. Ignored unless answered.
   * Raw frames need the media on this thread (no media threads): elsewhere, play and record.
   */
  sendAudio(frame: Int16Array): void {
    if (this.#state === "answered") this.#localSession().sendFrame(frame);
  }

  /** Pulls the next 20 ms of what the far end says; silence before answer or after the end. As sendAudio. */
  readAudio(out: Int16Array): PlayoutKind {
    if (this.#media === undefined || this.#state !== "answered") {
      out.fill(0);
      return "silence";
    }
    return this.#localSession().readFrame(out);
  }

  /**
   * Sends keys (`,` pauses one second) the call's DTMF way; resolves true once sent, false when the
   * call ended or a key is not one.
   */
  sendDigits(keys: string): Promise<boolean> {
    if (this.#state !== "answered" || this.#media === undefined) return Promise.resolve(false);
    const method = this.#mediaOptions.dtmf ?? "rfc4733";
    if (method === "rfc4733" && this.#telephoneEvents) return this.#media.sendDigits(keys);
    if (method === "info") return this.#sendKeysByInfo(keys);
    let tones: Int16Array;
    try {
      tones = keypadTones(keys, SOUND_SAMPLE_RATE);
    } catch {
      return Promise.resolve(false);
    }
    return this.play({ samples: tones }).then(() => this.#state === "answered");
  }

  /** One INFO a key, each after the last is answered, 100 ms apart as tones would be; `,` one second. */
  async #sendKeysByInfo(keys: string): Promise<boolean> {
    if (![...keys].every((key) => key === "," || KEYPAD.includes(key.toUpperCase()))) return false;
    for (const key of keys) {
      if (this.#state !== "answered" || this.session === undefined) return false;
      if (key !== ",") {
        if (!(await this.session.sendKey(key.toUpperCase(), KEY_MS))) return false;
      }
      await new Promise<void>((resolve) => this.host.clock.setTimeout(resolve, key === "," ? 1000 : KEY_MS));
    }
    return this.#state === "answered";
  }

  /**
   * Plays to this caller alone, after what is queued for it (in a mix: over the mix). Resolves once
   * heard, stopped, or the call is over.
   */
  play(sound: MediaSound): Promise<void> {
    if (this.#state !== "answered" || this.#media === undefined) return Promise.resolve();
    return this.#media.play(sound);
  }

  stopPlaying(): void {
    this.#media?.stopPlaying();
  }

  /** What the caller says for at most `maxMs`, or until stopRecordingVoice. */
  recordVoice(maxMs: number): Promise<Int16Array> {
    if (this.#state !== "answered" || this.#media === undefined) return Promise.resolve(new Int16Array(0));
    return this.#media.recordVoice(maxMs);
  }

  stopRecordingVoice(): void {
    this.#media?.stopRecordingVoice();
  }

  /** Into a mix: hears everyone else in it, heard by them unless muted. */
  join(mix: MediaMix, options: { readonly muted: boolean }): void {
    if (this.#state === "answered") this.#media?.join(mix, options.muted);
  }

  setMuted(muted: boolean): void {
    this.#media?.setMuted(muted);
  }

  /**
   * Carries this call's audio and keys to `other` and back, packet for packet, until either call
   * ends (a caller taken on to a room that runs elsewhere). Both must be answered.
   */
  relay(other: Call): void {
    if (this.#state !== "answered" || other.#state !== "answered") return;
    const peer = other.#media;
    if (peer !== undefined) this.#media?.relayWith(peer);
  }

  /** The call's media stream once opened, so that another call's can open next to it. */
  get mediaStream(): MediaStream | undefined {
    return this.#media;
  }

  leave(): void {
    this.#media?.leave();
  }

  /**
   * What STIR/SHAKEN verification said of the caller's number: null but for a call taken by SIP
   * (IncomingCall), for calls we place carry no PASSporT we check and browsers none at all.
   */
  callerVerification(): Promise<CallerVerification | null> {
    return Promise.resolve(null);
  }

  /**
   * How the call sounded, both ways, over all of it (its media's counts on every thread it ran on):
   * resolves once it has failed or ended and its media has closed. Null when it carried no media (it
   * failed before an answer, with no early media) or its media's counts were lost with its thread.
   * A browser's call has the same figures: its RTP and RTCP pass through the same kind of session.
   */
  async quality(): Promise<CallQuality | null> {
    if (this.#state !== "failed" && this.#state !== "ended")
      await new Promise<void>((resolve) => {
        const over = () => {
          this.off("failed", over);
          this.off("ended", over);
          resolve();
        };
        this.on("failed", over);
        this.on("ended", over);
      });
    const stats = await this.#finalStats;
    return stats === null || stats === undefined ? null : callQuality(stats);
  }

  /** Puts the far end on hold with a re-INVITE offering sendonly (RFC 3264 section 8.4). */
  hold(): Promise<boolean> {
    return this.#reoffer(true);
  }

  resume(): Promise<boolean> {
    return this.#reoffer(false);
  }

  /**
   * CANCEL before the answer, BYE after, its Reason header saying `cause` (default: normal call
   * clearing); a no-op once the call is over.
   */
  hangup(cause: CallCause = NORMAL_CLEARING): void {
    if (this.#state === "answered") {
      this.session?.bye("hung up", cause);
      return;
    }
    if (this.#state === "failed" || this.#state === "ended") return;
    this.abandon(487, "Request Terminated", cause);
  }

  /** Ends a call that was not answered, for `cause`; each kind of call knows how. */
  protected abandon(status: number, reason: string, _cause: CallCause): void {
    this.fail({ status, reason, cause: null });
  }

  /** Adopts the session's events; called once the session exists. */
  protected attach(session: InviteSession): void {
    this.session = session;
    session.listener = {
      progress: () => this.#ringing(),
      confirmed: (answer) => this.confirmed(answer),
      failed: (status, reason, cause, response) => this.sessionFailed({ status, reason, cause }, response),
      ended: (by, reason, cause) => this.ended({ by, reason, cause }),
      reoffer: (remoteSdp) => this.#answerReoffer(remoteSdp),
      offer: () => this.#offerInOk(),
      refresh: () => void this.#refreshByReinvite(),
      lateAnswer: (negotiated) => this.#takeLateAnswer(negotiated),
      digit: (key) => this.emit("digit", key),
    };
  }

  /** The session failed before an answer (`response`, its final response when one came): the call fails. */
  protected sessionFailed(failure: CallFailure, _response: SipResponse | undefined): void {
    this.fail(failure);
  }

  protected async openMedia(near?: MediaMix | MediaStream): Promise<MediaStream> {
    if (this.#media === undefined) this.adoptMedia(await this.host.openMedia(near));
    return this.#media as MediaStream;
  }

  /** Takes `media` as the call's media stream, its events as the call's. */
  protected adoptMedia(media: MediaStream): void {
    media.on("digit", (key) => this.emit("digit", key));
    media.on("talking", (talking) => this.emit("talking", talking));
    media.on("timeout", () => this.#endForMediaTimeout());
    media.on("failed", (reason) => this.#mediaFailed(reason));
    this.#media = media;
    // A call that ended while its media opened closes it at once.
    if (this.#finished) this.#finalStats = media.close();
  }

  #localSession() {
    const session = this.#media?.localSession;
    if (session === undefined)
      throw new Error("raw audio frames need the call's media on this thread: play and record instead");
    return session;
  }

  /** Our side of the session description, made once per call; re-offers and answers change its version. */
  protected localMedia(): LocalMedia {
    this.#local ??= {
      address: this.host.mediaAddress,
      port: this.#media?.localPort ?? 0,
      sessionId: String(Date.now()),
      sessionVersion: 1,
      codecs: this.#mediaOptions.codecs ?? this.host.codecs,
      telephoneEvents: (this.#mediaOptions.dtmf ?? "rfc4733") === "rfc4733",
      // Fresh keys for every call, one per suite (RFC 4568 §6.1); never logged.
      ...(this.#srtp === "off"
        ? {}
        : {
            srtp: {
              policy: this.#srtp,
              keys: this.host.srtpSuites.map((suite) => newSrtpKey(suite)),
            },
          }),
    };
    return this.#local;
  }

  protected configureMedia(media: NegotiatedMedia): void {
    // Our keys go as events only at the send codec's rate (RFC 4733 §2.1): none agreed for it (an
    // Opus call whose peer listed telephone-event/8000 alone), and they go as tones.
    this.#telephoneEvents = media.telephoneEventPayloadType !== undefined;
    this.#codec = media.codec;
    this.#media?.configure(mediaConfiguration(media));
    this.#encrypted = media.srtp !== undefined;
  }

  /** The session is confirmed; `answer`, the answer to our offer that came with it (see SessionListener). */
  protected confirmed(_answer: Negotiated | undefined): void {
    this.#setState("answered");
    this.emit("answered");
  }

  protected fail(failure: CallFailure): void {
    if (this.#state === "failed" || this.#state === "ended") return;
    this.#setState("failed");
    this.#finish();
    this.emit("failed", failure);
  }

  /** Ends the call because no RTP arrived for too long: BYE, reported as a media timeout. */
  #endForMediaTimeout(): void {
    if (this.#state !== "answered" || this.#held) return;
    this.host.logger?.warn(
      { number: this.remoteNumber, reason: "no media", cause: MEDIA_TIMEOUT },
      "call ended: no media",
    );
    this.ended({ by: "media-timeout", reason: "no media", cause: MEDIA_TIMEOUT });
    this.session?.bye("no media", MEDIA_TIMEOUT);
  }

  /** The media broke under the call (its thread died): nothing can be heard, so it ends. */
  #mediaFailed(reason: string): void {
    this.host.logger?.warn(
      { number: this.remoteNumber, reason, cause: MEDIA_FAILED },
      "call ended: its media failed",
    );
    if (this.#state === "answered") {
      this.ended({ by: "media-failed", reason, cause: MEDIA_FAILED });
      this.session?.bye(reason, MEDIA_FAILED);
    } else this.hangup(MEDIA_FAILED);
  }

  #ringing(): void {
    if (this.#state !== "calling") return;
    this.#setState("ringing");
    this.emit("ringing");
  }

  protected ended(end: CallEnd): void {
    if (this.#state === "calling" || this.#state === "ringing") {
      // A session that ends before the call was answered (our 2xx never ACKed, RFC 3261 section
      // 13.3.1.4) is a call that failed: said so, so that whoever waits on it (accept) is told.
      this.fail({ status: 408, reason: end.reason, cause: end.cause });
      return;
    }
    if (this.#state !== "answered") return;
    this.#setState("ended");
    this.#finish();
    this.emit("ended", end);
  }

  #answerReoffer(remoteSdp: string): { answer: string } | { status: number } {
    // RFC 3264 section 8: a new answer is a new version of our description, keeping our own
    // direction (a call we hold stays held whatever the peer re-offers).
    this.#local = nextVersion(this.localMedia());
    const result = answerOffer(remoteSdp, this.#local);
    if (!result.ok) return { status: result.status };
    this.#negotiated(result.media);
    return { answer: result.answer };
  }

  /** The media both sides agreed on: configured, and a change of the peer's hold told. */
  #negotiated(media: NegotiatedMedia): void {
    this.configureMedia(media);
    const held = media.direction === "recvonly" || media.direction === "inactive";
    if (held !== this.#held) {
      this.#held = held;
      this.emit("held", held);
    }
  }

  /** A session refresh (RFC 4028) by re-INVITE: the same media, a new version of it. */
  async #refreshByReinvite(): Promise<void> {
    if (this.#state !== "answered" || this.session === undefined) return;
    this.#local = nextVersion(this.localMedia());
    const offer = createOffer(this.#local);
    const answer = await this.session.reinvite(offer);
    const accepted = answer === undefined ? undefined : acceptAnswer(offer, answer);
    if (accepted?.ok) this.configureMedia(accepted.media);
  }

  /** Our offer for the 2xx to a re-INVITE that had none (the answer comes in the ACK). */
  #offerInOk(): string {
    this.#local = nextVersion(this.localMedia());
    return createOffer(this.#local);
  }

  /** The ACK's answer to our offer; none that we can use ends the call (RFC 3261 section 13.3.1.4). */
  #takeLateAnswer({ offer, answer }: Negotiated): void {
    const accepted = acceptAnswer(offer, answer);
    if (accepted.ok) this.#negotiated(accepted.media);
    else this.session?.bye("no usable answer", NOT_ACCEPTABLE);
  }

  async #reoffer(hold: boolean): Promise<boolean> {
    if (this.#state !== "answered" || this.session === undefined) return false;
    this.#local = hold ? holdMedia(this.localMedia()) : resumeMedia(this.localMedia());
    const offer = createOffer(this.#local);
    const answer = await this.session.reinvite(offer);
    if (answer === undefined) return false;
    const accepted = acceptAnswer(offer, answer);
    if (!accepted.ok) return false;
    this.configureMedia(accepted.media);
    return true;
  }

  #setState(state: CallState): void {
    this.#state = state;
    if (state === "answered") this.#answeredAt ??= this.host.clock.now();
  }

  #finish(): void {
    if (this.#finished) return;
    this.#finished = true;
    this.#finalStats = this.#media?.close();
    this.host.callFinished(this);
  }
}

/** One INVITE of a placed call: where it goes (the route the call then has), with what media. */
export interface CallAttempt {
  /** The trunk's URI (or the URI called): the call's route while this attempt carries it. */
  readonly route: string;
  readonly media: CallMediaOptions;
  /** Sends the INVITE with our offer. */
  readonly send: (offer: string) => OutgoingInviteSession;
}

/** How an attempt failed: the failure, and the final response that said it (undefined: ours). */
export interface AttemptFailure {
  readonly failure: CallFailure;
  readonly response: SipResponse | undefined;
}

/**
 * A call we place through a trunk: its media opened once, then one INVITE after another (another
 * trunk, a redirect's number), as its placer decides, until one is answered or the placer gives up.
 * The ring timeout runs from the first INVITE.
 */
export class OutgoingCall extends Call {
  #ringTimer: TimerHandle | undefined;
  #ringTimeoutMs = 0;
  /** Told of the attempt in flight's outcome: its failure, or undefined once the call is answered or over. */
  #attemptSettled: ((failed: AttemptFailure | undefined) => void) | undefined;

  override get signallingTls(): boolean {
    return (this.session as OutgoingInviteSession | undefined)?.destination.transport === "TLS";
  }

  /** Fails a call that could not be placed at all (bad number, no trunk). */
  notPlaced(status: number, reason: string): void {
    this.fail({ status, reason, cause: null });
  }

  /** Waits at `trunk` for `why` before its INVITE goes: told as the `queued` event, while still calling. */
  queued(why: PacingLimit, trunk: string): void {
    if (this.state === "calling") this.emit("queued", why, trunk);
  }

  /** Fails the call with its last attempt's answer, when no other attempt follows it. */
  failWith(failure: CallFailure): void {
    this.fail(failure);
  }

  /**
   * Opens the call's media (next to `near`); resolves false when that failed (the call failed, 503)
   * or the call is over meanwhile.
   */
  async open(ringTimeoutMs: number, near: MediaMix | MediaStream | undefined): Promise<boolean> {
    this.#ringTimeoutMs = ringTimeoutMs;
    try {
      await this.openMedia(near);
    } catch (error) {
      this.fail({
        status: 503,
        reason: `no media port: ${error instanceof Error ? error.message : error}`,
        cause: null,
      });
      return false;
    }
    return this.placing;
  }

  /**
   * Sends an attempt's INVITE with an offer of its own media options (the first arms the ring
   * timeout). Resolves with its failure, for the placer to try another or give up (failWith): the
   * call does not fail by itself; with undefined once the call is answered or over (hung up, timed
   * out), or at once when it is over already, nothing being sent.
   */
  attempt(attempt: CallAttempt): Promise<AttemptFailure | undefined> {
    if (!this.placing) return Promise.resolve(undefined);
    this.retarget(attempt.route, attempt.media);
    const settled = new Promise<AttemptFailure | undefined>((resolve) => {
      this.#attemptSettled = resolve;
    });
    this.attach(attempt.send(createOffer(this.localMedia())));
    this.#ringTimer ??= this.host.clock.setTimeout(
      () => this.abandon(408, "No Answer", NO_ANSWER),
      this.#ringTimeoutMs,
    );
    return settled;
  }

  /** Not yet answered, failed or ended: what placing it (the next trunk, a redirect) is still for. */
  get placing(): boolean {
    return this.state === "calling" || this.state === "ringing";
  }

  /** The attempt in flight failed: told to the placer, its session left (its end is no call's end). */
  protected override sessionFailed(failure: CallFailure, response: SipResponse | undefined): void {
    const settle = this.#attemptSettled;
    if (settle === undefined || !this.placing) {
      this.fail(failure);
      return;
    }
    this.#attemptSettled = undefined;
    if (this.session !== undefined) this.session.listener = {};
    settle({ failure, response });
  }

  /**
   * By CANCEL (or BYE, should its 2xx cross it), whose Reason is the failure's cause. The failure is
   * told first: a session given up at once (waiting to retry a 503) ends without a final response,
   * and its end must not be taken for the call's failure.
   */
  protected override abandon(status: number, reason: string, cause: CallCause): void {
    const session = this.session as OutgoingInviteSession | undefined;
    this.fail({ status, reason, cause });
    session?.cancel(cause);
  }

  protected override confirmed(answer: Negotiated | undefined): void {
    this.host.clock.clearTimeout(this.#ringTimer);
    this.#settleAttempt();
    const accepted = answer === undefined ? undefined : acceptAnswer(answer.offer, answer.answer);
    if (accepted === undefined || !accepted.ok) {
      // RFC 3264 section 6: an unusable answer leaves no session: hang up.
      this.session?.bye("no usable answer", NOT_ACCEPTABLE);
      this.fail({ status: 488, reason: "Not Acceptable Here", cause: NOT_ACCEPTABLE });
      return;
    }
    this.configureMedia(accepted.media);
    super.confirmed(answer);
  }

  protected override fail(failure: CallFailure): void {
    this.host.clock.clearTimeout(this.#ringTimer);
    this.#settleAttempt();
    super.fail(failure);
  }

  /** The call is answered or over: the attempt in flight is no longer the placer's to follow. */
  #settleAttempt(): void {
    const settle = this.#attemptSettled;
    this.#attemptSettled = undefined;
    settle?.(undefined);
  }
}

/** Where an incoming call came from. */
export interface CallOrigin {
  /** The INVITE's sender as per-source limits count it (an IPv4 address, or an IPv6 /64). */
  readonly source: string;
  /** Whether the sender is a configured peer (a trunk, an edge): its calls are many people's. */
  readonly peer: boolean;
  /** The INVITE's Call-ID, for log lines an operator's tools match (fail2ban). */
  readonly callId: string;
}

/** A call that reaches us: ring, accept or reject it. */
export class IncomingCall extends Call {
  readonly #invite: IncomingInviteSession;
  readonly #verification: Promise<CallerVerification>;

  constructor(
    host: CallHost,
    session: IncomingInviteSession,
    /** The caller's user part (its number when it sends one). */
    readonly from: string,
    /** The Request-URI's user part: the number called. */
    readonly to: string,
    readonly origin: CallOrigin,
    srtp: SrtpPolicy = "off",
    /** STIR/SHAKEN verification of the INVITE, started as it arrived (stir-shaken.ts); never rejects. */
    verification: Promise<CallerVerification> = Promise.resolve(VERIFICATION_NOT_CONFIGURED),
  ) {
    super(host, "inbound", from, { srtp }, to);
    this.#invite = session;
    this.#verification = verification;
    this.attach(session);
  }

  /**
   * What STIR/SHAKEN verification said of the caller's number (docs/telephony.md#stirshaken): it runs
   * from the INVITE's arrival, beside the PIN prompt; resolves within the certificate fetch's timeout
   * and never rejects. `none` without an Identity header or with verification not configured.
   */
  override callerVerification(): Promise<CallerVerification> {
    return this.#verification;
  }

  ring(): void {
    this.#invite.ring();
  }

  override get signallingTls(): boolean {
    return this.#invite.transport === "TLS";
  }

  /** After an INVITE without an offer, ours went in the 2xx and the ACK brings the answer. */
  protected override confirmed(answer: Negotiated | undefined): void {
    if (answer !== undefined) {
      const accepted = acceptAnswer(answer.offer, answer.answer);
      if (!accepted.ok) {
        // An ACK without a usable answer leaves no session (RFC 3264 section 6): hang up.
        this.session?.bye("no usable answer", NOT_ACCEPTABLE);
        this.fail({ status: 488, reason: "the ACK carried no usable answer", cause: NOT_ACCEPTABLE });
        return;
      }
      this.configureMedia(accepted.media);
    }
    super.confirmed(answer);
  }

  /** A header of the INVITE (the first, when it has several). */
  header(name: string): string | undefined {
    return this.#invite.invite.headers.get(name);
  }

  /** Answers with 200 and our SDP answer; resolves true once the ACK arrives, false when it did not. */
  async accept(): Promise<boolean> {
    if (this.state !== "calling" || this.#invite.answered) return false;
    try {
      await this.openMedia();
    } catch (error) {
      // Every RTP port of the range in use (BRIDGELINE_RTP_PORTS): the phrase says so to the caller.
      this.host.logger?.warn(
        { from: this.from, reason: error instanceof Error ? error.message : String(error) },
        "incoming call refused: no media port",
      );
      this.reject(503, "No Free Media Port", NO_MEDIA_PORT_RETRY_AFTER_SECONDS);
      return false;
    }
    const offered = this.#invite.offerAnswer.remoteOffer;
    if (offered === undefined) {
      // RFC 3261 section 13.2.1: an INVITE without an offer gets ours in the 2xx; the ACK answers.
      if (!this.#invite.accept(createOffer(this.localMedia()))) return false;
    } else {
      const result = answerOffer(offered, this.localMedia());
      if (!result.ok) {
        this.reject(result.status, result.status === 488 ? "Not Acceptable Here" : "Bad Request");
        return false;
      }
      this.configureMedia(result.media);
      if (!this.#invite.accept(result.answer)) return false;
    }
    return new Promise((resolve) => {
      // Answered when the ACK comes; failed, or ended without one (no ACK within 64*T1), when not.
      const settle = () => {
        this.off("answered", settle);
        this.off("failed", settle);
        this.off("ended", settle);
        resolve(this.state === "answered");
      };
      this.on("answered", settle);
      this.on("failed", settle);
      this.on("ended", settle);
      if (this.#invite.ended) settle();
    });
  }

  /** Refuses the call; `retryAfterSeconds` tells the caller when to try again (a 503's Retry-After). */
  reject(status = 486, reason = "Busy Here", retryAfterSeconds?: number): void {
    this.fail({ status, reason, cause: null });
    this.#invite.reject(
      status,
      reason,
      retryAfterSeconds === undefined ? [] : [["Retry-After", String(retryAfterSeconds)]],
    );
  }

  /** Refused (480 for a hang-up): a response of ours carries no Reason, so the failure names no cause. */
  protected override abandon(status: number, reason: string): void {
    this.reject(status === 487 ? 480 : status, status === 487 ? "Temporarily Unavailable" : reason);
  }
}

/**
 * A browser's call (the join page, WebRTC): answered as it is made, with the answer to the page's
 * offer; its media is DTLS-SRTP. It ends when the page leaves (DTLS closed, ICE failed), when no
 * media comes for the media timeout, or when hung up here.
 */
export class BrowserCall extends Call {
  readonly #signallingTls: boolean;

  /**
   * Answers the page's offer, its media next to `near` (the room it joins); rejects with a
   * MediaError for an offer that cannot be answered (MEDIA_ERR_OFFER) or no port free.
   */
  static async answer(
    host: CallHost & {
      openWebRtcMedia(
        offer: string,
        near?: MediaMix | MediaStream,
      ): Promise<{ stream: MediaStream; answer: string }>;
    },
    offer: string,
    options: { readonly signallingTls: boolean; readonly near?: MediaMix },
  ): Promise<{ call: BrowserCall; answer: string }> {
    const { stream, answer } = await host.openWebRtcMedia(offer, options.near);
    const call = new BrowserCall(host, options.signallingTls);
    call.adoptMedia(stream);
    stream.on("closed", (reason) => call.ended({ by: "remote", reason, cause: null }));
    call.confirmed(undefined);
    return { call, answer };
  }

  private constructor(host: CallHost, signallingTls: boolean) {
    super(host, "inbound", "browser");
    this.#signallingTls = signallingTls;
  }

  override get fromBrowser(): boolean {
    return true;
  }

  /** Its offer and answer went over HTTPS (or not: a page on plain HTTP). */
  override get signallingTls(): boolean {
    return this.#signallingTls;
  }

  /** DTLS-SRTP, always (RFC 8827). */
  override get encrypted(): boolean {
    return true;
  }

  /** Opus, always: a call carrying it to another instance offers Opus alone, relayed as it comes. */
  override get codec(): AudioCodec {
    return "opus";
  }

  /** Ends it here: no BYE to carry `cause`, but the end says it as a phone's would. */
  override hangup(cause: CallCause = NORMAL_CLEARING): void {
    if (this.state === "answered") this.ended({ by: "local", reason: "hung up", cause });
  }
}
