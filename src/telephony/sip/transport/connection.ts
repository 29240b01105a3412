/** One stream connection (TCP or TLS) of the SIP transport, accepted or opened by us, and how it is known. */
import type { Socket } from "node:net";
import type { MessageSource } from "./sip-transport.js";
import { normalizeHost } from "./via.js";

/** The transports that run over a connection. */
export type StreamTransport = "TCP" | "TLS";

export function isStream(transport: string): transport is StreamTransport {
  return transport === "TCP" || transport === "TLS";
}

/** The key a connection is found by for a remote endpoint. */
export function endpointKey(transport: StreamTransport, host: string, port: number): string {
  return `${transport}|${normalizeHost(host)}|${port}`;
}

export class Connection {
  buffer: Buffer = Buffer.alloc(0);
  /** When the message being received began to arrive (performance.now()); undefined between messages. */
  partialSince: number | undefined;
  /** When a complete message last passed, either way, or a keep-alive came after one (performance.now()). */
  lastActivity = performance.now();
  /** Whether a complete message has come over it: until then, keep-alives do not count as activity. */
  delivered = false;
  /** The server-transaction branches of the requests received over it (responses go back over it). */
  readonly branches = new Set<string>();
  /** The endpoint keys it is known by. */
  readonly keys = new Set<string>();
  readonly closed: Promise<void>;

  constructor(
    readonly socket: Socket,
    readonly transport: StreamTransport,
    /** Accepted from a peer, not opened by us (ours send keep-alives and are never idle). */
    readonly accepted: boolean,
  ) {
    this.closed = new Promise((resolve) => socket.once("close", () => resolve()));
  }

  get open(): boolean {
    return !this.socket.destroyed && this.socket.writable;
  }

  get source(): MessageSource {
    return {
      transport: this.transport,
      address: normalizeHost(this.socket.remoteAddress ?? ""),
      port: this.socket.remotePort ?? 0,
    };
  }
}
