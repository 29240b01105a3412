/**
 * SIP over TLS: the sip-tcp target's messages over TLS connections to the service's SIP TLS port,
 * and beside them, from an address of their own, abuse of the TLS layer: garbage or plain SIP where a
 * ClientHello belongs, a real ClientHello cut short or damaged (then silence), handshakes dropped
 * midway, clients that offer only TLS 1.0/1.1, renegotiation asked for again and again (TLS 1.2),
 * and connections half-closed after a request. At most ABUSE_OPEN of these are open at once, each
 * closed by the fuzzer after a few seconds.
 */
import net from "node:net";
import tls from "node:tls";
import { junk } from "./media-targets.js";
import { mutateBytes } from "./mutate.js";
import type { Random } from "./random.js";
import { newBranch, newTag, readResponse } from "./sip-peer.js";
import { runStream, type StreamDialer } from "./sip-targets.js";
import { count, type FuzzContext, type Target, type TargetStats } from "./target.js";

/** The TLS inputs' source, and the TLS abuse's (see FUZZ_HOST). */
export const TLS_HOST = "127.0.0.5";
const ABUSE_HOST = "127.0.0.6";
/** Abusive connections open at once, at most (the service allows 64 per source). */
const ABUSE_OPEN = 24;
/** Share of rounds that start an abusive connection too. */
const ABUSE = 0.03;

/**
 * A TLS connection to the service from `localAddress` (tls.connect hands its options to net.connect,
 * though its types leave localAddress out), trusting the service's self-signed certificate.
 */
export function tlsFrom(
  localAddress: string,
  port: number,
  options: tls.ConnectionOptions = {},
): tls.TLSSocket {
  const where: tls.ConnectionOptions & { localAddress: string } = {
    port,
    host: "127.0.0.1",
    localAddress,
    rejectUnauthorized: false,
    servername: "localhost",
    ...options,
  };
  return tls.connect(where);
}

/** The first flight of a real TLS client (a ClientHello), caught by a listener of our own. */
async function clientHello(): Promise<Buffer> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const caught = new Promise<Buffer>((resolve) =>
    server.once("connection", (socket) =>
      socket.once("data", (data: Buffer) => {
        resolve(data);
        socket.destroy();
      }),
    ),
  );
  const address = server.address() as net.AddressInfo;
  const client = tls.connect({ port: address.port, host: "127.0.0.1", servername: "localhost" });
  client.on("error", () => {});
  const hello = await caught;
  client.destroy();
  server.close();
  return hello;
}

function options(port: number, servicePort: number): string {
  return [
    `OPTIONS sip:bridgeline@127.0.0.1:${servicePort};transport=tls SIP/2.0`,
    `Via: SIP/2.0/TLS ${ABUSE_HOST}:${port};branch=${newBranch()};rport`,
    `From: <sip:abuse@${ABUSE_HOST}>;tag=${newTag()}`,
    "To: <sip:bridgeline@127.0.0.1>",
    `Call-ID: abuse-${newTag()}`,
    "CSeq: 1 OPTIONS",
    "Max-Forwards: 70",
    "Content-Length: 0",
    "",
    "",
  ].join("\r\n");
}

/** Abuse of the TLS layer, each kind on a connection of its own. */
class Abuse {
  readonly #open = new Set<net.Socket>();

  constructor(
    readonly rng: Random,
    readonly hello: Buffer,
    readonly stats: TargetStats,
  ) {}

  get open(): number {
    return this.#open.size;
  }

  /**
   * Keeps `socket` for at most `holdMs`, then closes it; counts it against ABUSE_OPEN meanwhile, and
   * tallies its kind, and whether the service closed it first.
   */
  #hold(socket: net.Socket, holdMs: number, kind: string): void {
    count(this.stats, kind);
    this.#open.add(socket);
    socket.on("error", () => {});
    let held = false;
    const timer = setTimeout(() => {
      held = true;
      socket.destroy();
    }, holdMs);
    socket.once("close", () => {
      clearTimeout(timer);
      this.#open.delete(socket);
      if (!held) count(this.stats, `${kind}: closed by the service`);
    });
  }

  #raw(port: number): net.Socket {
    return net.connect({ port, host: "127.0.0.1", localAddress: ABUSE_HOST });
  }

  #tls(port: number, options: tls.ConnectionOptions = {}): tls.TLSSocket {
    return tlsFrom(ABUSE_HOST, port, options);
  }

  /** Starts one kind of abuse (unless ABUSE_OPEN are open); returns at once. */
  start(context: FuzzContext): void {
    if (this.#open.size >= ABUSE_OPEN) return;
    const { rng, stats } = this;
    const port = context.sipTlsPort;
    const hold = rng.between(500, 8_000);
    const kind = rng.below(8);
    stats.inputs++;
    switch (kind) {
      case 0: {
        // Garbage, plain SIP, or HTTP where a ClientHello belongs.
        const socket = this.#raw(port);
        this.#hold(socket, hold, "tls: garbage instead of a ClientHello");
        const garbage = rng.pick([
          junk(rng),
          Buffer.from(options(0, port)),
          Buffer.from("GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
          Buffer.from([0x16, 0x03, 0x01, 0xff, 0xff]),
          Buffer.from([0x80, 0x2e, 0x01, 0x00, 0x02]),
        ]);
        socket.once("connect", () => socket.write(garbage));
        break;
      }
      case 1:
      case 2: {
        // A real ClientHello cut short (or whole), then silence: the handshake never finishes.
        const socket = this.#raw(port);
        this.#hold(
          socket,
          hold,
          kind === 1 ? "tls: ClientHello cut short" : "tls: ClientHello, then silence",
        );
        const cut = kind === 1 ? this.hello.subarray(0, rng.below(this.hello.length)) : this.hello;
        socket.once("connect", () => socket.write(cut));
        break;
      }
      case 3: {
        const socket = this.#raw(port);
        this.#hold(socket, hold, "tls: ClientHello damaged");
        const damaged = mutateBytes(rng, this.hello);
        socket.once("connect", () => socket.write(damaged));
        break;
      }
      case 4: {
        // A real handshake dropped after a few milliseconds, wherever it had got to.
        const socket = this.#tls(port);
        this.#hold(socket, rng.below(20), "tls: handshake dropped midway");
        break;
      }
      case 5: {
        // A client that offers only versions the service refuses.
        const socket = this.#tls(port, {
          minVersion: "TLSv1",
          maxVersion: rng.pick(["TLSv1", "TLSv1.1"] as const),
          ciphers: "DEFAULT@SECLEVEL=0",
        });
        this.#hold(socket, hold, "tls: TLS 1.0/1.1 only");
        socket.once("secureConnect", () =>
          context.found(
            `the SIP TLS listener accepted a ${socket.getProtocol()} handshake (its floor is TLS 1.2)`,
          ),
        );
        break;
      }
      case 6: {
        // Renegotiation, asked for again and again (TLS 1.2 has it; 1.3 does not).
        const socket = this.#tls(port, { maxVersion: "TLSv1.2" });
        this.#hold(socket, hold, "tls: renegotiation");
        let times = rng.between(1, 6);
        const again = () => {
          if (times-- <= 0 || socket.destroyed) {
            if (!socket.destroyed) socket.write(options(socket.localPort ?? 0, port));
            return;
          }
          const asked = socket.renegotiate({ rejectUnauthorized: false }, (error) => {
            count(stats, error === null ? "tls: renegotiated" : "tls: renegotiation refused");
            if (error === null) again();
          });
          if (!asked) count(stats, "tls: renegotiation not sent");
        };
        socket.once("secureConnect", again);
        break;
      }
      default: {
        // Half-open: a request, then our side closed for writing; the answer should still come.
        const socket = this.#tls(port);
        this.#hold(socket, hold, "tls: half-open");
        socket.once("secureConnect", () => {
          socket.end(options(socket.localPort ?? 0, port));
        });
        socket.on("data", (data: Buffer) => {
          const response = readResponse(data);
          if (response !== undefined) count(stats, `tls: half-open answered ${response.status}`);
        });
      }
    }
  }

  close(): void {
    for (const socket of this.#open) socket.destroy();
  }
}

export function sipTlsTarget(rng: Random, perSecond: number): Target {
  const dialer: StreamDialer = {
    transport: "TLS",
    host: TLS_HOST,
    servicePort: (context) => context.sipTlsPort,
    open: (context) => ({
      socket: tlsFrom(TLS_HOST, context.sipTlsPort),
      ready: "secureConnect",
    }),
    inBackground: true,
  };
  return {
    name: "sip-tls",
    async run(context, stats) {
      const abuse = new Abuse(rng, await clientHello(), stats);
      await runStream(dialer, rng, perSecond, context, stats, () => {
        if (rng.chance(ABUSE)) abuse.start(context);
      });
      abuse.close();
    },
  };
}
