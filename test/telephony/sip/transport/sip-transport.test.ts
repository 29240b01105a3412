import assert from "node:assert/strict";
import { createSocket, type Socket as DatagramSocket } from "node:dgram";
import { once } from "node:events";
import { connect, createServer, type Socket } from "node:net";
import { afterEach, beforeEach, describe, it } from "node:test";
import { setTimeout as delay } from "node:timers/promises";
import { parseVia } from "../../../../src/telephony/sip/message/header-values.js";
import { parseMessage } from "../../../../src/telephony/sip/message/parser.js";
import {
  SIP_VERSION,
  SipHeaders,
  type SipMessage,
  type SipRequest,
  type SipResponse,
} from "../../../../src/telephony/sip/message/sip-message.js";
import { type MessageSource, SipTransport } from "../../../../src/telephony/sip/transport/sip-transport.js";

const HOST = "127.0.0.1";

interface Received {
  message: SipMessage;
  source: MessageSource;
}

/** A transport on 127.0.0.1 with a queue of what it delivered. */
async function startTransport(
  extra: Partial<Parameters<typeof SipTransport.listen>[0]> = {},
): Promise<{ transport: SipTransport; next: () => Promise<Received>; received: Received[] }> {
  const received: Received[] = [];
  const waiters: ((r: Received) => void)[] = [];
  const transport = await SipTransport.listen({
    bindAddress: HOST,
    port: 0,
    onMessage: (message, source) => {
      const waiter = waiters.shift();
      if (waiter) waiter({ message, source });
      else received.push({ message, source });
    },
    ...extra,
  });
  const next = (): Promise<Received> => {
    const queued = received.shift();
    if (queued) return Promise.resolve(queued);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("no message delivered in time")), 2000);
      waiters.push((r) => {
        clearTimeout(timer);
        resolve(r);
      });
    });
  };
  return { transport, next, received };
}

function request(via: string, extra: string[] = [], body = ""): string {
  return [
    "OPTIONS sip:conf@example.com SIP/2.0",
    `Via: ${via}`,
    "Max-Forwards: 70",
    "To: <sip:conf@example.com>",
    "From: <sip:alice@example.com>;tag=abc",
    "Call-ID: call-1@example.com",
    "CSeq: 1 OPTIONS",
    ...extra,
    `Content-Length: ${Buffer.byteLength(body)}`,
    "",
    body,
  ].join("\r\n");
}

function responseTo(req: SipRequest, status = 200, reason = "OK"): SipResponse {
  const headers = new SipHeaders();
  for (const name of ["Via", "From", "To", "Call-ID", "CSeq"]) {
    for (const value of req.headers.getAll(name)) headers.append(name, value);
  }
  return { kind: "response", status, reason, version: SIP_VERSION, headers, body: Buffer.alloc(0) };
}

/** A UDP client socket with a queue of received datagrams. */
async function udpClient(): Promise<{ socket: DatagramSocket; port: number; next: () => Promise<Buffer> }> {
  const socket = createSocket("udp4");
  const queue: Buffer[] = [];
  const waiters: ((b: Buffer) => void)[] = [];
  socket.on("message", (bytes) => {
    const waiter = waiters.shift();
    if (waiter) waiter(bytes);
    else queue.push(bytes);
  });
  socket.bind(0, HOST);
  await once(socket, "listening");
  const next = (): Promise<Buffer> => {
    const queued = queue.shift();
    if (queued) return Promise.resolve(queued);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("no datagram in time")), 2000);
      waiters.push((b) => {
        clearTimeout(timer);
        resolve(b);
      });
    });
  };
  return { socket, port: socket.address().port, next };
}

function send(socket: DatagramSocket, text: string | Buffer, port: number): Promise<void> {
  return new Promise((resolve, reject) =>
    socket.send(typeof text === "string" ? Buffer.from(text) : text, port, HOST, (e) =>
      e ? reject(e) : resolve(),
    ),
  );
}

function parsed(bytes: Buffer, stream = false): SipMessage {
  const result = parseMessage(bytes, { stream });
  assert.ok(result.ok, `unparsable: ${bytes.toString()}`);
  return result.message;
}

function topVia(message: SipMessage) {
  const via = parseVia(message.headers.get("Via") ?? "");
  assert.ok(via);
  return via;
}

async function tcpClient(
  port: number,
): Promise<{ socket: Socket; data: () => string; closed: Promise<void> }> {
  const socket = connect({ host: HOST, port });
  let text = "";
  socket.on("data", (chunk: Buffer) => {
    text += chunk.toString();
  });
  socket.on("error", () => {});
  const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  await once(socket, "connect");
  return { socket, data: () => text, closed };
}

async function until(condition: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (condition()) return;
    await delay(10);
  }
  assert.fail(`timed out waiting for ${what}`);
}

describe("SipTransport over UDP", () => {
  let t: Awaited<ReturnType<typeof startTransport>>;
  let client: Awaited<ReturnType<typeof udpClient>>;
  beforeEach(async () => {
    t = await startTransport();
    client = await udpClient();
  });
  afterEach(async () => {
    client.socket.close();
    await t.transport.close();
  });

  it("delivers a request with received and rport stamped on the top Via", async () => {
    await send(
      client.socket,
      request("SIP/2.0/UDP client.invalid:5099;branch=z9hG4bKa1;rport"),
      t.transport.port,
    );
    const { message, source } = await t.next();
    assert.deepEqual(source, { transport: "UDP", address: HOST, port: client.port });
    assert.equal(message.kind, "request");
    const via = topVia(message);
    assert.equal(via.received, HOST);
    assert.equal(via.rport, client.port);
    assert.equal(via.branch, "z9hG4bKa1");
    assert.equal(via.host, "client.invalid");
    assert.equal(via.port, 5099);
  });

  it("adds no received when the sent-by is the source address and no rport was asked", async () => {
    await send(
      client.socket,
      request(`SIP/2.0/UDP ${HOST}:${client.port};branch=z9hG4bKa2`),
      t.transport.port,
    );
    const { message } = await t.next();
    assert.equal(message.headers.get("Via"), `SIP/2.0/UDP ${HOST}:${client.port};branch=z9hG4bKa2`);
  });

  it("adds received (without rport) when the sent-by host differs", async () => {
    await send(client.socket, request("SIP/2.0/UDP 192.0.2.7;branch=z9hG4bKa3"), t.transport.port);
    const via = topVia((await t.next()).message);
    assert.equal(via.received, HOST);
    assert.equal(via.rport, undefined);
  });

  it("routes a response to received:rport rather than the sent-by port", async () => {
    await send(
      client.socket,
      request("SIP/2.0/UDP client.invalid:5099;branch=z9hG4bKb1;rport"),
      t.transport.port,
    );
    const { message } = await t.next();
    assert.equal(message.kind, "request");
    await t.transport.sendResponse(responseTo(message as SipRequest));
    const response = parsed(await client.next());
    assert.equal(response.kind, "response");
    assert.equal((response as SipResponse).status, 200);
    assert.equal(topVia(response).rport, client.port);
  });

  it("answers a malformed request with a readable Via with a 400 mirroring its header fields", async () => {
    const garbled = [
      "INVITE sip:conf@example.com SIP/2.0",
      "Via: SIP/2.0/UDP client.invalid:5099;branch=z9hG4bKc1;rport",
      "From: <sip:alice@example.com>;tag=abc",
      "To: <sip:conf@example.com>",
      "Call-ID: broken-1@example.com",
      "CSeq: 7 INVITE",
      "this line has no colon",
      "",
      "",
    ].join("\r\n");
    await send(client.socket, garbled, t.transport.port);
    const response = parsed(await client.next()) as SipResponse;
    assert.equal(response.status, 400);
    const via = topVia(response);
    assert.equal(via.branch, "z9hG4bKc1");
    assert.equal(via.received, HOST);
    assert.equal(via.rport, client.port);
    assert.equal(response.headers.get("From"), "<sip:alice@example.com>;tag=abc");
    assert.match(response.headers.get("To") ?? "", /^<sip:conf@example\.com>;tag=[0-9a-f]+$/);
    assert.equal(response.headers.get("Call-ID"), "broken-1@example.com");
    assert.equal(response.headers.get("CSeq"), "7 INVITE");
    assert.equal(t.received.length, 0);
    assert.equal(t.transport.stats.answeredMalformed, 1);
  });

  it("answers an unsupported SIP version with 505, keeping an existing To tag", async () => {
    const text = request("SIP/2.0/UDP client.invalid;branch=z9hG4bKc2;rport")
      .replace("SIP/2.0\r\n", "SIP/3.0\r\n")
      .replace("To: <sip:conf@example.com>", "To: <sip:conf@example.com>;tag=xyz");
    await send(client.socket, text, t.transport.port);
    const response = parsed(await client.next()) as SipResponse;
    assert.equal(response.status, 505);
    assert.equal(response.headers.get("To"), "<sip:conf@example.com>;tag=xyz");
  });

  it("drops a garbled datagram silently and keeps working", async () => {
    await send(
      client.socket,
      Buffer.from([0xff, 0x00, 0x13, 0x37, 0x0d, 0x0a, 0x0d, 0x0a, 0x41]),
      t.transport.port,
    );
    await send(client.socket, "\r\n\r\n", t.transport.port);
    await send(client.socket, request("SIP/2.0/UDP client.invalid;branch=z9hG4bKd1"), t.transport.port);
    const { message } = await t.next();
    assert.equal(topVia(message).branch, "z9hG4bKd1");
    assert.equal(t.transport.stats.dropped, 2);
    assert.equal(t.transport.stats.answeredMalformed, 0);
  });

  it("drops responses whose top Via is not this transport's and delivers those that are", async () => {
    const response = (sentBy: string, branch: string) =>
      [
        "SIP/2.0 200 OK",
        `Via: SIP/2.0/UDP ${sentBy};branch=${branch}`,
        "To: <sip:conf@example.com>;tag=1",
        "From: <sip:alice@example.com>;tag=abc",
        "Call-ID: r@example.com",
        "CSeq: 1 OPTIONS",
        "Content-Length: 0",
        "",
        "",
      ].join("\r\n");
    await send(client.socket, response("198.51.100.1:5060", "z9hG4bKe1"), t.transport.port);
    await send(client.socket, response(`${HOST}:${t.transport.port + 1}`, "z9hG4bKe2"), t.transport.port);
    await send(client.socket, response(`${HOST}:${t.transport.port}`, "z9hG4bKe3"), t.transport.port);
    const { message } = await t.next();
    assert.equal(topVia(message).branch, "z9hG4bKe3");
    assert.equal(t.transport.stats.dropped, 2);
  });

  it("survives an onMessage callback that throws", async () => {
    const throwing = await SipTransport.listen({
      bindAddress: HOST,
      port: 0,
      onMessage: () => {
        throw new Error("boom");
      },
    });
    try {
      await send(client.socket, request("SIP/2.0/UDP client.invalid;branch=z9hG4bKf1"), throwing.port);
      await until(() => throwing.stats.dropped === 1, "the drop");
    } finally {
      await throwing.close();
    }
  });

  it("sends requests with its public sent-by and an empty rport in the top Via", async () => {
    const natted = await startTransport({ publicAddress: "203.0.113.9", publicPort: 5070 });
    try {
      const req = parsed(Buffer.from(request("SIP/2.0/UDP placeholder;branch=z9hG4bKg1"))) as SipRequest;
      const sent = await natted.transport.sendRequest(req, {
        host: HOST,
        port: client.port,
        transport: "UDP",
      });
      const arrived = parsed(await client.next());
      assert.equal(arrived.headers.get("Via"), "SIP/2.0/UDP 203.0.113.9:5070;branch=z9hG4bKg1;rport");
      assert.equal(sent.headers.get("Via"), arrived.headers.get("Via"));
      // a request without a Via gets one with a fresh branch
      const bare: SipRequest = {
        ...req,
        headers: new SipHeaders([...req.headers].filter(([n]) => n !== "Via")),
      };
      await natted.transport.sendRequest(bare, { host: HOST, port: client.port, transport: "UDP" });
      assert.match(parsed(await client.next()).headers.get("Via") ?? "", /;branch=z9hG4bK[0-9a-f]+;rport$/);
    } finally {
      await natted.transport.close();
    }
  });
});

describe("SipTransport over TCP", () => {
  let t: Awaited<ReturnType<typeof startTransport>>;
  beforeEach(async () => {
    t = await startTransport({ maxStreamBuffer: 8192 });
  });
  afterEach(async () => {
    await t.transport.close();
  });

  it("delivers two messages written at once", async () => {
    const client = await tcpClient(t.transport.port);
    client.socket.write(
      request("SIP/2.0/TCP client.invalid;branch=z9hG4bKh1;rport") +
        request("SIP/2.0/TCP client.invalid;branch=z9hG4bKh2", [], "v=0\r\n"),
    );
    const first = await t.next();
    const second = await t.next();
    assert.equal(topVia(first.message).branch, "z9hG4bKh1");
    assert.equal(topVia(first.message).rport, client.socket.localPort);
    assert.equal(first.source.transport, "TCP");
    assert.equal(first.source.port, client.socket.localPort);
    assert.equal(topVia(second.message).branch, "z9hG4bKh2");
    assert.equal(second.message.body.toString(), "v=0\r\n");
    client.socket.destroy();
  });

  it("reassembles a message split over three writes", async () => {
    const client = await tcpClient(t.transport.port);
    const wire = Buffer.from(request("SIP/2.0/TCP client.invalid;branch=z9hG4bKi1", [], "hello body"));
    const cuts = [20, wire.length - 5];
    client.socket.write(wire.subarray(0, cuts[0]));
    await delay(30);
    client.socket.write(wire.subarray(cuts[0], cuts[1]));
    await delay(30);
    assert.equal(t.received.length, 0);
    client.socket.write(wire.subarray(cuts[1]));
    const { message } = await t.next();
    assert.equal(message.body.toString(), "hello body");
    client.socket.destroy();
  });

  it("closes a connection whose unframed data exceeds the buffer limit", async () => {
    const client = await tcpClient(t.transport.port);
    const head = request("SIP/2.0/TCP client.invalid;branch=z9hG4bKj1").replace(
      "Content-Length: 0",
      "Content-Length: 100000",
    );
    client.socket.write(head);
    client.socket.write(Buffer.alloc(9000, 0x61));
    await client.closed;
    assert.equal(t.transport.stats.connectionsClosedForOverflow, 1);
    assert.equal(t.received.length, 0);
  });

  it("closes a connection streaming garbage without any header end", async () => {
    const client = await tcpClient(t.transport.port);
    for (let i = 0; i < 10; i++) client.socket.write(Buffer.alloc(1000, 0x62));
    await client.closed;
    assert.ok(t.transport.stats.dropped >= 1);
  });

  it("sends the response back on the connection the request came in on", async () => {
    const client = await tcpClient(t.transport.port);
    // the sent-by port 5099 is not listened on: only the existing connection reaches the client
    client.socket.write(request("SIP/2.0/TCP client.invalid:5099;branch=z9hG4bKk1"));
    const { message } = await t.next();
    await t.transport.sendResponse(responseTo(message as SipRequest, 180, "Ringing"));
    await until(() => client.data().includes("\r\n\r\n"), "the response");
    const response = parsed(Buffer.from(client.data()), true) as SipResponse;
    assert.equal(response.status, 180);
    assert.equal(topVia(response).branch, "z9hG4bKk1");
    client.socket.destroy();
  });

  it("answers a malformed request on its connection with 400, then closes it", async () => {
    const client = await tcpClient(t.transport.port);
    client.socket.write(
      request("SIP/2.0/TCP client.invalid;branch=z9hG4bKl1").replace("Content-Length: 0\r\n", ""),
    );
    await client.closed;
    const response = parsed(Buffer.from(client.data()), true) as SipResponse;
    assert.equal(response.status, 400);
    assert.equal(response.headers.get("Call-ID"), "call-1@example.com");
  });

  it("sends an oversized UDP request over TCP (18.1.1), reusing the connection", async () => {
    const server = createServer();
    let text = "";
    let connections = 0;
    server.on("connection", (socket) => {
      connections++;
      socket.on("data", (chunk: Buffer) => {
        text += chunk.toString();
      });
    });
    server.listen(0, HOST);
    await once(server, "listening");
    const address = server.address();
    assert.ok(address !== null && typeof address === "object");
    try {
      const req = parsed(
        Buffer.from(request("SIP/2.0/UDP x;branch=z9hG4bKm1", [], "a".repeat(2000))),
      ) as SipRequest;
      const destination = { host: HOST, port: address.port, transport: "UDP" as const };
      const sent = await t.transport.sendRequest(req, destination);
      assert.equal(topVia(sent).transport, "TCP");
      await t.transport.sendRequest(req, destination);
      await until(() => text.split("OPTIONS sip:").length === 3, "both requests");
      assert.equal(connections, 1);
    } finally {
      await t.transport.close();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe("SipTransport keep-alive", () => {
  it("sends a double CRLF on a connection it opened, every interval, for as long as it is open (RFC 5626 3.5.1)", async () => {
    const t = await startTransport({ keepAliveIntervalMs: 100 });
    const server = createServer();
    let text = "";
    server.on("connection", (socket) => socket.on("data", (chunk: Buffer) => (text += chunk.toString())));
    server.listen(0, HOST);
    await once(server, "listening");
    const address = server.address();
    assert.ok(address !== null && typeof address === "object");
    try {
      const req = parsed(Buffer.from(request("SIP/2.0/TCP x;branch=z9hG4bKka"))) as SipRequest;
      await t.transport.sendRequest(req, { host: HOST, port: address.port, transport: "TCP" });
      await until(() => text.split("\r\n\r\n").length > 4, "keep-alives after the request");
      assert.ok(text.startsWith("OPTIONS sip:"));
      assert.match(text.slice(text.indexOf("Content-Length: 0") + 21), /^(\r\n\r\n)+$/);
    } finally {
      await t.transport.close();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe("SipTransport lifecycle", () => {
  it("close() releases the UDP and TCP ports and closes open connections", async () => {
    const { transport } = await startTransport();
    const port = transport.port;
    const client = await tcpClient(port);
    await transport.close();
    await client.closed;
    await assert.rejects(
      transport.sendRequest({} as SipRequest, { host: HOST, port: 1, transport: "UDP" }),
      /closed/,
    );
    const udp = createSocket("udp4");
    udp.bind(port, HOST);
    await once(udp, "listening");
    udp.close();
    const server = createServer();
    server.listen(port, HOST);
    await once(server, "listening");
    await new Promise((resolve) => server.close(resolve));
  });

  it("listens on the same fixed port for UDP and TCP", async () => {
    const probe = await startTransport();
    const port = probe.transport.port;
    await probe.transport.close();
    const fixed = await startTransport({ port });
    assert.equal(fixed.transport.port, port);
    await fixed.transport.close();
  });
});
