/** RFC 3261 section 17 timer values (Table 4 of appendix A). */

/** RTT estimate. */
export const T1 = 500;
/** The maximum retransmit interval for non-INVITE requests and INVITE responses. */
export const T2 = 4_000;
/** The maximum duration a message will remain in the network. */
export const T4 = 5_000;

/** INVITE transaction timeout (client). */
export const TIMER_B = 64 * T1;
/** Non-INVITE transaction timeout (client). */
export const TIMER_F = 64 * T1;
/** Wait time for ACK receipt (INVITE server). */
export const TIMER_H = 64 * T1;
/** RFC 6026: wait time for retransmitted INVITEs and 2xx ACKs in the Accepted state (INVITE server). */
export const TIMER_L = 64 * T1;

/** Wait time for response retransmits (INVITE client): at least 32 s on unreliable transports, 0 on reliable. */
export function timerD(reliable: boolean): number {
  return reliable ? 0 : 32_000;
}

/** Wait time for ACK retransmits (INVITE server): T4 on unreliable transports, 0 on reliable. */
export function timerI(reliable: boolean): number {
  return reliable ? 0 : T4;
}

/** Wait time for request retransmits (non-INVITE server): 64*T1 on unreliable transports, 0 on reliable. */
export function timerJ(reliable: boolean): number {
  return reliable ? 0 : 64 * T1;
}

/** Wait time for response retransmits (non-INVITE client): T4 on unreliable transports, 0 on reliable. */
export function timerK(reliable: boolean): number {
  return reliable ? 0 : T4;
}

/** RFC 3261 section 17.2.1: the INVITE server sends 100 (Trying) when the TU has not responded by then. */
export const TRYING_DELAY = 200;

/** The next interval of the doubling retransmission timers: A doubles unbounded, E and G are capped at T2. */
export function nextInterval(current: number, capped: boolean): number {
  return capped ? Math.min(2 * current, T2) : 2 * current;
}
