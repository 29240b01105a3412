/**
 * Time as the code above the sockets sees it: what now is, and a way to be woken later. main.ts hands
 * every part the real one (src/clock.ts); unit tests a fake one that stands still until moved, so
 * that a rule of seconds or hours is tested in milliseconds.
 */

/** What setTimeout returned: given back to clearTimeout, nothing else. */
export type TimerHandle = unknown;

export interface Clock {
  /** Milliseconds since the epoch, as Date.now(). */
  now(): number;
  setTimeout(callback: () => void, delayMs: number): TimerHandle;
  /** No-op for a timer fired or cleared already, and for undefined. */
  clearTimeout(handle: TimerHandle): void;
}
