/**
 * A bad network between a service on loopback and its peers (baresip, which cannot drop packets
 * itself), both ways: it drops a share of the RTP each way (or the packets a test picks on the way
 * in) and holds each RTP datagram back a random 0 to `maxDelayMs` (so late and reordered packets
 * happen too), from a seeded generator so that a failure can be reproduced. Nothing on the machine
 * is reconfigured (no tc, no firewall), and other tests' traffic never passes through it.
 *
 * The service binds 127.0.0.1 and advertises 127.0.0.2 (its public address), so peers send to
 * 127.0.0.2, where the relay listens on the service's ports (SIP, RTP, RTCP) and passes each
 * datagram on to 127.0.0.1 from a socket of its own for that peer, as a NAT would; what the
 * service sends back to that socket goes to the peer. The service latches its RTP onto that socket
 * (symmetric RTP) with the peer's first packet, so its packets before then go to the peer directly.
 * SIP and RTCP pass untouched; only RTP (RFC 5761's test: not payload types 64-95) is impaired.
 */
import dgram from "node:dgram";
import { once } from "node:events";
import { seededRandom } from "./seeded-random.js";

export const IMPAIRED_RELAY_ADDRESS = "127.0.0.2";

export interface ImpairedRelayOptions {
  /** The service's ports to listen on (its SIP port, its RTP and RTCP ports). */
  readonly ports: readonly number[];
  /** Where the service is. Default 127.0.0.1. */
  readonly serviceAddress?: string;
  /** The share (0-1) of RTP dropped on the way to the service, and on the way from it; default 0. */
  readonly lossIn?: number;
  readonly lossOut?: number;
  /** Instead of `lossIn`: whether to drop this RTP datagram on its way to the service's `port`. */
  readonly dropIn?: (datagram: Buffer, port: number) => boolean;
  /** Each RTP datagram is held back a random 0 to this many ms, each way. Default 0. */
  readonly maxDelayMs?: number;
  readonly seed?: number;
}

/** RTP and RTCP counts of one direction. */
export interface RelayDirection {
  rtp: number;
  dropped: number;
  rtcp: number;
}

/** Whether a datagram is RTP: version 2, and not RTCP, whose packet types 192-223 RTP's payload types 64-95 would read as. */
export function isRtp(datagram: Buffer): boolean {
  if (datagram.length < 12 || (datagram[0] ?? 0) >> 6 !== 2) return false;
  const second = datagram[1] ?? 0;
  return second < 192 || second > 223;
}

function isRtcp(datagram: Buffer): boolean {
  const second = datagram[1] ?? 0;
  return datagram.length >= 8 && (datagram[0] ?? 0) >> 6 === 2 && second >= 192 && second <= 223;
}

export class ImpairedRelay {
  readonly toService: RelayDirection = { rtp: 0, dropped: 0, rtcp: 0 };
  readonly fromService: RelayDirection = { rtp: 0, dropped: 0, rtcp: 0 };
  readonly #sockets: dgram.Socket[] = [];
  readonly #timers = new Set<NodeJS.Timeout>();
  /**
   * Which packets are dropped, one generator each way so that each way's drops depend on the seed
   * and the packet's place in its own stream alone, whatever the order the two ways interleave in.
   */
  readonly #loseIn: () => number;
  readonly #loseOut: () => number;
  readonly #delay: () => number;
  #closed = false;

  private constructor(private readonly options: ImpairedRelayOptions) {
    const seed = options.seed ?? 1;
    this.#loseIn = seededRandom(seed);
    this.#loseOut = seededRandom(seed + 0x9e3779b9);
    this.#delay = seededRandom(seed + 0x3c6ef372);
  }

  static async start(options: ImpairedRelayOptions): Promise<ImpairedRelay> {
    const relay = new ImpairedRelay(options);
    try {
      for (const port of options.ports) await relay.#listen(port);
    } catch (error) {
      await relay.close();
      throw error;
    }
    return relay;
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
    await Promise.all(
      this.#sockets.splice(0).map((socket) => new Promise<void>((resolve) => socket.close(() => resolve()))),
    );
  }

  async #listen(port: number): Promise<void> {
    const listening = await this.#bind(port);
    const serviceAddress = this.options.serviceAddress ?? "127.0.0.1";
    /** One socket towards the service per peer, keyed "address:port". */
    const towardService = new Map<string, Promise<dgram.Socket>>();
    listening.on("message", (datagram, peer) => {
      const key = `${peer.address}:${peer.port}`;
      let socket = towardService.get(key);
      if (socket === undefined) {
        socket = this.#bind(0).then((bound) => {
          bound.on("message", (reply) =>
            this.#pass(
              reply,
              () => this.#loseOut() < (this.options.lossOut ?? 0),
              this.fromService,
              () => listening.send(reply, peer.port, peer.address),
            ),
          );
          return bound;
        });
        towardService.set(key, socket);
      }
      const ready = socket;
      const dropIn = this.options.dropIn;
      this.#pass(
        datagram,
        dropIn === undefined
          ? () => this.#loseIn() < (this.options.lossIn ?? 0)
          : () => dropIn(datagram, port),
        this.toService,
        () => void ready.then((bound) => bound.send(datagram, port, serviceAddress)),
      );
    });
  }

  /** Sends `datagram` on by `send`: SIP and RTCP at once, RTP maybe not at all, maybe later. */
  #pass(datagram: Buffer, drop: () => boolean, direction: RelayDirection, send: () => void): void {
    if (this.#closed) return;
    if (!isRtp(datagram)) {
      if (isRtcp(datagram)) direction.rtcp++;
      send();
      return;
    }
    direction.rtp++;
    if (drop()) {
      direction.dropped++;
      return;
    }
    const delay = (this.options.maxDelayMs ?? 0) * this.#delay();
    if (delay < 1) {
      send();
      return;
    }
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      if (!this.#closed) send();
    }, delay);
    this.#timers.add(timer);
  }

  async #bind(port: number): Promise<dgram.Socket> {
    const socket = dgram.createSocket("udp4");
    this.#sockets.push(socket);
    socket.bind(port, IMPAIRED_RELAY_ADDRESS);
    await once(socket, "listening");
    // A datagram to a closed port comes back as an error on the next send: not the relay's business.
    socket.on("error", () => undefined);
    return socket;
  }
}

/** RTP (version 2) of payload type `payloadType`. */
export function isRtpOfPayloadType(datagram: Buffer, payloadType: number): boolean {
  return isRtp(datagram) && ((datagram[1] ?? 0) & 0x7f) === payloadType;
}

/** A repeatable pseudo-random share: true `share` of the time. */
export function randomShare(share: number, seed = 1): () => boolean {
  const random = seededRandom(seed);
  return () => random() < share;
}
