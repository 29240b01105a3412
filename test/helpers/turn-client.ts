/**
 * A TURN client over UDP, written from RFC 8489 (STUN) and RFC 8656 (TURN) for tests against a real
 * TURN server: Allocate with long-term credentials (the 401 with REALM and NONCE, then the request
 * again with USERNAME, REALM, NONCE and MESSAGE-INTEGRITY), CreatePermission, and data sent and
 * received through the relay as Send and Data indications. IPv4 only.
 */
import { createHash, createHmac, randomBytes } from "node:crypto";
import dgram from "node:dgram";

const MAGIC_COOKIE = 0x2112a442;
const HEADER_BYTES = 20;

const METHOD = { allocate: 0x003, createPermission: 0x008, send: 0x006, data: 0x007 } as const;
const CLASS = { request: 0x000, indication: 0x010, success: 0x100, error: 0x110 } as const;

const ATTRIBUTE = {
  username: 0x0006,
  messageIntegrity: 0x0008,
  errorCode: 0x0009,
  xorPeerAddress: 0x0012,
  data: 0x0013,
  realm: 0x0014,
  nonce: 0x0015,
  xorRelayedAddress: 0x0016,
  requestedTransport: 0x0019,
  xorMappedAddress: 0x0020,
} as const;

/** UDP, as the protocol number REQUESTED-TRANSPORT carries. */
const UDP = 17;

export interface TransportAddress {
  address: string;
  port: number;
}

/** A STUN message as read: its type's method and class, and its attributes (the first of each type). */
export interface StunMessage {
  method: number;
  class: number;
  transactionId: Buffer;
  attributes: Map<number, Buffer>;
}

/** A TURN server's answer to a request: success, or the error code and reason. */
export type TurnAnswer =
  | { ok: true; message: StunMessage }
  | { ok: false; code: number; reason: string; message: StunMessage };

function messageType(method: number, kind: number): number {
  // The method's bits are split around the class bits (RFC 8489 section 5).
  return (method & 0x00f) | ((method & 0x070) << 1) | ((method & 0xf80) << 2) | kind;
}

function attribute(type: number, value: Buffer): Buffer {
  const header = Buffer.alloc(4);
  header.writeUInt16BE(type, 0);
  header.writeUInt16BE(value.length, 2);
  return Buffer.concat([header, value, Buffer.alloc((4 - (value.length % 4)) % 4)]);
}

/** XOR-*-ADDRESS value of an IPv4 address (RFC 8489 section 14.2). */
function xorAddress({ address, port }: TransportAddress): Buffer {
  const value = Buffer.alloc(8);
  value.writeUInt8(0x01, 1);
  value.writeUInt16BE(port ^ (MAGIC_COOKIE >>> 16), 2);
  const ip = Buffer.from(address.split(".").map(Number));
  value.writeUInt32BE((ip.readUInt32BE(0) ^ MAGIC_COOKIE) >>> 0, 4);
  return value;
}

export function readXorAddress(value: Buffer): TransportAddress {
  if (value.readUInt8(1) !== 0x01) throw new Error("not an IPv4 address");
  const port = value.readUInt16BE(2) ^ (MAGIC_COOKIE >>> 16);
  const ip = (value.readUInt32BE(4) ^ MAGIC_COOKIE) >>> 0;
  return { address: [ip >>> 24, (ip >>> 16) & 0xff, (ip >>> 8) & 0xff, ip & 0xff].join("."), port };
}

/**
 * A message of `attributes`; with `key`, MESSAGE-INTEGRITY last: the HMAC-SHA1 of the message up to
 * it, its header's length already counting it.
 */
function encode(type: number, transactionId: Buffer, attributes: Buffer[], key?: Buffer): Buffer {
  const body = Buffer.concat(attributes);
  const header = Buffer.alloc(HEADER_BYTES);
  header.writeUInt16BE(type, 0);
  header.writeUInt16BE(body.length + (key === undefined ? 0 : 24), 2);
  header.writeUInt32BE(MAGIC_COOKIE, 4);
  transactionId.copy(header, 8);
  const message = Buffer.concat([header, body]);
  if (key === undefined) return message;
  const integrity = createHmac("sha1", key).update(message).digest();
  return Buffer.concat([message, attribute(ATTRIBUTE.messageIntegrity, integrity)]);
}

export function decode(datagram: Buffer): StunMessage | null {
  if (datagram.length < HEADER_BYTES || datagram.readUInt32BE(4) !== MAGIC_COOKIE) return null;
  const type = datagram.readUInt16BE(0);
  const end = HEADER_BYTES + datagram.readUInt16BE(2);
  const attributes = new Map<number, Buffer>();
  for (let offset = HEADER_BYTES; offset + 4 <= end; ) {
    const attributeType = datagram.readUInt16BE(offset);
    const length = datagram.readUInt16BE(offset + 2);
    if (!attributes.has(attributeType))
      attributes.set(attributeType, datagram.subarray(offset + 4, offset + 4 + length));
    offset += 4 + length + ((4 - (length % 4)) % 4);
  }
  return {
    method: (type & 0x00f) | ((type & 0x0e0) >> 1) | ((type & 0x3e00) >> 2),
    class: type & 0x110,
    transactionId: datagram.subarray(8, 20),
    attributes,
  };
}

function answer(message: StunMessage): TurnAnswer {
  if (message.class === CLASS.success) return { ok: true, message };
  const error = message.attributes.get(ATTRIBUTE.errorCode) ?? Buffer.alloc(4);
  return {
    ok: false,
    code: (error.readUInt8(2) & 0x07) * 100 + error.readUInt8(3),
    reason: error.subarray(4).toString("utf8"),
    message,
  };
}

/** One client: a UDP socket on 127.0.0.1 talking to one TURN server. */
export class TurnClient {
  /** Data indications received: who sent it to the relay, and what. */
  readonly received: { peer: TransportAddress; data: Buffer }[] = [];
  private readonly pending = new Map<string, (message: StunMessage) => void>();
  private key: Buffer | undefined;
  private auth: Buffer[] = [];

  private constructor(
    private readonly socket: dgram.Socket,
    private readonly server: TransportAddress,
  ) {
    socket.on("message", (datagram) => {
      const message = decode(datagram);
      if (message === null) return;
      if (message.method === METHOD.data && message.class === CLASS.indication) {
        const peer = message.attributes.get(ATTRIBUTE.xorPeerAddress);
        const data = message.attributes.get(ATTRIBUTE.data);
        if (peer !== undefined && data !== undefined)
          this.received.push({ peer: readXorAddress(peer), data: Buffer.from(data) });
        return;
      }
      const id = message.transactionId.toString("hex");
      this.pending.get(id)?.(message);
      this.pending.delete(id);
    });
  }

  static async open(server: TransportAddress): Promise<TurnClient> {
    const socket = dgram.createSocket("udp4");
    await new Promise<void>((resolve) => socket.bind(0, "127.0.0.1", resolve));
    return new TurnClient(socket, server);
  }

  /**
   * Sends a request and resolves with the answer, sending it again every 500 ms (RFC 8489's
   * retransmission, shortened for loopback) up to 7 times.
   */
  private async request(method: number, attributes: Buffer[], key?: Buffer): Promise<TurnAnswer> {
    const transactionId = randomBytes(12);
    const datagram = encode(messageType(method, CLASS.request), transactionId, attributes, key);
    const id = transactionId.toString("hex");
    let timer: NodeJS.Timeout | undefined;
    try {
      return answer(
        await new Promise<StunMessage>((resolve, reject) => {
          this.pending.set(id, resolve);
          let sent = 0;
          const send = () => {
            if (sent++ === 7) {
              reject(new Error(`no answer from ${this.server.address}:${this.server.port}`));
              return;
            }
            this.socket.send(datagram, this.server.port, this.server.address);
            timer = setTimeout(send, 500);
          };
          send();
        }),
      );
    } finally {
      clearTimeout(timer);
      this.pending.delete(id);
    }
  }

  /**
   * Allocates a UDP relay with long-term credentials: first unauthenticated, to learn the realm and
   * nonce from the 401, then with the credentials. Returns the second answer (or the first, when it
   * was not the 401 asking for credentials).
   */
  async allocate(username: string, password: string): Promise<TurnAnswer> {
    const transport = attribute(ATTRIBUTE.requestedTransport, Buffer.from([UDP, 0, 0, 0]));
    const challenge = await this.request(METHOD.allocate, [transport]);
    if (challenge.ok || challenge.code !== 401) return challenge;
    const realm = challenge.message.attributes.get(ATTRIBUTE.realm);
    const nonce = challenge.message.attributes.get(ATTRIBUTE.nonce);
    if (realm === undefined || nonce === undefined) throw new Error("a 401 without REALM and NONCE");
    this.key = createHash("md5")
      .update(`${username}:${realm.toString("utf8")}:${password}`)
      .digest();
    this.auth = [
      attribute(ATTRIBUTE.username, Buffer.from(username, "utf8")),
      attribute(ATTRIBUTE.realm, realm),
      attribute(ATTRIBUTE.nonce, nonce),
    ];
    return this.request(METHOD.allocate, [transport, ...this.auth], this.key);
  }

  /** Lets `peer`'s address send to the relay and be sent to (after a successful allocate). */
  createPermission(peer: TransportAddress): Promise<TurnAnswer> {
    return this.request(
      METHOD.createPermission,
      [attribute(ATTRIBUTE.xorPeerAddress, xorAddress(peer)), ...this.auth],
      this.key,
    );
  }

  /** Sends `data` from the relayed address to `peer` (a Send indication). */
  send(peer: TransportAddress, data: Buffer): void {
    this.socket.send(
      encode(messageType(METHOD.send, CLASS.indication), randomBytes(12), [
        attribute(ATTRIBUTE.xorPeerAddress, xorAddress(peer)),
        attribute(ATTRIBUTE.data, data),
      ]),
      this.server.port,
      this.server.address,
    );
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.socket.close(() => resolve()));
  }
}

/** The relayed address of a successful Allocate. */
export function relayedAddress(allocation: TurnAnswer): TransportAddress | undefined {
  const value = allocation.message.attributes.get(ATTRIBUTE.xorRelayedAddress);
  return value === undefined ? undefined : readXorAddress(value);
}
