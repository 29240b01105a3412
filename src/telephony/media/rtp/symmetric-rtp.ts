/**
 * Symmetric RTP (RFC 4961) towards peers behind NAT: we send where the peer's packets come from, not
 * only where its SDP said, and move when a phone changes networks, without letting a stranger's
 * plain RTP take the stream.
 */

import type { RemoteInfo } from "node:dgram";

/** Where one of our sockets (RTP or RTCP) sends. */
export interface RemoteEndpointState {
  readonly address: string;
  readonly port: number;
  readonly latched: boolean;
}

/** The negotiated address until the first valid packet from the peer latches its source. */
export class RemoteEndpoint implements RemoteEndpointState {
  #address = "";
  #port = 0;
  #latched = false;

  get address(): string {
    return this.#address;
  }

  get port(): number {
    return this.#port;
  }

  get latched(): boolean {
    return this.#latched;
  }

  /** Sends to the negotiated address until a packet latches (again). */
  expect(address: string, port: number): void {
    this.#address = address;
    this.#port = port;
    this.#latched = false;
  }

  /** Answers where a packet came from from now on. */
  latch(source: RemoteInfo): void {
    this.#latched = true;
    this.#address = source.address;
    this.#port = source.port;
  }

  isFrom(source: RemoteInfo): boolean {
    return source.port === this.#port && source.address === this.#address;
  }

  snapshot(): RemoteEndpointState {
    return { address: this.#address, port: this.#port, latched: this.#latched };
  }

  restore(state: RemoteEndpointState): void {
    this.#address = state.address;
    this.#port = state.port;
    this.#latched = state.latched;
  }
}

/** Plain RTP moves to a new source after this many packets in a row from it... */
const RELATCH_PACKETS = 3;
/** ...sent after the latched source has been silent this long (ms). */
const RELATCH_SILENCE_MS = 1000;

/**
 * Whether plain RTP from another source than the latched one moves the stream there (a phone that
 * changed networks). Plain RTP could come from anyone: it moves the stream only with a new SSRC, once
 * the latched source has been silent for RELATCH_SILENCE_MS and the new one has since sent
 * RELATCH_PACKETS packets in sequence; until then it is dropped unheard. (SRTP that authenticated
 * needs no such guard.)
 */
export class RelatchGuard {
  /** Another source sending with a new SSRC, and how many packets in a row it has sent. */
  private candidate: {
    address: string;
    port: number;
    ssrc: number;
    sequenceNumber: number;
    packets: number;
  } | null = null;

  /** `latchedSsrc` is the SSRC heard so far, `silentMs` how long since the latched source's last packet. */
  allows(
    source: RemoteInfo,
    ssrc: number,
    sequenceNumber: number,
    latchedSsrc: number | null,
    silentMs: number,
  ): boolean {
    if (ssrc === latchedSsrc || silentMs < RELATCH_SILENCE_MS) {
      this.candidate = null;
      return false;
    }
    const candidate = this.candidate;
    if (
      candidate !== null &&
      candidate.address === source.address &&
      candidate.port === source.port &&
      candidate.ssrc === ssrc &&
      sequenceNumber === ((candidate.sequenceNumber + 1) & 0xffff)
    ) {
      candidate.packets++;
      candidate.sequenceNumber = sequenceNumber;
      return candidate.packets >= RELATCH_PACKETS;
    }
    this.candidate = { address: source.address, port: source.port, ssrc, sequenceNumber, packets: 1 };
    return false;
  }

  /** The stream moved: no candidate any more. */
  reset(): void {
    this.candidate = null;
  }
}
