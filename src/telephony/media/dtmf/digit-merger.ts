/**
 * One stream of DTMF digits from the two ways a call can carry them: RFC 4733 telephone-events and
 * tones in the audio. Trunks that send telephone-events often leave the tones in the audio too, or the
 * reverse, so each key press may arrive twice, once per path, a little apart. A digit from one path
 * that matches a digit already passed on from the other path within the window is that same press and
 * is dropped; a digit repeated on its own path is a new press, since each path reports a press once.
 */

export type DigitSource = "rfc4733" | "inband";

export interface DigitMergerOptions {
  /** How far apart the two paths' reports of one press may be, in milliseconds. Default 200. */
  windowMs?: number;
  /** Clock in milliseconds; defaults to performance.now(). */
  now?: () => number;
}

interface PassedDigit {
  key: string;
  source: DigitSource;
  at: number;
}

export class DigitMerger {
  private readonly windowMs: number;
  private readonly now: () => number;
  /** Digits passed on within the window whose other path's report has not arrived yet, oldest first. */
  private awaitingEcho: PassedDigit[] = [];

  constructor(
    private readonly onDigit: (key: string, source: DigitSource) => void,
    options: DigitMergerOptions = {},
  ) {
    this.windowMs = options.windowMs ?? 200;
    this.now = options.now ?? (() => performance.now());
  }

  /** A digit from the RFC 4733 receiver. */
  fromTelephoneEvent(key: string): void {
    this.receive(key, "rfc4733");
  }

  /** A digit from the in-band detector. */
  fromInband(key: string): void {
    this.receive(key, "inband");
  }

  private receive(key: string, source: DigitSource): void {
    const at = this.now();
    this.awaitingEcho = this.awaitingEcho.filter((digit) => at - digit.at <= this.windowMs);
    // The oldest matching report pairs with this one: both paths deliver presses in the same order.
    const echoOf = this.awaitingEcho.findIndex((digit) => digit.key === key && digit.source !== source);
    if (echoOf >= 0) {
      this.awaitingEcho.splice(echoOf, 1);
      return;
    }
    this.awaitingEcho.push({ key, source, at });
    this.onDigit(key, source);
  }
}
