/**
 * Well-formed probes sent while the fuzzing runs, each of which the service must answer: an OPTIONS
 * over UDP, one over TCP and one over TLS (200), a GET of a conference over HTTP (200), and a live call in the room
 * that must keep receiving audio. Each probe round is counted for every target running at the time.
 */
import net from "node:net";
import { type Agent, request } from "undici";
import { parseMessage } from "../../src/telephony/sip/message/parser.js";
import { type Call, newBranch, newTag, readResponse, type SipPeer } from "./sip-peer.js";
import { tlsFrom } from "./tls-target.js";

/** The probes' own source address (see FUZZ_HOST). */
export const PROBE_HOST = "127.0.0.2";
export const PROBE_KINDS = [
  "sip-udp OPTIONS",
  "sip-tcp OPTIONS",
  "sip-tls OPTIONS",
  "http GET",
  "call audio",
] as const;
export type ProbeKind = (typeof PROBE_KINDS)[number];
const PROBE_TIMEOUT_MS = 5_000;

function options(
  transport: "UDP" | "TCP" | "TLS",
  port: number,
  servicePort: number,
  callId: string,
): string {
  return [
    `OPTIONS sip:bridgeline@127.0.0.1:${servicePort} SIP/2.0`,
    `Via: SIP/2.0/${transport} ${PROBE_HOST}:${port};branch=${newBranch()};rport`,
    `From: <sip:probe@${PROBE_HOST}>;tag=${newTag()}`,
    "To: <sip:bridgeline@127.0.0.1>",
    `Call-ID: ${callId}`,
    "CSeq: 1 OPTIONS",
    "Max-Forwards: 70",
    "Content-Length: 0",
    "",
    "",
  ].join("\r\n");
}

function withTimeout<T>(promise: Promise<T>, fallback: T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<T>((resolve) => {
      timer = setTimeout(() => resolve(fallback), PROBE_TIMEOUT_MS);
    }),
  ]).finally(() => clearTimeout(timer));
}

/** The probes' own TCP or TLS connection, opened again if the service closed it. */
class StreamProbe {
  #socket: net.Socket | undefined;
  #buffer = Buffer.alloc(0);
  readonly #waiting = new Map<string, (status: number) => void>();

  constructor(
    readonly servicePort: number,
    readonly transport: "TCP" | "TLS",
  ) {}

  async #connected(): Promise<net.Socket> {
    if (this.#socket !== undefined && !this.#socket.destroyed) return this.#socket;
    const socket =
      this.transport === "TCP"
        ? net.connect({ port: this.servicePort, host: "127.0.0.1", localAddress: PROBE_HOST })
        : tlsFrom(PROBE_HOST, this.servicePort);
    socket.on("error", () => {});
    socket.on("data", (chunk) => {
      this.#buffer = Buffer.concat([this.#buffer, chunk]);
      for (;;) {
        const parsed = parseMessage(this.#buffer, { stream: true });
        if (!parsed.ok) {
          if (!parsed.incomplete) this.#buffer = Buffer.alloc(0);
          return;
        }
        const response = readResponse(this.#buffer.subarray(0, parsed.consumed));
        this.#buffer = this.#buffer.subarray(parsed.consumed);
        const callId = /^Call-ID:\s*(\S+)/im.exec(response?.text ?? "")?.[1] ?? "";
        this.#waiting.get(callId)?.(response?.status ?? 0);
      }
    });
    this.#buffer = Buffer.alloc(0);
    this.#socket = socket;
    await new Promise((resolve) => {
      socket.once(this.transport === "TCP" ? "connect" : "secureConnect", resolve);
      socket.once("close", resolve);
    });
    return socket;
  }

  async options(): Promise<boolean> {
    const socket = await this.#connected();
    const callId = `probe-${newTag()}`;
    const answered = new Promise<boolean>((resolve) =>
      this.#waiting.set(callId, (status) => resolve(status === 200)),
    );
    socket.write(options(this.transport, socket.localPort ?? 0, this.servicePort, callId));
    const ok = await withTimeout(answered, false);
    this.#waiting.delete(callId);
    return ok;
  }

  close(): void {
    this.#socket?.destroy();
  }
}

export interface ProbeSetup {
  readonly udpPeer: SipPeer;
  readonly servicePort: number;
  readonly tlsPort: number;
  readonly baseUrl: string;
  readonly dispatcher: Agent;
  /** A GET the service must answer 200, with its credentials. */
  readonly get: { path: string; auth: string };
  readonly call: Call;
}

export class Probes {
  readonly #tcp: StreamProbe;
  readonly #tls: StreamProbe;
  #heard: number;

  constructor(readonly setup: ProbeSetup) {
    this.#tcp = new StreamProbe(setup.servicePort, "TCP");
    this.#tls = new StreamProbe(setup.tlsPort, "TLS");
    this.#heard = setup.call.received;
  }

  /** One probe of each kind; resolves with whether each was answered. */
  async round(): Promise<Record<ProbeKind, boolean>> {
    const { udpPeer, servicePort, baseUrl, dispatcher, get, call } = this.setup;
    const udp = udpPeer
      .request(options("UDP", udpPeer.port, servicePort, `probe-${newTag()}`), PROBE_TIMEOUT_MS)
      .then((response) => response?.status === 200);
    const http = withTimeout(
      request(`${baseUrl}${get.path}`, {
        headers: { accept: "application/xml", authorization: get.auth },
        dispatcher,
      }).then(
        async (response) => {
          await response.body.text();
          return response.statusCode === 200;
        },
        () => false,
      ),
      false,
    );
    const [udpOk, tcpOk, tlsOk, httpOk] = await Promise.all([
      udp,
      this.#tcp.options(),
      this.#tls.options(),
      http,
    ]);
    // Audio: the call heard something since the last round (rounds are at least 500 ms apart).
    const audioOk = !call.ended && call.received > this.#heard;
    this.#heard = call.received;
    return {
      "sip-udp OPTIONS": udpOk,
      "sip-tcp OPTIONS": tcpOk,
      "sip-tls OPTIONS": tlsOk,
      "http GET": httpOk,
      "call audio": audioOk,
    };
  }

  close(): void {
    this.#tcp.close();
    this.#tls.close();
  }
}
