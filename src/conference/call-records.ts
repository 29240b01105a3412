/**
 * The calls a room keeps records of: each placed or admitted call is followed until it is over
 * (failed, or ended after its answer), then, once its media has told how it sounded, its record is
 * written with why it ended: after the room's own writes of that end, and without holding them up.
 * When the room hangs a call up it says why here, so the record names the room's reason rather
 * than "hung up". A room that gives its conference up forgets its calls: none is written after.
 */
import type { CallerVerification, CallQuality, CallRecord, NewCallRecord } from "../domain/call-record.js";
import type { Clock } from "../domain/clock.js";
import type { CallEnd, CallFailure, ConferenceCall } from "./ports.js";

export interface CallRecordsOptions {
  /** This instance, as BRIDGELINE_INSTANCE_ID names it. */
  readonly instance: string;
  /** Writes a call's record (in the room's order of writes from then on), its event dated `at`. */
  readonly write: (record: NewCallRecord, at: Date) => void;
  /** What the wait for a call's figures runs on. */
  readonly clock: Clock;
}

/**
 * How long a call over is waited for its figures: its quality comes from its media thread as the
 * media closes, its caller's verification long before (it began with the INVITE); within
 * milliseconds both. One that does not come by then is left out of the record (null) rather than
 * holding it back.
 */
export const FIGURES_WAIT_MS = 2_000;

/** A call followed until it is over: whose it is, why the room hung it up, how to stop following it. */
interface Followed {
  readonly attendeeId: number;
  hungUpBecause: string | undefined;
  readonly unfollow: () => void;
}

/** What a call's record needs beside the call: how it sounded, who the caller was proved to be. */
interface Figures {
  readonly quality: CallQuality | null;
  readonly callerVerification: CallerVerification | null;
}

export class CallRecords {
  readonly #options: CallRecordsOptions;
  /** Recording the calls followed, until the room gives its conference up: then nothing more. */
  #state: "recording" | "forgotten" = "recording";
  /** The calls followed, each with what stops following it (its listeners removed). */
  readonly #calls = new Map<ConferenceCall, Followed>();
  /** Records of calls over, waiting for their figures before they are written. */
  readonly #waiting = new Set<Promise<void>>();

  constructor(options: CallRecordsOptions) {
    this.#options = options;
  }

  /** Follows `call` (the attendee's) until it is over, then writes its record. */
  follow(call: ConferenceCall, attendeeId: number): void {
    if (this.#state === "forgotten" || this.#calls.has(call)) return;
    const over = (outcome: { failure: CallFailure } | { end: CallEnd }) => {
      const followed = this.#calls.get(call);
      unfollow();
      if (followed === undefined) return;
      this.#calls.delete(call);
      const endedAt = new Date(this.#options.clock.now());
      const written = Promise.all([
        this.#told(call.quality(), null),
        this.#told(call.callerVerification(), null),
      ]).then(([quality, callerVerification]) => {
        this.#waiting.delete(written);
        // Given up meanwhile: its writes would be refused. Dated now, as its call-ended event: after
        // the room's own write of the call's end.
        if (this.#state !== "recording") return;
        const record = this.#record(call, followed, outcome, endedAt, { quality, callerVerification });
        this.#options.write(record, new Date(this.#options.clock.now()));
      });
      this.#waiting.add(written);
    };
    const failed = (failure: CallFailure) => over({ failure });
    const ended = (end: CallEnd) => over({ end });
    const unfollow = () => {
      call.off("failed", failed);
      call.off("ended", ended);
    };
    this.#calls.set(call, { attendeeId, hungUpBecause: undefined, unfollow });
    call.on("failed", failed);
    call.on("ended", ended);
  }

  /** Resolves once the records of the calls over so far have been handed to `write`. */
  async settled(): Promise<void> {
    // A call hung up just now may tell its end a moment later (a queued microtask).
    await null;
    while (this.#waiting.size > 0) await Promise.all(this.#waiting);
  }

  /** Hangs the call up for the room's reason, which its record gives (unless the far end hung up first). */
  hangUp(call: ConferenceCall, because: string): void {
    const followed = this.#calls.get(call);
    if (followed !== undefined) followed.hungUpBecause ??= because;
    call.hangup();
  }

  /** The room gave its conference up: no call gets a record from now on (its writes are refused). */
  forgetAll(): void {
    this.#state = "forgotten";
    for (const followed of this.#calls.values()) followed.unfollow();
    this.#calls.clear();
  }

  /** What `told` resolves with, or `otherwise` when it does not within FIGURES_WAIT_MS (or fails). */
  #told<T>(told: Promise<T>, otherwise: T): Promise<T> {
    const clock = this.#options.clock;
    return new Promise((resolve) => {
      const timer = clock.setTimeout(() => resolve(otherwise), FIGURES_WAIT_MS);
      told.then(
        (value) => {
          clock.clearTimeout(timer);
          resolve(value);
        },
        () => {
          clock.clearTimeout(timer);
          resolve(otherwise);
        },
      );
    });
  }

  #record(
    call: ConferenceCall,
    followed: Followed,
    outcome: { failure: CallFailure } | { end: CallEnd },
    endedAt: Date,
    figures: Figures,
  ): NewCallRecord {
    const answered = call.answeredAt !== null;
    const base = {
      attendeeId: followed.attendeeId,
      direction: call.fromBrowser ? "browser" : call.direction,
      number: call.fromBrowser ? null : call.remoteNumber,
      route: call.route,
      instance: this.#options.instance,
      invitedAt: new Date(call.invitedAt).toISOString(),
      answeredAt: call.answeredAt === null ? null : new Date(call.answeredAt).toISOString(),
      endedAt: endedAt.toISOString(),
      codec: answered ? (call.codec ?? null) : null,
      srtp: answered && call.encrypted,
      tls: call.signallingTls,
      ...figures,
    } satisfies Partial<CallRecord>;
    if ("failure" in outcome) {
      const { status, reason, cause } = outcome.failure;
      return {
        ...base,
        sipStatus: status,
        sipReason: reason,
        cause: cause ?? null,
        hungUpBy: null,
        endReason: followed.hungUpBecause ?? `${status} ${reason}`,
      };
    }
    const { by, reason, cause } = outcome.end;
    const byAttendee = by === "remote";
    return {
      ...base,
      sipStatus: 200,
      sipReason: "OK",
      cause: cause ?? null,
      hungUpBy: byAttendee ? "attendee" : "service",
      endReason: byAttendee ? reason : (followed.hungUpBecause ?? reason),
    };
  }
}
