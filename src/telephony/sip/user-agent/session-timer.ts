/**
 * Session timers (RFC 4028): the Session-Expires and Min-SE headers, who refreshes, and when. The
 * refresher sends a refresh (UPDATE, or re-INVITE when the peer does not allow UPDATE) at half the
 * interval (section 10); the other side ends the session with BYE when no refresh has come by the
 * interval less the lesser of 32 s and a third of it (section 10).
 */
import type { Clock, TimerHandle } from "../../../domain/clock.js";
import type { Refresher } from "../message/header-values.js";
import type { SipRequest, SipResponse } from "../message/sip-message.js";

/** What our side asks and accepts, in seconds. */
export interface SessionTimerSettings {
  /** The interval we ask for (Session-Expires in our INVITEs). */
  readonly interval: number;
  /** The smallest interval we accept (Min-SE; RFC 4028 says at least 90 s). */
  readonly minimum: number;
}

export const DEFAULT_SESSION_TIMER: SessionTimerSettings = { interval: 1800, minimum: 90 };

/** Whether a message lists `timer` in Supported or Require. */
export function supportsTimer(message: SipRequest | SipResponse): boolean {
  return message.headers.supports("timer") || message.headers.requires("timer");
}

/**
 * Section 9, as UAS: the interval and refresher our 2xx states for an INVITE with Session-Expires, a
 * 422 with our Min-SE for one below it, or nothing (no session timer) for an INVITE without one.
 */
export function timerForInvite(
  invite: SipRequest,
  settings: SessionTimerSettings,
): { interval: number; refresher: Refresher } | { tooSmall: number } | undefined {
  const asked = invite.headers.sessionExpires;
  if (asked === undefined) return undefined;
  if (asked.interval < settings.minimum) return { tooSmall: settings.minimum };
  // Section 9: keep the UAC's choice; without one, the UAC refreshes when it supports timers.
  const refresher = asked.refresher ?? (supportsTimer(invite) ? "uac" : "uas");
  return { interval: asked.interval, refresher };
}

/** Section 10: the headers of a 2xx (or of a refresh) stating the timer. */
export function timerHeaders(interval: number, refresher: Refresher): [string, string][] {
  return [
    ["Session-Expires", `${interval};refresher=${refresher}`],
    ["Require", "timer"],
  ];
}

/**
 * One dialog's timer: `refresh` runs at half the interval when we refresh; `expire` runs before
 * the interval ends when the peer should have and did not. Restarted by every refresh either way.
 */
export class SessionTimer {
  #handle: TimerHandle | undefined;

  constructor(
    private readonly clock: Clock,
    private readonly actions: { refresh(): void; expire(): void },
  ) {}

  /** (Re)starts the timer for `interval` seconds, `ours` when we are the refresher. */
  start(interval: number, ours: boolean): void {
    this.stop();
    const ms = ours ? (interval * 1000) / 2 : interval * 1000 - Math.min(32_000, (interval * 1000) / 3);
    this.#handle = this.clock.setTimeout(() => {
      this.#handle = undefined;
      if (ours) this.actions.refresh();
      else this.actions.expire();
    }, ms);
  }

  stop(): void {
    if (this.#handle !== undefined) this.clock.clearTimeout(this.#handle);
    this.#handle = undefined;
  }
}
