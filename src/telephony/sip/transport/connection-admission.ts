/**
 * Which accepted connections the SIP transport keeps: only from trusted sources, no more than so many
 * from one source and in all (the last share kept for the trunks), and from a peer that must present
 * a certificate (mutual TLS) only one that verifies and names it.
 */
import { type BlockList, isIPv6, type Socket } from "node:net";
import { checkServerIdentity, type TLSSocket } from "node:tls";
import type { MutualTlsPeer, SourceList } from "./sip-transport.js";
import { sourceOf } from "./source-address.js";
import { normalizeHost } from "./via.js";

/** Connections accepted from one source address and in all. */
export interface ConnectionLimits {
  readonly perSource: number;
  readonly total: number;
}

/**
 * A trunk or proxy needs a few connections; a peer wanting more is opening them to exhaust ours. The
 * total, times the stream buffer, bounds what partial messages can hold (128 MB).
 */
export const DEFAULT_MAX_CONNECTIONS: ConnectionLimits = { perSource: 16, total: 2048 };
/** One connection place in this many is kept for the trunks. */
const TRUNK_SHARE_OF_CONNECTIONS = 8;

/** Why an accepted connection is closed at once. */
export interface Refusal {
  /** Its source is not trusted (else: as many are open as allowed). */
  readonly untrusted: boolean;
  readonly reason: string;
}

export class ConnectionAdmission {
  /** Accepted connections open, by source (sourceOf), and their sum. */
  readonly #bySource = new Map<string, number>();
  #accepted = 0;

  constructor(
    private readonly limits: ConnectionLimits,
    /** Undefined: anyone. */
    private readonly trustedSources: SourceList | undefined,
    /** The trunks' addresses; undefined: every source may have the whole total. */
    private readonly trunkSources: BlockList | undefined,
  ) {}

  /**
   * Counts an accepted connection in, until its socket closes; or says why it must be closed: its
   * source is not trusted, or its source, or everyone, has as many as allowed (a stranger: all but the
   * trunks' share).
   */
  admit(socket: Socket): Refusal | undefined {
    const address = normalizeHost(socket.remoteAddress ?? "");
    const family = isIPv6(address) ? "ipv6" : "ipv4";
    if (this.trustedSources !== undefined && !this.trustedSources.check(address, family))
      return { untrusted: true, reason: "connection refused: untrusted source" };
    const source = sourceOf(address);
    const limits = this.limits;
    const fromSource = this.#bySource.get(source) ?? 0;
    const total =
      this.trunkSources === undefined || this.trunkSources.check(address, family)
        ? limits.total
        : limits.total - Math.floor(limits.total / TRUNK_SHARE_OF_CONNECTIONS);
    if (fromSource >= limits.perSource || this.#accepted >= total) {
      return {
        untrusted: false,
        reason:
          fromSource >= limits.perSource
            ? `connection refused: ${fromSource} open from this source`
            : `connection refused: ${this.#accepted} open`,
      };
    }
    this.#accepted++;
    this.#bySource.set(source, fromSource + 1);
    socket.once("close", () => {
      this.#accepted--;
      const left = (this.#bySource.get(source) ?? 1) - 1;
      if (left === 0) this.#bySource.delete(source);
      else this.#bySource.set(source, left);
    });
    return undefined;
  }
}

/**
 * What is wrong with a TLS client's certificate when its source must present one (mutual TLS): none
 * presented, one that does not chain to the trusted CAs, or one that does not name the peer. Undefined
 * when nothing is, or when its source need present none.
 */
export function peerCertificateProblem(
  socket: TLSSocket,
  mutual: readonly MutualTlsPeer[] | undefined,
): string | undefined {
  const address = normalizeHost(socket.remoteAddress ?? "");
  const family = isIPv6(address) ? "ipv6" : "ipv4";
  const peer = mutual?.find((candidate) => candidate.sources.check(address, family));
  if (peer === undefined) return undefined;
  const certificate = socket.getPeerCertificate();
  const problem =
    certificate.raw === undefined
      ? "no certificate presented"
      : !socket.authorized
        ? String(socket.authorizationError)
        : checkServerIdentity(peer.name, certificate)?.message;
  return problem === undefined ? undefined : `client certificate refused (${peer.name}): ${problem}`;
}
