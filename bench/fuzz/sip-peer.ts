/**
 * The fuzzer's own SIP user agent over UDP, just enough to hold calls: it sends a request and waits
 * for its final response, ACKs 2xx answers, answers what the service sends it (BYE, OPTIONS) with
 * 200, and reads responses leniently (they may echo damaged fields). Calls dial an access number with
 * an SDP offer, send PCMU every 20 ms from their own RTP socket, type keys as RFC 4733 events and
 * count the RTP they receive. An SRTP call offers RTP/SAVP with an SDES key (RFC 4568) of the suite it
 * is given, protects what it sends and counts only what authenticates under the service's key.
 */
import { randomBytes } from "node:crypto";
import { createSocket, type Socket } from "node:dgram";
import { encodeMulaw } from "../../src/telephony/media/codec/g711.js";
import { dtmfDigitPackets } from "../../src/telephony/media/dtmf/rfc4733.js";
import { rtpPacketLength, writeRtpPacket } from "../../src/telephony/media/rtp/rtp-packet.js";
import { SrtpReceiver, SrtpSender } from "../../src/telephony/media/rtp/srtp.js";
import {
  newSrtpKey,
  SRTP_SUITES,
  type SrtpKeyMaterial,
  type SrtpSuite,
} from "../../src/telephony/media/rtp/srtp-suites.js";

/** Where the service listens. */
const SERVICE_HOST = "127.0.0.1";
const PCMU = 0;
export const TELEPHONE_EVENT = 101;
const FRAME_SAMPLES = 160;

/** A response read leniently. */
export interface Response {
  status: number;
  text: string;
  toTag: string | undefined;
  body: string;
}

export function header(text: string, name: string, compact?: string): string | undefined {
  const names = compact === undefined ? name : `${name}|${compact}`;
  return new RegExp(`^(?:${names})[ \\t]*:[ \\t]*([^\\r\\n]*)`, "im").exec(text)?.[1]?.trim();
}

export function readResponse(bytes: Buffer): Response | undefined {
  const text = bytes.toString("latin1");
  const status = /^SIP\/2\.0 (\d{3})/.exec(text)?.[1];
  if (status === undefined) return undefined;
  const end = text.indexOf("\r\n\r\n");
  return {
    status: Number(status),
    text,
    toTag: /;\s*tag=([^;>\s]+)/i.exec(header(text, "To", "t") ?? "")?.[1],
    body: end < 0 ? "" : text.slice(end + 4),
  };
}

/** 200 to whatever the service asks of us (BYE, OPTIONS, INFO, a re-INVITE); nothing for an ACK. */
export function okFor(request: string): string | undefined {
  const method = /^([A-Z]+) /.exec(request)?.[1];
  if (method === undefined || method === "ACK") return undefined;
  const copied = request
    .split("\r\n")
    .filter((line) => /^(Via|v|From|f|To|t|Call-ID|i|CSeq)\s*:/i.test(line));
  return `SIP/2.0 200 OK\r\n${copied.join("\r\n")}\r\nContent-Length: 0\r\n\r\n`;
}

/**
 * What ends the call an answered INVITE made (ACK then BYE for a 2xx), or the ACK a non-2xx final
 * needs (its top Via's branch); nothing for other responses. Read from the response alone.
 */
export function closingFor(
  response: Response,
  transport: "UDP" | "TCP" | "TLS",
  host: string,
  port: number,
): string[] {
  const cseq = /^(\d+)\s+INVITE$/i.exec(header(response.text, "CSeq") ?? "");
  const from = header(response.text, "From", "f");
  const to = header(response.text, "To", "t");
  const callId = header(response.text, "Call-ID", "i");
  if (
    response.status < 200 ||
    cseq === null ||
    from === undefined ||
    to === undefined ||
    callId === undefined
  )
    return [];
  const number = Number(cseq[1]);
  const target = /<([^>]+)>/.exec(header(response.text, "Contact", "m") ?? to)?.[1] ?? "sip:fuzz@127.0.0.1";
  const via = (branch: string) => `Via: SIP/2.0/${transport} ${host}:${port};branch=${branch};rport`;
  const head = (method: string, n: number, branch: string) =>
    `${method} ${target} SIP/2.0\r\n${via(branch)}\r\nFrom: ${from}\r\nTo: ${to}\r\nCall-ID: ${callId}\r\nCSeq: ${n} ${method}\r\nMax-Forwards: 70\r\nContent-Length: 0\r\n\r\n`;
  if (response.status >= 300) {
    const branch = /;\s*branch=([^;\s,]+)/i.exec(header(response.text, "Via", "v") ?? "")?.[1] ?? newBranch();
    return [head("ACK", number, branch)];
  }
  return [head("ACK", number, newBranch()), head("BYE", number + 1, newBranch())];
}

export function newTag(): string {
  return randomBytes(6).toString("hex");
}

export function newBranch(): string {
  return `z9hG4bK${randomBytes(8).toString("hex")}`;
}

/** The audio port and address of an SDP answer. */
export function mediaOf(sdp: string): { address: string; port: number } | undefined {
  const port = /^m=audio (\d+) /m.exec(sdp)?.[1];
  const address = /^c=IN IP4 (\S+)/m.exec(sdp)?.[1];
  return port === undefined || address === undefined ? undefined : { address, port: Number(port) };
}

/** An SDP offer of PCMU and telephone-event 101 at `host`:`port`; SRTP with `key` when given. */
export function offerSdp(port: number, host: string, version = 1, key?: SrtpKeyMaterial): string {
  const lines = [
    "v=0",
    `o=fuzz 4242 ${version} IN IP4 ${host}`,
    "s=-",
    `c=IN IP4 ${host}`,
    "t=0 0",
    `m=audio ${port} RTP/AVP 0 101`,
    "a=rtpmap:0 PCMU/8000",
    "a=rtpmap:101 telephone-event/8000",
    "a=fmtp:101 0-15",
    "a=ptime:20",
    "a=sendrecv",
  ];
  if (key !== undefined) {
    lines[5] = `m=audio ${port} RTP/SAVP 0 101`;
    lines.push(`a=crypto:1 ${key.suite} inline:${key.inline}`);
  }
  return [...lines, ""].join("\r\n");
}

/** An SDP a=crypto line of a suite we know: its suite and inline key. */
const CRYPTO_LINE = new RegExp(`^a=crypto:\\d+ (${SRTP_SUITES.join("|")}) inline:([A-Za-z0-9+/=]+)`, "m");

/** The SDES key of an SDP answer (its first a=crypto line). */
export function answerKey(sdp: string): SrtpKeyMaterial | undefined {
  const crypto = CRYPTO_LINE.exec(sdp);
  return crypto === null ? undefined : { suite: crypto[1] as SrtpSuite, inline: crypto[2] as string };
}

/** An SRTP call's keys: what it sends under, and what the service sends under. */
export interface CallSrtp {
  readonly ours: SrtpKeyMaterial;
  readonly theirs: SrtpKeyMaterial;
}

export class SipPeer {
  readonly #socket: Socket;
  readonly #waiting = new Map<string, (response: Response) => void>();
  /** What to do when the service ends a call, by Call-ID. */
  readonly byes = new Map<string, () => void>();
  #closed = false;

  private constructor(
    socket: Socket,
    /** The peer's own address: a source of its own, as the service counts requests per source. */
    readonly host: string,
    readonly port: number,
    readonly service: number,
  ) {
    this.#socket = socket;
    socket.on("message", (bytes) => this.#receive(bytes));
  }

  static async open(servicePort: number, host: string): Promise<SipPeer> {
    const socket = createSocket("udp4");
    await new Promise<void>((resolve) => socket.bind(0, host, resolve));
    return new SipPeer(socket, host, socket.address().port, servicePort);
  }

  send(text: string | Buffer): void {
    // A request's retransmission timer may outlive the peer.
    if (this.#closed) return;
    this.#socket.send(typeof text === "string" ? Buffer.from(text) : text, this.service, SERVICE_HOST);
  }

  /** Sends a request and resolves with its final response (retransmitted as UDP needs), or undefined. */
  async request(text: string, timeoutMs = 8000): Promise<Response | undefined> {
    const key = `${header(text, "Call-ID", "i")} ${header(text, "CSeq")}`;
    return new Promise((resolve) => {
      let interval = 500;
      let retransmit: NodeJS.Timeout;
      const resend = () => {
        this.send(text);
        interval = Math.min(interval * 2, 4000);
        retransmit = setTimeout(resend, interval);
      };
      const deadline = setTimeout(() => {
        clearTimeout(retransmit);
        this.#waiting.delete(key);
        resolve(undefined);
      }, timeoutMs);
      this.#waiting.set(key, (response) => {
        clearTimeout(retransmit);
        clearTimeout(deadline);
        resolve(response);
      });
      retransmit = setTimeout(resend, interval);
      this.send(text);
    });
  }

  #receive(bytes: Buffer): void {
    const text = bytes.toString("latin1");
    const response = readResponse(bytes);
    if (response === undefined) {
      this.#answer(text);
      return;
    }
    if (response.status < 200) return;
    const key = `${header(text, "Call-ID", "i")} ${header(text, "CSeq")}`;
    const waiter = this.#waiting.get(key);
    this.#waiting.delete(key);
    waiter?.(response);
  }

  #answer(request: string): void {
    const ok = okFor(request);
    if (ok === undefined) return;
    this.send(ok);
    if (request.startsWith("BYE ")) this.byes.get(header(request, "Call-ID", "i") ?? "")?.();
  }

  close(): void {
    this.#closed = true;
    this.#socket.close();
  }
}

/** The fuzzer's side of a dialog: the fields its requests carry. */
export class Dialog {
  readonly callId = `fuzz-${newTag()}@fuzz`;
  readonly fromTag = newTag();
  readonly uri: string;
  toTag: string | undefined;
  cseq = 1;
  /** The branch of the last request made, which the ACK of a non-2xx answer to it reuses. */
  #branch = newBranch();

  constructor(
    readonly peer: SipPeer,
    number: string,
    /** The caller ID (the service matches a caller to an attendee by it). */
    readonly from = "+16045550177",
  ) {
    this.uri = `sip:${number}@${SERVICE_HOST}:${peer.service}`;
  }

  /** The head of a request in this dialog (the initial INVITE before the answer). */
  head(method: string, cseq = this.cseq, branch = newBranch()): string {
    if (method !== "ACK") this.#branch = branch;
    return [
      `${method} ${this.uri} SIP/2.0`,
      `Via: SIP/2.0/UDP ${this.peer.host}:${this.peer.port};branch=${branch};rport`,
      `From: <sip:${this.from}@${this.peer.host}>;tag=${this.fromTag}`,
      `To: <${this.uri}>${this.toTag === undefined ? "" : `;tag=${this.toTag}`}`,
      `Call-ID: ${this.callId}`,
      `CSeq: ${cseq} ${method}`,
      `Contact: <sip:fuzz@${this.peer.host}:${this.peer.port}>`,
      "Max-Forwards: 70",
    ].join("\r\n");
  }

  /** An INVITE (or UPDATE) carrying `sdp`. */
  invite(sdp: string, method = "INVITE"): string {
    return `${this.head(method)}\r\nContent-Type: application/sdp\r\nContent-Length: ${Buffer.byteLength(sdp)}\r\n\r\n${sdp}`;
  }

  /** The ACK of the last INVITE's final answer: a request of its own for a 2xx, else in its transaction. */
  ack(status = 200): string {
    return `${this.head("ACK", this.cseq, status >= 300 ? this.#branch : newBranch())}\r\nContent-Length: 0\r\n\r\n`;
  }
}

/** A call of the fuzzer to an access number: its dialog, its RTP and what it received. */
export class Call {
  /** RTP packets received on the call's RTP port. */
  received = 0;
  /** Datagrams received on its RTCP port. */
  rtcpReceived = 0;
  ended = false;
  readonly #timer: NodeJS.Timeout;
  readonly #queue: Buffer[] = [];
  readonly #ssrc = randomBytes(4).readUInt32BE(0);
  #sequence = 1000;
  #timestamp = 16_000;
  readonly #frame = new Uint8Array(FRAME_SAMPLES);
  readonly #sender: SrtpSender | undefined;

  private constructor(
    readonly dialog: Dialog,
    readonly rtp: Socket,
    readonly rtcp: Socket,
    /** Where the service receives this call's RTP (its RTCP on the next port). */
    readonly remote: { address: string; port: number },
    /** Its SDES keys, when it is an SRTP call. */
    readonly srtp?: CallSrtp,
  ) {
    const samples = new Int16Array(FRAME_SAMPLES);
    for (let i = 0; i < FRAME_SAMPLES; i++)
      samples[i] = Math.round(300 * Math.sin((2 * Math.PI * 440 * i) / 8000));
    encodeMulaw(samples, this.#frame);
    const receiver = srtp === undefined ? undefined : new SrtpReceiver(srtp.theirs);
    this.#sender = srtp === undefined ? undefined : new SrtpSender(srtp.ours);
    rtp.on("message", (bytes) => {
      if (receiver === undefined || receiver.unprotectRtp(bytes) !== undefined) this.received++;
    });
    rtcp.on("message", () => {
      this.rtcpReceived++;
    });
    // Audio every 20 ms (keys in its place while they are typed), so that the call is never silent.
    this.#timer = setInterval(() => this.#tick(), 20);
  }

  /** An RTP/RTCP socket pair on consecutive ports, the RTP port even. */
  static async #mediaSockets(host: string): Promise<[Socket, Socket]> {
    for (;;) {
      const rtp = createSocket("udp4");
      await new Promise<void>((resolve) => rtp.bind(0, host, resolve));
      const port = rtp.address().port;
      if (port % 2 === 0 && port < 65_535) {
        const rtcp = createSocket("udp4");
        const bound = await new Promise<boolean>((resolve) => {
          rtcp.once("error", () => resolve(false));
          rtcp.bind(port + 1, host, () => resolve(true));
        });
        if (bound) return [rtp, rtcp];
        rtcp.close();
      }
      rtp.close();
    }
  }

  /**
   * Dials `number` at the service; resolves once answered (and ACKed), or throws. With `srtp`, offers
   * RTP/SAVP with a fresh key of that suite and throws unless the answer takes SRTP in it.
   */
  static async dial(peer: SipPeer, number: string, from?: string, srtp?: SrtpSuite): Promise<Call> {
    const [rtp, rtcp] = await Call.#mediaSockets(peer.host);
    const dialog = new Dialog(peer, number, from);
    const ours: SrtpKeyMaterial | undefined = srtp === undefined ? undefined : newSrtpKey(srtp);
    const response = await peer.request(dialog.invite(offerSdp(rtp.address().port, peer.host, 1, ours)));
    const theirs = response === undefined ? undefined : answerKey(response.body);
    const remote =
      response?.status === 200 && (ours === undefined || theirs?.suite === ours.suite)
        ? mediaOf(response.body)
        : undefined;
    if (response === undefined || remote === undefined) {
      rtp.close();
      rtcp.close();
      throw new Error(
        `dialling ${number}: ${response === undefined ? "no answer" : `${response.status}, ${response.body === "" ? "no SDP" : "its SDP"}`}`,
      );
    }
    dialog.toTag = response.toTag;
    peer.send(dialog.ack());
    const call = new Call(
      dialog,
      rtp,
      rtcp,
      remote,
      ours === undefined || theirs === undefined ? undefined : { ours, theirs },
    );
    peer.byes.set(dialog.callId, () => {
      call.ended = true;
    });
    return call;
  }

  /** Types keys as RFC 4733 events on the call's own stream, in place of its audio. */
  typeKeys(keys: string): void {
    for (const key of keys) {
      // Each queued packet is 20 ms of the stream: the key starts when the queue before it ends.
      const timestamp = (this.#timestamp + FRAME_SAMPLES * this.#queue.length) >>> 0;
      for (const event of dtmfDigitPackets(key, { timestamp, durationMs: 100 }))
        this.#queue.push(this.packet(TELEPHONE_EVENT, event.marker, timestamp, event.payload));
      // Silence between keys.
      for (let i = 0; i < 5; i++) this.#queue.push(Buffer.alloc(0));
    }
  }

  /** An RTP packet of this call's stream (the next sequence number) with the given payload. */
  packet(payloadType: number, marker: boolean, timestamp: number, payload: Uint8Array): Buffer {
    const header = {
      marker,
      payloadType,
      sequenceNumber: this.#sequence,
      timestamp,
      ssrc: this.#ssrc,
      csrcs: [],
    };
    this.#sequence = (this.#sequence + 1) & 0xffff;
    const out = Buffer.alloc(rtpPacketLength(header, payload.length));
    writeRtpPacket(header, payload, out);
    return out;
  }

  get timestamp(): number {
    return this.#timestamp;
  }

  get ssrc(): number {
    return this.#ssrc;
  }

  #tick(): void {
    if (this.ended) return;
    const queued = this.#queue.shift();
    const packet =
      queued === undefined || queued.length === 0
        ? this.packet(PCMU, false, this.#timestamp, this.#frame)
        : queued;
    this.#timestamp = (this.#timestamp + FRAME_SAMPLES) >>> 0;
    this.rtp.send(this.#protect(packet), this.remote.port, this.remote.address);
  }

  /** An SRTP call's packet protected (a copy with room for the tag); a plain call's as it is. */
  #protect(packet: Buffer): Buffer {
    const sender = this.#sender;
    if (sender === undefined) return packet;
    const out = Buffer.alloc(packet.length + sender.overhead);
    packet.copy(out);
    return out.subarray(0, sender.protectRtp(out, packet.length));
  }

  /** Sends BYE (unless the service ended the call) and closes the media sockets. */
  async hangup(): Promise<void> {
    const { dialog } = this;
    dialog.peer.byes.delete(dialog.callId);
    if (!this.ended) {
      this.ended = true;
      dialog.cseq++;
      await dialog.peer.request(`${dialog.head("BYE")}\r\nContent-Length: 0\r\n\r\n`, 2000);
    }
    clearInterval(this.#timer);
    this.rtp.close();
    this.rtcp.close();
  }
}
