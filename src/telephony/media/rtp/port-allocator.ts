/**
 * Hands out RTP/RTCP port pairs from a configured range: RTP on an even port and RTCP on the next
 * one (RFC 3550 §11). The cursor rotates through the range, so a port freed by one call is not handed
 * to the next call at once (late packets of the old call would land in the new one), and ports some
 * other process holds are skipped when binding them fails with EADDRINUSE.
 */

import dgram from "node:dgram";
import type { LookupOneOptions } from "node:dns";
import { isIP, isIPv6 } from "node:net";
import { MediaError } from "../media-error.js";

function firstEven(port: number): number {
  return port + (port & 1);
}

/** How many RTP/RTCP pairs (an even port and the odd one above it) the range min-max holds. */
export function portPairCount(min: number, max: number): number {
  return Math.floor((max - firstEven(min) + 1) / 2);
}

export interface BoundPortPair {
  rtp: dgram.Socket;
  rtcp: dgram.Socket;
  /** The RTP port; RTCP is on port + 1. */
  port: number;
}

function isAddressInUse(error: unknown): boolean {
  return (error as NodeJS.ErrnoException).code === "EADDRINUSE";
}

/**
 * Media addresses are IP literals (from SDP), so the sockets skip the DNS lookup dgram makes before
 * every send: it would defer the send to a later tick, after the sender has rewritten its buffer,
 * whereas with a synchronous lookup the datagram is handed to the kernel during the send call.
 */
function literalAddressLookup(
  hostname: string,
  _options: LookupOneOptions,
  callback: (error: NodeJS.ErrnoException | null, address: string, family: number) => void,
): void {
  const family = isIP(hostname);
  if (family === 0) callback(new Error(`not an IP address: ${hostname}`), "", 0);
  else callback(null, hostname, family);
}

function bindSocket(address: string, port: number): Promise<dgram.Socket> {
  return new Promise((resolve, reject) => {
    const type = isIPv6(address) ? "udp6" : "udp4";
    const socket = dgram.createSocket({ type, lookup: literalAddressLookup });
    const onError = (error: Error) => {
      // A failed bind leaves the socket's handle open.
      socket.close();
      reject(error);
    };
    socket.once("error", onError);
    socket.bind({ address, port, exclusive: true }, () => {
      socket.off("error", onError);
      resolve(socket);
    });
  });
}

export class RtpPortAllocator {
  private readonly firstPort: number;
  /** Number of even ports whose odd neighbour is also in the range. */
  private readonly pairCount: number;
  /** Index of the pair to try next. */
  private cursor = 0;
  private readonly inUse = new Set<number>();

  constructor(min: number, max: number) {
    if (!Number.isInteger(min) || !Number.isInteger(max) || min < 1 || max > 65535) {
      throw new RangeError(`RTP port range ${min}-${max} is not within 1-65535`);
    }
    this.firstPort = firstEven(min);
    this.pairCount = portPairCount(min, max);
    if (this.pairCount < 1) throw new RangeError(`RTP port range ${min}-${max} holds no even/odd port pair`);
  }

  /**
   * Binds an RTP socket on the next free even port of the range and an RTCP socket on the port
   * above it, both on `address`. Throws when every pair is taken, or when binding fails for another
   * reason than the port being in use (e.g. an address not on this host).
   */
  async bindPair(address: string): Promise<BoundPortPair> {
    for (let attempt = 0; attempt < this.pairCount; attempt++) {
      const port = this.firstPort + 2 * this.cursor;
      this.cursor = (this.cursor + 1) % this.pairCount;
      if (this.inUse.has(port)) continue;
      // Claimed before the awaits so that concurrent calls do not try the same pair.
      this.inUse.add(port);
      const pair = await this.tryBind(address, port);
      if (pair !== null) return pair;
      this.inUse.delete(port);
    }
    const last = this.firstPort + 2 * this.pairCount - 1;
    throw new MediaError(
      "MEDIA_ERR_NO_FREE_PORT",
      `no free RTP port pair in ${this.firstPort}-${last} on ${address}`,
    );
  }

  /**
   * Binds the pair at `port` (even, RTCP above it), in the range or not: a stream moving here from
   * another allocator keeps its port. Throws when it cannot be bound.
   */
  async bindExactPair(address: string, port: number): Promise<BoundPortPair> {
    if (this.inUse.has(port))
      throw new MediaError("MEDIA_ERR_PORT_TAKEN", `RTP port ${port} is already in use here`);
    this.inUse.add(port);
    const pair = await this.tryBind(address, port).catch((error: unknown) => {
      this.inUse.delete(port);
      throw error;
    });
    if (pair === null) {
      this.inUse.delete(port);
      throw new MediaError(
        "MEDIA_ERR_PORT_TAKEN",
        `RTP port pair ${port}-${port + 1} on ${address} is taken`,
      );
    }
    return pair;
  }

  /** Makes a port handed out by bindPair available again, after its sockets are closed. */
  release(port: number): void {
    this.inUse.delete(port);
  }

  /** Number of port pairs currently handed out. */
  get allocated(): number {
    return this.inUse.size;
  }

  private async tryBind(address: string, port: number): Promise<BoundPortPair | null> {
    let rtp: dgram.Socket;
    try {
      rtp = await bindSocket(address, port);
    } catch (error) {
      if (isAddressInUse(error)) return null;
      this.inUse.delete(port);
      throw error;
    }
    try {
      const rtcp = await bindSocket(address, port + 1);
      return { rtp, rtcp, port };
    } catch (error) {
      rtp.close();
      if (isAddressInUse(error)) return null;
      this.inUse.delete(port);
      throw error;
    }
  }
}
