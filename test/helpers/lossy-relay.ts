/**
 * A lossy access link in front of a service on loopback, for peers that cannot drop packets
 * themselves (baresip). The service binds 127.0.0.1 and advertises 127.0.0.2 (its public address,
 * in Via, Contact and SDP), so every peer sends to 127.0.0.2. The relay listens there on the service's
 * ports and passes each datagram on to 127.0.0.1 from a socket of its own for that peer, as a NAT
 * would; whatever the service sends back to that socket goes to the peer. `drop` picks datagrams to
 * throw away on the way in. Nothing on the machine is reconfigured (no tc, no firewall), and other
 * tests' traffic never passes through it.
 */
import dgram from "node:dgram";
import { once } from "node:events";
import { seededRandom } from "./seeded-random.js";

export const RELAY_ADDRESS = "127.0.0.2";

export interface LossyRelayOptions {
  /** The service's ports to listen on (its SIP port, its RTP and RTCP ports). */
  readonly ports: readonly number[];
  /** Where the service is. Default 127.0.0.1. */
  readonly serviceAddress?: string;
  /** Whether to drop a datagram sent to the service's `port`. */
  readonly drop: (datagram: Buffer, port: number) => boolean;
}

export class LossyRelay {
  /** Datagrams dropped and passed on the way in. */
  dropped = 0;
  forwarded = 0;
  readonly #sockets: dgram.Socket[] = [];

  private constructor(private readonly options: LossyRelayOptions) {}

  static async start(options: LossyRelayOptions): Promise<LossyRelay> {
    const relay = new LossyRelay(options);
    try {
      for (const port of options.ports) await relay.#listen(port);
    } catch (error) {
      await relay.close();
      throw error;
    }
    return relay;
  }

  async close(): Promise<void> {
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
          bound.on("message", (reply) => listening.send(reply, peer.port, peer.address));
          return bound;
        });
        towardService.set(key, socket);
      }
      if (this.options.drop(datagram, port)) {
        this.dropped++;
        return;
      }
      this.forwarded++;
      void socket.then((bound) => bound.send(datagram, port, serviceAddress));
    });
  }

  async #bind(port: number): Promise<dgram.Socket> {
    const socket = dgram.createSocket("udp4");
    this.#sockets.push(socket);
    socket.bind(port, RELAY_ADDRESS);
    await once(socket, "listening");
    return socket;
  }
}

/** RTP (version 2) of payload type `payloadType`. */
export function isRtpOfPayloadType(datagram: Buffer, payloadType: number): boolean {
  return (
    datagram.length > 12 &&
    datagram[0] !== undefined &&
    datagram[0] >> 6 === 2 &&
    ((datagram[1] ?? 0) & 0x7f) === payloadType
  );
}

/** A repeatable pseudo-random share: true `share` of the time. */
export function randomShare(share: number, seed = 1): () => boolean {
  const random = seededRandom(seed);
  return () => random() < share;
}
