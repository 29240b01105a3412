/**
 * SIP inputs: mutated messages over UDP and over TCP (whole, split into pieces, several in one
 * write, cut off with the connection closed), and SDP bodies inside otherwise valid INVITEs, re-INVITEs
 * and UPDATEs. Calls that an input happened to set up are ended (ACK, BYE) so that they do not pile up.
 */
import { createSocket } from "node:dgram";
import net from "node:net";
import { parseMessage } from "../../src/telephony/sip/message/parser.js";
import { mutateSdp, mutateSip } from "./mutate.js";
import type { Random } from "./random.js";
import { Call, closingFor, Dialog, offerSdp, okFor, readResponse, SipPeer } from "./sip-peer.js";
import { type Origin, sipSeed } from "./sip-seeds.js";
import { count, type FuzzContext, Pacer, sleep, type Target, type TargetStats } from "./target.js";

/**
 * Each kind of SIP traffic comes from an address of its own, since the service counts and limits
 * requests per source: the live calls 127.0.0.1, the probes 127.0.0.2, the SIP inputs 127.0.0.3 and
 * the SDP inputs 127.0.0.4 (the fuzzed sources reach their limits; the probes must not share them).
 */
export const FUZZ_HOST = "127.0.0.3";
const SDP_HOST = "127.0.0.4";

/** Whether to mutate a seed (the rest go valid, to reach the states behind valid messages). */
const MUTATE = 0.85;

function inputsOf(rng: Random, origin: Origin): Buffer[] {
  return sipSeed(rng, origin).map((message) =>
    rng.chance(MUTATE) ? mutateSip(rng, message) : Buffer.from(message, "latin1"),
  );
}

function answered(stats: TargetStats, bytes: Buffer): ReturnType<typeof readResponse> {
  const response = readResponse(bytes);
  if (response !== undefined) {
    stats.answers++;
    count(stats, String(response.status));
  }
  return response;
}

export function sipUdpTarget(rng: Random, perSecond: number): Target {
  return {
    name: "sip-udp",
    async run(context, stats) {
      const socket = createSocket("udp4");
      await new Promise<void>((resolve) => socket.bind(0, FUZZ_HOST, resolve));
      const origin: Origin = {
        transport: "UDP",
        host: FUZZ_HOST,
        port: socket.address().port,
        servicePort: context.sipPort,
        accessNumber: context.accessNumber,
      };
      const send = (bytes: Buffer | string) => socket.send(Buffer.from(bytes), context.sipPort, "127.0.0.1");
      socket.on("message", (bytes) => {
        const response = answered(stats, bytes);
        if (response === undefined) {
          const ok = okFor(bytes.toString("latin1"));
          if (ok !== undefined) send(ok);
        } else for (const closing of closingFor(response, "UDP", origin.host, origin.port)) send(closing);
      });
      const pacer = new Pacer(perSecond);
      while (context.running()) {
        for (const input of inputsOf(rng, origin)) {
          // Datagrams over 65,507 bytes cannot be sent: cut them to the largest that can.
          send(input.length > 65_507 ? input.subarray(0, 65_507) : input);
          stats.inputs++;
        }
        await pacer.next();
      }
      await sleep(500);
      socket.close();
    },
  };
}

/** A stream connection (TCP, TLS) to the service, reading what comes back as SIP framed by Content-Length. */
export class Connection {
  closed = false;
  #buffer = Buffer.alloc(0);

  constructor(
    readonly socket: net.Socket,
    onMessage: (bytes: Buffer, connection: Connection) => void,
  ) {
    this.socket.on("error", () => {});
    this.socket.on("close", () => {
      this.closed = true;
    });
    this.socket.on("data", (chunk) => {
      this.#buffer = Buffer.concat([this.#buffer, chunk]);
      for (;;) {
        const parsed = parseMessage(this.#buffer, { stream: true });
        if (!parsed.ok) {
          if (!parsed.incomplete) this.#buffer = Buffer.alloc(0);
          return;
        }
        onMessage(this.#buffer.subarray(0, parsed.consumed), this);
        this.#buffer = this.#buffer.subarray(parsed.consumed);
      }
    });
  }

  get port(): number {
    return this.socket.localPort ?? 0;
  }

  write(bytes: Buffer | string): void {
    if (!this.closed) this.socket.write(bytes);
  }
}

/** How a stream target reaches the service: its transport, source and a socket ready to use. */
export interface StreamDialer {
  readonly transport: "TCP" | "TLS";
  readonly host: string;
  /** The service port the messages name (the SIP port; its TLS port for TLS). */
  readonly servicePort: (context: FuzzContext) => number;
  /** A connection, resolved once it can carry SIP (connected, handshake done) or closed. */
  readonly open: (context: FuzzContext) => { socket: net.Socket; ready: string };
  /** Open connections beside the inputs rather than wait for each (TLS: its handshake). */
  readonly inBackground?: boolean;
}

/**
 * SIP messages over stream connections: 4 to 8 kept open, written whole, in pieces, several at once,
 * or cut off; `each` (when given) is called every round, for what a target does beside.
 */
export async function runStream(
  dialer: StreamDialer,
  rng: Random,
  perSecond: number,
  context: FuzzContext,
  stats: TargetStats,
  each?: () => void,
): Promise<void> {
  const pool: Connection[] = [];
  const onMessage = (bytes: Buffer, connection: Connection) => {
    const response = answered(stats, bytes);
    if (response === undefined) {
      const ok = okFor(bytes.toString("latin1"));
      if (ok !== undefined) connection.write(ok);
    } else
      for (const closing of closingFor(response, dialer.transport, dialer.host, connection.port))
        connection.write(closing);
  };
  const opening = new Set<Promise<Connection>>();
  const open = () => {
    const { socket, ready } = dialer.open(context);
    const opened = new Connection(socket, onMessage);
    const done: Promise<Connection> = new Promise<void>((resolve) => {
      opened.socket.once(ready, resolve);
      opened.socket.once("close", resolve);
    }).then(() => {
      opening.delete(done);
      if (!opened.closed) pool.push(opened);
      if (pool.length > 8) pool.shift()?.socket.destroy();
      return opened;
    });
    opening.add(done);
    return done;
  };
  const connection = async (): Promise<Connection> => {
    for (let i = pool.length - 1; i >= 0; i--) if (pool[i]?.closed) pool.splice(i, 1);
    if (!dialer.inBackground) {
      if (pool.length < 4 || rng.chance(0.01)) return open();
      return rng.pick(pool);
    }
    // Handshakes take milliseconds: new connections are made beside the inputs, not before them.
    if (rng.chance(0.01) && opening.size === 0) void open();
    do {
      while (pool.length + opening.size < 4) void open();
      if (pool.length === 0) await Promise.race(opening);
    } while (pool.length === 0);
    return rng.pick(pool);
  };
  const pacer = new Pacer(perSecond);
  while (context.running()) {
    each?.();
    const target = await connection();
    const origin: Origin = {
      transport: dialer.transport,
      host: dialer.host,
      port: target.port,
      servicePort: dialer.servicePort(context),
      accessNumber: context.accessNumber,
    };
    const inputs = inputsOf(rng, origin);
    stats.inputs += inputs.length;
    const bytes = Buffer.concat(inputs);
    const way = rng.below(100);
    if (way < 70) target.write(bytes);
    else if (way < 90) {
      // In pieces, each written on its own turn of the event loop.
      let at = 0;
      while (at < bytes.length && !target.closed) {
        const end = Math.min(bytes.length, at + 1 + rng.length(bytes.length));
        target.write(bytes.subarray(at, end));
        at = end;
        await new Promise((resolve) => setImmediate(resolve));
      }
    } else if (way < 96) {
      // Several at once, one write.
      const more = inputsOf(rng, origin);
      stats.inputs += more.length;
      target.write(Buffer.concat([bytes, ...more]));
    } else {
      // Cut off: part of a message, then the connection is closed (or just left waiting).
      target.write(bytes.subarray(0, rng.below(bytes.length + 1)));
      if (rng.chance(0.5)) target.socket.end();
    }
    await pacer.next();
  }
  await Promise.all(opening);
  await sleep(500);
  for (const open of pool) open.socket.destroy();
}

export function sipTcpTarget(rng: Random, perSecond: number): Target {
  const dialer: StreamDialer = {
    transport: "TCP",
    host: FUZZ_HOST,
    servicePort: (context) => context.sipPort,
    open: (context) => ({
      socket: net.connect({ port: context.sipPort, host: "127.0.0.1", localAddress: FUZZ_HOST }),
      ready: "connect",
    }),
  };
  return {
    name: "sip-tcp",
    run: (context, stats) => runStream(dialer, rng, perSecond, context, stats),
  };
}

export function sdpTarget(rng: Random, perSecond: number): Target {
  return {
    name: "sdp",
    async run(context, stats) {
      const peer = await SipPeer.open(context.sipPort, SDP_HOST);
      const origin = { host: SDP_HOST, port: peer.port };
      let call: Call | undefined;
      const inFlight = new Set<Promise<void>>();
      const settle = (response: Awaited<ReturnType<SipPeer["request"]>>, sdp: string) => {
        if (response === undefined) {
          count(stats, "none");
          if (process.env.FUZZ_DEBUG) process.stderr.write(`unanswered INVITE with ${JSON.stringify(sdp)}\n`);
          return;
        }
        stats.answers++;
        count(stats, String(response.status));
        for (const closing of closingFor(response, "UDP", origin.host, origin.port)) peer.send(closing);
      };
      const pacer = new Pacer(perSecond);
      while (context.running()) {
        stats.inputs++;
        // Cut to what fits in a datagram with the SIP head around it.
        const sdp = mutateSdp(rng, offerSdp(rng.chance(0.5) ? 9 : rng.between(1, 65_535), SDP_HOST)).slice(
          0,
          60_000,
        );
        if (rng.chance(0.6)) {
          // A new call whose offer is the mutated SDP.
          if (inFlight.size >= 16) await Promise.race(inFlight);
          const dialog = new Dialog(peer, context.accessNumber);
          const done: Promise<void> = peer.request(dialog.invite(sdp)).then((response) => {
            settle(response, sdp);
            inFlight.delete(done);
          });
          inFlight.add(done);
        } else {
          // A re-INVITE or UPDATE carrying it, in a call that stays up; dialled again when it ended.
          if (call === undefined || call.ended) {
            await call?.hangup();
            call = await Call.dial(peer, context.accessNumber).catch(() => undefined);
            if (call === undefined) continue;
          }
          const { dialog } = call;
          dialog.cseq++;
          const method = rng.chance(0.7) ? "INVITE" : "UPDATE";
          const response = await peer.request(dialog.invite(sdp, method));
          if (response === undefined) {
            count(stats, "none");
            if (process.env.FUZZ_DEBUG)
              process.stderr.write(`unanswered ${method} with ${JSON.stringify(sdp)}\n`);
          } else {
            stats.answers++;
            count(stats, String(response.status));
            if (method === "INVITE") peer.send(dialog.ack(response.status));
            if (response.status === 481 || response.status === 408) call.ended = true;
          }
        }
        await pacer.next();
      }
      await Promise.all(inFlight);
      await call?.hangup();
      await sleep(500);
      peer.close();
    },
  };
}
