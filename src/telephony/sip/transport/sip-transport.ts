// Long because receiving and sending share its sockets, connections and response routing (18.2.2).
/**
 * The SIP transport layer (RFC 3261 sections 18 and 26, RFC 3581): UDP and TCP on one address and
 * port, and TLS on a port of its own when given a certificate (connections out over TLS need none).
 * It frames, stamps and routes messages; it knows nothing of transactions, dialogs or conferences.
 * Beside it: a connection (connection.ts), which connections are kept (connection-admission.ts) and
 * the answer to a request the parser refused (refusal.ts).
 */
import { createSocket, type Socket as DatagramSocket } from "node:dgram";
import {
  type BlockList,
  createServer,
  isIP,
  isIPv6,
  type Server,
  type Socket,
  connect as tcpConnect,
} from "node:net";
import {
  createSecureContext,
  createServer as createTlsServer,
  type SecureContextOptions,
  type TLSSocket,
  type Server as TlsServer,
  connect as tlsConnect,
} from "node:tls";
import type { Via } from "../message/header-values.js";
import { type ParseResult, parseMessage } from "../message/parser.js";
import { serializeMessage } from "../message/serializer.js";
import type { SipMessage, SipRequest, SipResponse } from "../message/sip-message.js";
import { Connection, endpointKey, isStream, type StreamTransport } from "./connection.js";
import {
  ConnectionAdmission,
  type ConnectionLimits,
  DEFAULT_MAX_CONNECTIONS,
  peerCertificateProblem,
} from "./connection-admission.js";
import { buildRefusal } from "./refusal.js";
import {
  DEFAULT_SIP_PORT,
  DEFAULT_SIPS_PORT,
  formatHost,
  formatVia,
  newBranch,
  normalizeHost,
  responseTarget,
  stampReceivedVia,
} from "./via.js";

export type TransportName = "UDP" | "TCP" | "TLS";

/** Addresses a source is checked against (a BlockList, or one that changes as instances come and go). */
export interface SourceList {
  check(address: string, family: "ipv4" | "ipv6"): boolean;
}

/** SIP over TLS (RFC 3261 section 26.2.1). */
export interface SipTlsOptions {
  /** The TLS listener's port; 0 picks a free one. */
  readonly port: number;
  /** PEM certificate chain and key this side presents, to clients and to servers that ask for one. */
  readonly cert: string | Buffer;
  readonly key: string | Buffer;
  /**
   * Peers that must present a certificate of their own (mutual TLS): connections from `sources` are
   * kept only when the peer's certificate chains to the trusted CAs (`tlsCa`) and names `name`.
   */
  readonly mutual?: readonly MutualTlsPeer[];
}

/** A peer (a trunk) whose connections to us must carry a certificate that verifies. */
export interface MutualTlsPeer {
  readonly sources: BlockList;
  /** The host its certificate must name (RFC 5922 section 7): its domain, or its address. */
  readonly name: string;
}

/** A certificate and key to present: the pair a listener starts with, or one reloaded. */
export type TlsCertificate = Pick<SipTlsOptions, "cert" | "key">;

/** Where a received message came from. */
export interface MessageSource {
  readonly transport: TransportName;
  readonly address: string;
  readonly port: number;
}

/** Where a request goes: the result of RFC 3263 resolution, done above this layer. */
export interface Destination {
  readonly host: string;
  readonly port: number;
  readonly transport: TransportName;
  /**
   * The domain a TLS peer's certificate must name when `host` is an address found for it in DNS
   * (RFC 5922 section 7): the URI's host, not the address.
   */
  readonly serverName?: string;
}

export interface SipTransportOptions {
  /** The address to bind both sockets to, e.g. "0.0.0.0" or "127.0.0.1". */
  readonly bindAddress: string;
  /** The port for both UDP and TCP; 0 picks a free one (the same for both). */
  readonly port: number;
  /** The host written into the sent-by of outgoing Via values (e.g. the NAT's public address). */
  readonly publicAddress?: string;
  /** The port written into sent-by; defaults to the bound port. */
  readonly publicPort?: number;
  /** Every accepted message, requests with their top Via stamped (18.2.1). Exceptions are caught. */
  readonly onMessage: (message: SipMessage, source: MessageSource) => void;
  /** Told of each dropped message, closed connection or send failure; for logging. Exceptions are caught. */
  readonly onDrop?: (reason: string, source: MessageSource | undefined) => void;
  /** Bytes a stream connection may hold without a complete message before it is closed. */
  readonly maxStreamBuffer?: number;
  /**
   * Connections accepted (TCP and TLS, handshakes under way included) from one source address and in
   * all; one past either is closed at once.
   */
  readonly maxConnections?: ConnectionLimits;
  /** How long a connection may take to send the rest of a message it began, before it is closed. */
  readonly partialMessageTimeoutMs?: number;
  /**
   * How long an accepted connection may carry no complete message, either way, before it is closed:
   * one that has sent none since it was accepted, whatever keep-alives it sent; one that has, when no
   * keep-alive came either and `inUse` says nothing above still needs it. Default 60 s.
   */
  readonly idleTimeoutMs?: number;
  /**
   * Whether a dialog or a transaction still uses the flow from `source` (RFC 5626 section 3): its
   * connection is never closed for being idle, since requests within the dialog go back over it.
   */
  readonly inUse?: (source: MessageSource) => boolean;
  /** How long a TLS client may take over its handshake before its connection is closed; default 10 s. */
  readonly tlsHandshakeTimeoutMs?: number;
  /**
   * The sources connections are accepted from; a connection from anywhere else is closed as it is
   * accepted, before a TLS handshake costs anything. Undefined: anyone.
   */
  readonly trustedSources?: SourceList;
  /**
   * The trunks' addresses: the last eighth of the connections in all is kept for them, so that
   * strangers, however many their sources, cannot take every place a trunk needs.
   */
  readonly trunkSources?: BlockList;
  /** Told of each TLS handshake that failed or peer certificate refused, with the peer; for logging. */
  readonly onTlsFailure?: (reason: string, source: MessageSource) => void;
  /** A UDP request larger than this goes over TCP instead (18.1.1: path MTU 1500 minus 200). */
  readonly udpSizeThreshold?: number;
  /** A TLS listener; without it, TLS is used only for connections this side opens. */
  readonly tls?: SipTlsOptions;
  /**
   * The certificates that peers' TLS certificates must chain to (PEM); default the system's. A peer
   * whose certificate does not verify, or does not name the host connected to, is never sent to.
   */
  readonly tlsCa?: string | Buffer;
  /**
   * How often a connection this side opened sends a double-CRLF keep-alive (RFC 5626 section 3.5.1),
   * so that NATs and firewalls keep it for calls that last; default 30 s.
   */
  readonly keepAliveIntervalMs?: number;
}

export interface TransportStats {
  received: number;
  sent: number;
  dropped: number;
  /** Requests refused by the parser and answered with 400/505 here. */
  answeredMalformed: number;
  connectionsClosedForOverflow: number;
  /** Connections closed as they were accepted: as many open as allowed, from their source or in all. */
  connectionsRefused: number;
  /** Connections closed for leaving a message unfinished too long (a slow sender holding a slot). */
  connectionsClosedForStall: number;
  /** Accepted connections closed for carrying no message too long. */
  connectionsClosedForIdle: number;
  /** Connections closed as accepted because their source is not trusted. */
  connectionsUntrusted: number;
  /** TLS handshakes that failed or timed out, and peer certificates refused. */
  tlsFailures: number;
}

const DEFAULT_MAX_STREAM_BUFFER = 65_536;
/** 64*T1: no message takes longer than a transaction to arrive. */
const DEFAULT_PARTIAL_MESSAGE_TIMEOUT_MS = 32_000;
/**
 * Kamailio closes a connection idle for its tcp_connection_lifetime, 120 s by default; half that
 * here, since a connection over which a call came is kept whatever the time.
 */
const DEFAULT_IDLE_TIMEOUT_MS = 60_000;
/** A handshake is a few round trips: 10 s allows for a slow path, not for a slot held on purpose. */
const DEFAULT_TLS_HANDSHAKE_TIMEOUT_MS = 10_000;
/** How often connections are checked for a stalled message or idleness, at most. */
const SWEEP_INTERVAL_MS = 5_000;
const UDP_RECEIVE_BUFFER_BYTES = 4 * 1024 * 1024;
const DEFAULT_UDP_SIZE_THRESHOLD = 1300;
/** How many server-transaction branches a connection remembers for routing responses back over it. */
const MAX_BRANCHES_PER_CONNECTION = 1024;
/** How many datagram requests whose Via named a stream transport are remembered for their answers. */
const MAX_STRAY_DATAGRAM_SOURCES = 4096;
const CRLF = Buffer.from("\r\n");
const DOUBLE_CRLF = Buffer.from("\r\n\r\n");
const DEFAULT_KEEP_ALIVE_INTERVAL_MS = 30_000;

function branchKey(via: Via): string {
  return `${via.branch ?? ""}|${normalizeHost(via.host)}|${via.port ?? DEFAULT_SIP_PORT}`;
}

export class SipTransport {
  readonly stats: TransportStats = {
    received: 0,
    sent: 0,
    dropped: 0,
    answeredMalformed: 0,
    connectionsClosedForOverflow: 0,
    connectionsRefused: 0,
    connectionsClosedForStall: 0,
    connectionsClosedForIdle: 0,
    connectionsUntrusted: 0,
    tlsFailures: 0,
  };
  readonly #options: SipTransportOptions;
  readonly #udp: DatagramSocket;
  readonly #server: Server;
  readonly #port: number;
  readonly #tlsServer: TlsServer | undefined;
  readonly #tlsPort: number | undefined;
  /** Open connections by every remote endpoint they are known by. */
  readonly #connections = new Map<string, Connection>();
  readonly #connecting = new Map<string, Promise<Connection>>();
  /** Connections by the branch and sent-by of the requests received over them (18.2.2). */
  readonly #byBranch = new Map<string, Connection>();
  readonly #all = new Set<Connection>();
  /**
   * Where datagram requests came from whose top Via names TCP or TLS (RFC 4475 has many): there is no
   * connection to answer on, so the answer goes back as a datagram to the source, by branch.
   */
  readonly #strayDatagrams = new Map<string, { address: string; port: number }>();
  readonly #admission: ConnectionAdmission;
  readonly #sweep: ReturnType<typeof setInterval>;
  /** The certificate presented, as a listener and to servers that ask for one; replaced on reload. */
  #certificate: TlsCertificate | undefined;
  #closing: Promise<void> | undefined;

  private constructor(
    options: SipTransportOptions,
    udp: DatagramSocket,
    server: Server,
    port: number,
    tlsServer: TlsServer | undefined,
  ) {
    this.#options = options;
    this.#udp = udp;
    this.#server = server;
    this.#port = port;
    this.#tlsServer = tlsServer;
    this.#certificate = options.tls;
    this.#admission = new ConnectionAdmission(
      options.maxConnections ?? DEFAULT_MAX_CONNECTIONS,
      options.trustedSources,
      options.trunkSources,
    );
    const tlsAddress = tlsServer?.address();
    this.#tlsPort = typeof tlsAddress === "object" && tlsAddress !== null ? tlsAddress.port : undefined;
    // "connection" comes with the bare socket, before the handshake costs anything.
    tlsServer?.on("connection", (socket: Socket) => this.#guard(() => this.#admit(socket, "TLS")));
    tlsServer?.on("secureConnection", (socket: TLSSocket) =>
      this.#guard(() => {
        if (this.#peerCertificateAccepted(socket)) this.#adopt(socket, "TLS", true);
      }),
    );
    // A handshake that fails or times out (a scanner, a peer that does not trust us) never becomes a
    // connection. Node leaves the socket open after a handshake timeout: it is closed here.
    tlsServer?.on("tlsClientError", (error, socket) => {
      this.#tlsFailed(`TLS handshake failed: ${error.message}`, socket);
      socket.destroy();
    });
    tlsServer?.on("error", (error) => this.#drop(`TLS server error: ${error.message}`, undefined));
    udp.on("message", (bytes, info) =>
      this.#guard(() => this.#onDatagram(bytes, normalizeHost(info.address), info.port)),
    );
    udp.on("error", (error) => this.#drop(`UDP socket error: ${error.message}`, undefined));
    server.on("connection", (socket) =>
      this.#guard(() => {
        if (this.#admit(socket, "TCP")) this.#adopt(socket, "TCP", true);
      }),
    );
    server.on("error", (error) => this.#drop(`TCP server error: ${error.message}`, undefined));
    const stallTimeout = options.partialMessageTimeoutMs ?? DEFAULT_PARTIAL_MESSAGE_TIMEOUT_MS;
    const idleTimeout = options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
    this.#sweep = setInterval(
      () => this.#guard(() => this.#closeStalledAndIdle(stallTimeout, idleTimeout)),
      Math.min(stallTimeout, idleTimeout, SWEEP_INTERVAL_MS),
    ).unref();
  }

  /** Binds UDP and TCP to the same port (retrying when port 0 picked one TCP cannot have). */
  static async listen(options: SipTransportOptions): Promise<SipTransport> {
    const attempts = options.port === 0 ? 10 : 1;
    let lastError: unknown;
    for (let attempt = 0; attempt < attempts; attempt++) {
      // A bigger receive buffer than the default ~208 KB rides out bursts (the kernel caps it at rmem_max).
      const udp = createSocket({
        type: isIPv6(options.bindAddress) ? "udp6" : "udp4",
        recvBufferSize: UDP_RECEIVE_BUFFER_BYTES,
      });
      try {
        await new Promise<void>((resolve, reject) => {
          udp.once("error", reject);
          udp.bind({ port: options.port, address: options.bindAddress, exclusive: true }, () => {
            udp.off("error", reject);
            resolve();
          });
        });
      } catch (error) {
        udp.close();
        throw error;
      }
      const port = udp.address().port;
      const server = createServer({ noDelay: true });
      try {
        await listenOn(server, port, options.bindAddress);
      } catch (error) {
        lastError = error;
        await new Promise<void>((resolve) => udp.close(() => resolve()));
        continue;
      }
      let tlsServer: TlsServer | undefined;
      if (options.tls !== undefined) {
        const mutual = (options.tls.mutual?.length ?? 0) > 0;
        tlsServer = createTlsServer({
          ...serverContext(options.tls, options.tlsCa),
          handshakeTimeout: options.tlsHandshakeTimeoutMs ?? DEFAULT_TLS_HANDSHAKE_TIMEOUT_MS,
          // Asked of every client (it cannot be asked by source), required below of the mutual ones only.
          requestCert: mutual,
          rejectUnauthorized: false,
        });
        try {
          await listenOn(tlsServer, options.tls.port, options.bindAddress);
        } catch (error) {
          await new Promise<void>((resolve) => server.close(() => resolve()));
          await new Promise<void>((resolve) => udp.close(() => resolve()));
          throw error;
        }
      }
      return new SipTransport(options, udp, server, port, tlsServer);
    }
    throw lastError;
  }

  /** The port both sockets are bound to. */
  get port(): number {
    return this.#port;
  }

  /** The TLS listener's port; undefined without one. */
  get tlsPort(): number | undefined {
    return this.#tlsPort;
  }

  /** The sent-by this transport writes into UDP and TCP requests and expects atop their responses (18.1.1, 18.1.2). */
  get sentBy(): { host: string; port: number } {
    return this.sentByFor("UDP");
  }

  /** The sent-by for a transport: TLS has a port of its own. */
  sentByFor(transport: TransportName): { host: string; port: number } {
    const host = this.#options.publicAddress ?? this.#options.bindAddress;
    if (transport === "TLS") return { host, port: this.#tlsPort ?? DEFAULT_SIPS_PORT };
    return { host, port: this.#options.publicPort ?? this.#port };
  }

  /**
   * Sends a request (18.1.1). The top Via gets this transport's sent-by, the transport actually used and an
   * empty rport (RFC 3581); one is added, with a fresh branch, when the request has none. A UDP request
   * larger than the size threshold goes over TCP, falling back to UDP when the connection is refused.
   * Resolves with the request as sent.
   */
  async sendRequest(request: SipRequest, destination: Destination): Promise<SipRequest> {
    this.#checkOpen();
    let transport = destination.transport;
    let sent = this.#stampRequest(request, transport);
    let wire = serializeMessage(sent);
    const threshold = this.#options.udpSizeThreshold ?? DEFAULT_UDP_SIZE_THRESHOLD;
    if (transport === "UDP" && wire.length > threshold) {
      const overTcp = this.#stampRequest(request, "TCP");
      try {
        await this.#sendStream(serializeMessage(overTcp), destination, "TCP");
        return overTcp;
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code !== "ECONNREFUSED" && code !== "ECONNRESET") throw error;
        transport = "UDP";
        sent = this.#stampRequest(request, transport);
        wire = serializeMessage(sent);
      }
    }
    if (transport === "UDP") await this.#sendDatagram(wire, destination.host, destination.port);
    else await this.#sendStream(wire, destination, transport);
    return sent;
  }

  /**
   * Sends a response where its top Via says (18.2.2): over TCP on the connection the request came in on,
   * else a new one to `received` (or the sent-by host) and the sent-by port; over UDP to `maddr`, else to
   * `received` and `rport` (RFC 3581), else to the sent-by.
   */
  async sendResponse(response: SipResponse): Promise<void> {
    this.#checkOpen();
    const via = response.headers.via;
    if (via === undefined) throw new Error("response without a readable top Via");
    const wire = serializeMessage(response);
    if (via.transport === "UDP") {
      const target = responseTarget(via);
      await this.#sendDatagram(wire, target.host, target.port);
      return;
    }
    const stray = this.#strayDatagrams.get(branchKey(via));
    if (stray !== undefined) {
      await this.#sendDatagram(wire, stray.address, stray.port);
      return;
    }
    const transport = via.transport;
    if (!isStream(transport)) throw new Error(`unsupported transport ${transport}`);
    const existing = this.#byBranch.get(branchKey(via));
    if (existing?.open) {
      await this.#write(existing, wire);
      return;
    }
    const host = normalizeHost(via.received ?? via.host);
    if (typeof via.rport === "number") {
      const byRport = this.#connections.get(endpointKey(transport, host, via.rport));
      if (byRport?.open) {
        await this.#write(byRport, wire);
        return;
      }
    }
    const defaultPort = transport === "TLS" ? DEFAULT_SIPS_PORT : DEFAULT_SIP_PORT;
    await this.#sendStream(wire, { host, port: via.port ?? defaultPort, transport }, transport);
  }

  /**
   * Presents a new certificate and key from now on: to TLS clients connecting after this, and to
   * servers that ask for one on connections opened after this. Connections open keep theirs. A pair
   * that does not load (unreadable, or the key not the certificate's) is refused with an error and the
   * one in use kept.
   */
  setCertificate(certificate: TlsCertificate): void {
    this.#checkOpen();
    if (this.#tlsServer === undefined) throw new Error("no TLS listener");
    const context = serverContext(certificate, this.#options.tlsCa);
    // Loaded first (it throws for a key that is not the certificate's): setSecureContext records the
    // options on the listener before it loads them, and a pair that fails must leave it as it was.
    createSecureContext(context);
    this.#tlsServer.setSecureContext(context);
    this.#certificate = certificate;
  }

  /** Whether the sockets are open: not closed, and the stream listeners still listening. */
  get listening(): boolean {
    return this.#closing === undefined && this.#server.listening && (this.#tlsServer?.listening ?? true);
  }

  /** Closes the socket, the server and every connection; resolves when all are closed. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      clearInterval(this.#sweep);
      const serverClosed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
      const tlsServer = this.#tlsServer;
      const tlsClosed = new Promise<void>((resolve) =>
        tlsServer === undefined ? resolve() : tlsServer.close(() => resolve()),
      );
      const udpClosed = new Promise<void>((resolve) => {
        try {
          this.#udp.close(() => resolve());
        } catch {
          resolve();
        }
      });
      for (const connection of this.#all) connection.socket.destroy();
      await Promise.all([serverClosed, tlsClosed, udpClosed, ...[...this.#all].map((c) => c.closed)]);
    })();
    return this.#closing;
  }

  #checkOpen(): void {
    if (this.#closing !== undefined) throw new Error("transport closed");
  }

  #stampRequest(request: SipRequest, transport: TransportName): SipRequest {
    const existing = request.headers.via;
    if (existing === undefined && request.headers.has("Via"))
      throw new Error("request with an unreadable top Via");
    const base: Via = existing ?? {
      protocol: "SIP",
      version: "2.0",
      transport,
      host: "",
      port: undefined,
      params: new Map([["branch", newBranch()]]),
      branch: undefined,
      received: undefined,
      rport: undefined,
    };
    const params = new Map(base.params);
    if (!params.has("rport")) params.set("rport", undefined);
    const value = formatVia({ ...base, transport }, params, this.sentByFor(transport));
    return { ...request, headers: request.headers.withFirst("Via", value) };
  }

  // --- receiving ---

  #onDatagram(bytes: Buffer, address: string, port: number): void {
    const source: MessageSource = { transport: "UDP", address, port };
    const result = parseMessage(bytes, { stream: false });
    if (result.ok) {
      this.#deliver(result.message, source, undefined);
    } else if (!result.incomplete) {
      this.#refused(result, source, undefined);
    }
  }

  /** Counts an accepted connection in, or closes it (see ConnectionAdmission). */
  #admit(socket: Socket, transport: StreamTransport): boolean {
    const refusal = this.#admission.admit(socket);
    if (refusal === undefined) return true;
    if (refusal.untrusted) this.stats.connectionsUntrusted++;
    else this.stats.connectionsRefused++;
    this.#drop(refusal.reason, {
      transport,
      address: normalizeHost(socket.remoteAddress ?? ""),
      port: socket.remotePort ?? 0,
    });
    socket.destroy();
    return false;
  }

  /** A TLS client's certificate, when its source must present one (mutual TLS); else it is closed. */
  #peerCertificateAccepted(socket: TLSSocket): boolean {
    const problem = peerCertificateProblem(socket, this.#options.tls?.mutual);
    if (problem === undefined) return true;
    this.#tlsFailed(problem, socket);
    socket.destroy();
    return false;
  }

  /** A TLS handshake failed or a peer certificate refused: counted, and told with the peer. */
  #tlsFailed(reason: string, socket: Socket): void {
    this.stats.tlsFailures++;
    const source: MessageSource = {
      transport: "TLS",
      address: normalizeHost(socket.remoteAddress ?? ""),
      port: socket.remotePort ?? 0,
    };
    this.#drop(reason, source);
    try {
      this.#options.onTlsFailure?.(reason, source);
    } catch {
      // a failing observer must not take the transport down
    }
  }

  #adopt(socket: Socket, transport: StreamTransport, accepted: boolean): Connection {
    const connection = new Connection(socket, transport, accepted);
    this.#all.add(connection);
    socket.setNoDelay(true);
    socket.on("error", (error) => this.#drop(`connection error: ${error.message}`, connection.source));
    socket.on("data", (chunk: Buffer) => this.#guard(() => this.#onStreamData(connection, chunk)));
    socket.once("close", () => this.#forget(connection));
    if (this.#closing !== undefined) socket.destroy();
    else if (socket.remoteAddress !== undefined && socket.remotePort !== undefined) {
      this.#remember(connection, endpointKey(transport, socket.remoteAddress, socket.remotePort));
    }
    return connection;
  }

  #remember(connection: Connection, key: string): void {
    connection.keys.add(key);
    this.#connections.set(key, connection);
  }

  #forget(connection: Connection): void {
    this.#all.delete(connection);
    for (const key of connection.keys) {
      if (this.#connections.get(key) === connection) this.#connections.delete(key);
    }
    for (const key of connection.branches) {
      if (this.#byBranch.get(key) === connection) this.#byBranch.delete(key);
    }
  }

  #onStreamData(connection: Connection, chunk: Buffer): void {
    connection.buffer = connection.buffer.length === 0 ? chunk : Buffer.concat([connection.buffer, chunk]);
    for (;;) {
      // CRLFs between messages are keep-alives; a double CRLF ping gets a CRLF pong (RFC 5626 3.5.1)
      let start = 0;
      const buffer = connection.buffer;
      while (buffer[start] === 0x0d && buffer[start + 1] === 0x0a) start += 2;
      if (start > 0) {
        if (connection.delivered) connection.lastActivity = performance.now();
        if (start >= 4 && connection.open) connection.socket.write(CRLF);
        connection.buffer = buffer.subarray(start);
      }
      if (connection.buffer.length === 0) {
        connection.partialSince = undefined;
        return;
      }
      const result = parseMessage(connection.buffer, { stream: true });
      if (result.ok) {
        connection.buffer = connection.buffer.subarray(result.consumed);
        connection.partialSince = undefined;
        connection.delivered = true;
        connection.lastActivity = performance.now();
        this.#deliver(result.message, connection.source, connection);
        if (connection.socket.destroyed) return;
        continue;
      }
      if (result.incomplete) {
        const limit = this.#options.maxStreamBuffer ?? DEFAULT_MAX_STREAM_BUFFER;
        if (connection.buffer.length > limit) {
          this.stats.connectionsClosedForOverflow++;
          this.#drop("stream buffer limit exceeded: connection closed", connection.source);
          connection.buffer = Buffer.alloc(0);
          connection.socket.destroy();
        }
        connection.partialSince ??= performance.now();
        return;
      }
      // Framing is lost after a refusal: answer if possible, then close the connection once that is written
      this.#refused(result, connection.source, connection);
      connection.buffer = Buffer.alloc(0);
      connection.socket.end();
      return;
    }
  }

  /**
   * Closes the connections that began a message longer ago than the stall timeout and have not
   * finished it, and the accepted ones idle longer than the idle timeout (see `idleTimeoutMs`).
   */
  #closeStalledAndIdle(stallTimeoutMs: number, idleTimeoutMs: number): void {
    const now = performance.now();
    for (const connection of this.#all) {
      if (connection.partialSince !== undefined) {
        if (now - connection.partialSince <= stallTimeoutMs) continue;
        this.stats.connectionsClosedForStall++;
        this.#drop(
          `a message left unfinished for ${stallTimeoutMs} ms: connection closed`,
          connection.source,
        );
        connection.socket.destroy();
        continue;
      }
      if (!connection.accepted || now - connection.lastActivity <= idleTimeoutMs) continue;
      // Only a connection that carried a message can carry a dialog or a transaction.
      if (connection.delivered && this.#options.inUse?.(connection.source)) continue;
      this.stats.connectionsClosedForIdle++;
      this.#drop(`no message for ${idleTimeoutMs} ms: connection closed`, connection.source);
      connection.socket.destroy();
    }
  }

  #deliver(message: SipMessage, source: MessageSource, connection: Connection | undefined): void {
    let delivered = message;
    if (message.kind === "request") {
      const received = message.headers.via;
      if (received === undefined) {
        this.#drop("request without a readable Via", source);
        return;
      }
      const stamped = stampReceivedVia(received, source.address, source.port);
      if (stamped !== undefined)
        delivered = { ...message, headers: message.headers.withFirst("Via", stamped) };
      const via = delivered.headers.via;
      if (connection !== undefined) {
        if (via !== undefined) this.#rememberBranch(connection, branchKey(via));
      } else if (via !== undefined && via.transport !== "UDP") {
        this.#strayDatagrams.delete(branchKey(via));
        this.#strayDatagrams.set(branchKey(via), { address: source.address, port: source.port });
        if (this.#strayDatagrams.size > MAX_STRAY_DATAGRAM_SOURCES)
          this.#strayDatagrams.delete(this.#strayDatagrams.keys().next().value as string);
      }
    } else {
      // 18.1.2: a response whose top Via is not ours is discarded
      const via = message.headers.via;
      const sentBy = this.sentByFor(source.transport);
      if (
        via === undefined ||
        normalizeHost(via.host) !== normalizeHost(sentBy.host) ||
        (via.port ?? DEFAULT_SIP_PORT) !== sentBy.port
      ) {
        this.#drop("response whose top Via sent-by is not this transport's", source);
        return;
      }
    }
    this.stats.received++;
    try {
      this.#options.onMessage(delivered, source);
    } catch (error) {
      this.#drop(`onMessage threw: ${String(error)}`, source);
    }
  }

  #rememberBranch(connection: Connection, key: string): void {
    connection.branches.delete(key);
    connection.branches.add(key);
    this.#byBranch.set(key, connection);
    if (connection.branches.size > MAX_BRANCHES_PER_CONNECTION) {
      const oldest = connection.branches.values().next().value as string;
      connection.branches.delete(oldest);
      if (this.#byBranch.get(oldest) === connection) this.#byBranch.delete(oldest);
    }
  }

  /** A message the parser refused: a request with a Via is answered (8.2.6.2, 18.2.2), the rest dropped. */
  #refused(
    result: Extract<ParseResult, { incomplete: false }>,
    source: MessageSource,
    connection: Connection | undefined,
  ): void {
    this.#drop(`unparsable message: ${result.error}`, source);
    if (!result.canRespond || result.partial === undefined) return;
    const response = buildRefusal(result.partial, result.status, source);
    const wire = serializeMessage(response);
    this.stats.answeredMalformed++;
    if (connection !== undefined) {
      this.#write(connection, wire).catch((error: unknown) => this.#sendFailed(error, source));
      return;
    }
    const via = response.headers.via;
    const target = via === undefined ? { host: source.address, port: source.port } : responseTarget(via);
    this.#sendDatagram(wire, target.host, target.port).catch((error: unknown) =>
      this.#sendFailed(error, source),
    );
  }

  // --- sending ---

  #sendDatagram(wire: Buffer, host: string, port: number): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#udp.send(wire, port, host, (error) => {
        if (error) reject(error);
        else {
          this.stats.sent++;
          resolve();
        }
      });
    });
  }

  async #sendStream(wire: Buffer, to: Destination, transport: StreamTransport): Promise<void> {
    const connection = await this.#connectionTo(to.host, to.port, transport, to.serverName);
    await this.#write(connection, wire);
  }

  #write(connection: Connection, wire: Buffer): Promise<void> {
    return new Promise((resolve, reject) => {
      if (!connection.open) {
        reject(new Error("connection closed"));
        return;
      }
      connection.socket.write(wire, (error) => {
        if (error) reject(error);
        else {
          connection.lastActivity = performance.now();
          this.stats.sent++;
          resolve();
        }
      });
    });
  }

  /** An open connection to the endpoint: an existing one (accepted or opened), else a new one. */
  async #connectionTo(
    host: string,
    port: number,
    transport: StreamTransport,
    serverName?: string,
  ): Promise<Connection> {
    const key = endpointKey(transport, host, port);
    const existing = this.#connections.get(key);
    if (existing?.open) return existing;
    const pending = this.#connecting.get(key);
    if (pending !== undefined) return pending;
    const opening = this.#open(host, port, transport, serverName).finally(() => this.#connecting.delete(key));
    this.#connecting.set(key, opening);
    return opening;
  }

  /**
   * Opens a connection. Over TLS the peer's certificate must chain to the trusted CAs and name the
   * domain dialled (`serverName`, else the host: its DNS name, or its IP address for an address):
   * anything else fails the send, and nothing is ever sent in plain text instead (26.2.1).
   */
  #open(host: string, port: number, transport: StreamTransport, serverName?: string): Promise<Connection> {
    this.#checkOpen();
    return new Promise((resolve, reject) => {
      const socket =
        transport === "TLS"
          ? tlsConnect({
              host,
              port,
              servername: serverName ?? (isIP(host) === 0 ? host : undefined),
              ca: this.#options.tlsCa,
              rejectUnauthorized: true,
              minVersion: "TLSv1.2",
              // Our certificate, for a server that asks (a trunk that wants mutual TLS).
              cert: this.#certificate?.cert,
              key: this.#certificate?.key,
            })
          : tcpConnect({ host, port, noDelay: true });
      const onError = (error: Error): void => {
        socket.destroy();
        reject(
          transport === "TLS"
            ? new Error(`TLS to ${formatHost(host)}:${port} failed: ${error.message}`, { cause: error })
            : error,
        );
      };
      socket.once("error", onError);
      socket.once(transport === "TLS" ? "secureConnect" : "connect", () => {
        socket.off("error", onError);
        socket.setNoDelay(true);
        const connection = this.#adopt(socket, transport, false);
        this.#remember(connection, endpointKey(transport, host, port));
        const keepAlive = setInterval(() => {
          if (connection.open) socket.write(DOUBLE_CRLF);
        }, this.#options.keepAliveIntervalMs ?? DEFAULT_KEEP_ALIVE_INTERVAL_MS);
        keepAlive.unref();
        socket.once("close", () => clearInterval(keepAlive));
        resolve(connection);
      });
    });
  }

  #sendFailed(error: unknown, source: MessageSource | undefined): void {
    this.#drop(`send failed: ${error instanceof Error ? error.message : String(error)}`, source);
  }

  #drop(reason: string, source: MessageSource | undefined): void {
    this.stats.dropped++;
    try {
      this.#options.onDrop?.(reason, source);
    } catch {
      // a failing observer must not take the transport down
    }
  }

  /** Runs a socket handler so that nothing it throws escapes into the event loop. */
  #guard(handler: () => void): void {
    try {
      handler();
    } catch (error) {
      this.#drop(`handler threw: ${String(error)}`, undefined);
    }
  }
}

/** What the TLS listener presents and what clients' certificates must chain to. */
function serverContext(certificate: TlsCertificate, ca: string | Buffer | undefined): SecureContextOptions {
  return { cert: certificate.cert, key: certificate.key, ca, minVersion: "TLSv1.2" };
}

function listenOn(server: Server | TlsServer, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen({ port, host }, () => {
      server.off("error", reject);
      resolve();
    });
  });
}
