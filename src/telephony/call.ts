/**
 * A telephone call as the layers above see it: signalling state as events, 20 ms frames of 8 kHz
 * audio in and out, DTMF both ways, hold, hang-up. It joins one INVITE session to one RTP session and
 * knows nothing of conferences.
 */
import { EventEmitter } from "node:events";
import { DigitMerger } from "./media/dtmf/digit-merger.js";
import { InbandDtmfDetector } from "./media/dtmf/inband-detector.js";
import type { PlayoutKind } from "./media/jitter-buffer.js";
import type { RtpSession, RtpSessionStats } from "./media/rtp/rtp-session.js";
import {
  acceptAnswer,
  answerOffer,
  createOffer,
  holdMedia,
  type LocalMedia,
  type NegotiatedMedia,
  resumeMedia,
} from "./sdp/session-description.js";
import type {
  IncomingInviteSession,
  InviteSession,
  OutgoingInviteSession,
  SessionEndedBy,
} from "./sip/user-agent/invite-session.js";

export type CallState = "calling" | "ringing" | "answered" | "failed" | "ended";

export interface CallFailure {
  /** The SIP status: the final response, 408 for no answer or timeout, 503 when the trunk is unreachable. */
  readonly status: number;
  readonly reason: string;
}

export interface CallEnd {
  readonly by: SessionEndedBy | "media-timeout";
  readonly reason: string;
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
}

/** What a call needs of the telephony service that made it. */
export interface CallHost {
  /** Media for the call, opened on demand. */
  openMedia(): Promise<RtpSession>;
  readonly mediaAddress: string;
  callFinished(call: Call): void;
}

export class Call extends EventEmitter<CallEvents> {
  #state: CallState = "calling";
  #media: RtpSession | undefined;
  #local: LocalMedia | undefined;
  #held = false;
  #finished = false;
  #answeredAt: number | null = null;
  protected session: InviteSession | undefined;

  constructor(
    protected readonly host: CallHost,
    readonly direction: "outbound" | "inbound",
    /** The far end's number or user: who we call, or who calls us. */
    readonly remoteNumber: string,
  ) {
    super();
  }

  get state(): CallState {
    return this.#state;
  }

  /** Whether the far end holds the call. */
  get held(): boolean {
    return this.#held;
  }

  /** Monotonic milliseconds (performance.now) when the call was answered, null before. */
  get answeredAt(): number | null {
    return this.#answeredAt;
  }

  /** Monotonic milliseconds of the last RTP packet received, null before the first. */
  get lastMediaAt(): number | null {
    return this.#media?.lastPacketAt ?? null;
  }

  /** Sends one 20 ms frame (160 samples); the caller keeps the 20 ms pace. Ignored unless answered. */
  sendAudio(frame: Int16Array): void {
    if (this.#state === "answered") this.#media?.sendFrame(frame);
  }

  /** Pulls the next 20 ms of what the far end says; silence before answer or after the end. */
  readAudio(out: Int16Array): PlayoutKind {
    if (this.#media === undefined || this.#state !== "answered") {
      out.fill(0);
      return "silence";
    }
    return this.#media.readFrame(out);
  }

  /** Sends RFC 4733 digits (`,` pauses one second); resolves true once sent, false when the call ended. */
  sendDigits(keys: string): Promise<boolean> {
    if (this.#state !== "answered" || this.#media === undefined) return Promise.resolve(false);
    return this.#media.sendDigits(keys);
  }

  stats(): RtpSessionStats | null {
    return this.#media?.stats() ?? null;
  }

  /** Puts the far end on hold with a re-INVITE offering sendonly (RFC 3264 section 8.4). */
  hold(): Promise<boolean> {
    return this.#reoffer(true);
  }

  resume(): Promise<boolean> {
    return this.#reoffer(false);
  }

  /** CANCEL before the answer, BYE after; a no-op once the call is over. */
  hangup(): void {
    if (this.#state === "answered") {
      this.session?.bye();
      return;
    }
    if (this.#state === "failed" || this.#state === "ended") return;
    this.abandon(487, "Request Terminated");
  }

  /** Ends a call that was not answered; each kind of call knows how. */
  protected abandon(status: number, reason: string): void {
    this.fail({ status, reason });
  }

  /** Adopts the session's events; called once the session exists. */
  protected attach(session: InviteSession): void {
    this.session = session;
    session.listener = {
      progress: () => this.#ringing(),
      confirmed: (remoteSdp) => this.confirmed(remoteSdp),
      failed: (status, reason) => this.fail({ status, reason }),
      ended: (by, reason) => this.#ended({ by, reason }),
      reoffer: (remoteSdp) => this.#answerReoffer(remoteSdp),
    };
  }

  protected async openMedia(): Promise<RtpSession> {
    if (this.#media === undefined) {
      const media = await this.host.openMedia();
      // A key counts once whether it came as an RFC 4733 event, as tones in the audio, or both.
      const merger = new DigitMerger((key) => this.emit("digit", key));
      const detector = new InbandDtmfDetector((key) => merger.fromInband(key));
      media.on("digit", (digit) => merger.fromTelephoneEvent(digit.key));
      media.onDecodedAudio = (samples, count) => detector.process(samples, count);
      this.#media = media;
    }
    return this.#media;
  }

  /** Our side of the session description, made once per call; re-offers and answers change its version. */
  protected localMedia(): LocalMedia {
    this.#local ??= {
      address: this.host.mediaAddress,
      port: this.#media?.localPort ?? 0,
      sessionId: String(Date.now()),
      sessionVersion: 1,
    };
    return this.#local;
  }

  protected configureMedia(media: NegotiatedMedia): void {
    this.#media?.configure({
      codec: media.codec,
      payloadType: media.payloadType,
      telephoneEventPayloadType: media.telephoneEventPayloadType,
      remoteAddress: media.remoteAddress,
      remotePort: media.remotePort,
      direction: media.direction,
    });
  }

  protected confirmed(_remoteSdp: string): void {
    this.#answeredAt = performance.now();
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
  endForMediaTimeout(): void {
    if (this.#state !== "answered") return;
    this.#ended({ by: "media-timeout", reason: "no media" });
    this.session?.bye();
  }

  #ringing(): void {
    if (this.#state !== "calling") return;
    this.#setState("ringing");
    this.emit("ringing");
  }

  #ended(end: CallEnd): void {
    if (this.#state !== "answered") {
      if (this.#state === "calling" || this.#state === "ringing") this.#finish();
      return;
    }
    this.#setState("ended");
    this.#finish();
    this.emit("ended", end);
  }

  #answerReoffer(remoteSdp: string): { answer: string } | { status: number } {
    // RFC 3264 section 8: a new answer is a new version of our description.
    this.#local = resumeMedia(this.localMedia());
    const result = answerOffer(remoteSdp, this.#local);
    if (!result.ok) return { status: result.status };
    this.configureMedia(result.media);
    const held = result.media.direction === "recvonly" || result.media.direction === "inactive";
    if (held !== this.#held) {
      this.#held = held;
      this.emit("held", held);
    }
    return { answer: result.answer };
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
  }

  #finish(): void {
    if (this.#finished) return;
    this.#finished = true;
    const media = this.#media;
    if (media !== undefined) void media.close();
    this.host.callFinished(this);
  }
}

/** A call we place through a trunk. */
export class OutgoingCall extends Call {
  #offer: string | undefined;
  #ringTimer: NodeJS.Timeout | undefined;

  /** Fails a call that could not be placed at all (bad number, no trunk). */
  notPlaced(status: number, reason: string): void {
    this.fail({ status, reason });
  }

  /** Opens media, sends the INVITE with our offer, and arms the ring timeout. */
  async start(send: (offer: string) => OutgoingInviteSession, ringTimeoutMs: number): Promise<void> {
    try {
      await this.openMedia();
    } catch (error) {
      this.fail({ status: 503, reason: `no media port: ${error instanceof Error ? error.message : error}` });
      return;
    }
    if (this.state !== "calling") return;
    this.#offer = createOffer(this.localMedia());
    this.attach(send(this.#offer));
    this.#ringTimer = setTimeout(() => this.abandon(408, "No Answer"), ringTimeoutMs);
    this.#ringTimer.unref();
  }

  protected override abandon(status: number, reason: string): void {
    (this.session as OutgoingInviteSession | undefined)?.cancel();
    this.fail({ status, reason });
  }

  protected override confirmed(remoteSdp: string): void {
    clearTimeout(this.#ringTimer);
    const accepted = this.#offer === undefined ? undefined : acceptAnswer(this.#offer, remoteSdp);
    if (accepted === undefined || !accepted.ok) {
      // RFC 3264 section 6: an unusable answer leaves no session: hang up.
      this.session?.bye();
      this.fail({ status: 488, reason: "Not Acceptable Here" });
      return;
    }
    this.configureMedia(accepted.media);
    super.confirmed(remoteSdp);
  }

  protected override fail(failure: CallFailure): void {
    clearTimeout(this.#ringTimer);
    super.fail(failure);
  }
}

/** A call that reaches us: ring, accept or reject it. */
export class IncomingCall extends Call {
  readonly #invite: IncomingInviteSession;

  constructor(
    host: CallHost,
    session: IncomingInviteSession,
    /** The caller's user part (its number when it sends one). */
    readonly from: string,
    /** The Request-URI's user part: the number called. */
    readonly to: string,
  ) {
    super(host, "inbound", from);
    this.#invite = session;
    this.attach(session);
  }

  ring(): void {
    this.#invite.ring();
  }

  /** Answers with 200 and our SDP answer; resolves true once the ACK arrives, false when it did not. */
  async accept(): Promise<boolean> {
    if (this.state !== "calling" || this.#invite.answered) return false;
    try {
      await this.openMedia();
    } catch {
      this.reject(503, "Service Unavailable");
      return false;
    }
    const result = answerOffer(this.#invite.invite.body.toString(), this.localMedia());
    if (!result.ok) {
      this.reject(result.status, result.status === 488 ? "Not Acceptable Here" : "Bad Request");
      return false;
    }
    this.configureMedia(result.media);
    if (!this.#invite.accept(result.answer)) return false;
    return new Promise((resolve) => {
      const settle = () => {
        this.off("answered", settle);
        this.off("failed", settle);
        resolve(this.state === "answered");
      };
      this.on("answered", settle);
      this.on("failed", settle);
      if (this.#invite.ended) settle();
    });
  }

  reject(status = 486, reason = "Busy Here"): void {
    this.#invite.reject(status, reason);
    this.fail({ status, reason });
  }

  protected override abandon(status: number, reason: string): void {
    this.reject(status === 487 ? 480 : status, status === 487 ? "Temporarily Unavailable" : reason);
  }
}
