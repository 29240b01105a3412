/** The real clock (see domain/clock.ts), the one main.ts wires into every part. */
import type { Clock } from "./domain/clock.js";

/**
 * Node's timers, unreferenced: the sockets and servers keep a running service alive, and a timer
 * left pending (a lingering SIP Timer D, a PIN prompt's wait) does not hold a stopping one.
 */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (callback, delayMs) => setTimeout(callback, delayMs).unref(),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout> | undefined),
};
