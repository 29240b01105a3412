/**
 * Connections that hold a slot without using it, against real sockets on loopback: accepted ones that
 * carry no message past the idle timeout are closed (not those carrying a call), TLS handshakes that
 * never finish are closed and told with their source, a flood of idle connections from one source is
 * capped, and a stranger's connections are closed as accepted while a trusted peer (a trunk) still
 * connects and is answered by the user agent.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { BlockList, connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { connect as tlsConnect } from "node:tls";
import { parseMessage } from "../../../../src/telephony/sip/message/parser.js";
import { type MessageSource, SipTransport } from "../../../../src/telephony/sip/transport/sip-transport.js";
import { UserAgent } from "../../../../src/telephony/sip/user-agent/user-agent.js";
import { testAuthority } from "../../../helpers/certificates.js";
import { until } from "../../../helpers/until.js";

const opened: Socket[] = [];
const certificateDir = mkdtempSync(join(tmpdir(), "bridgeline-idle-connections-"));
after(() => {
  for (const socket of opened) socket.destroy();
  rmSync(certificateDir, { recursive: true, force: true });
});

/** A connection from `from`, open once connected; `closed` settles when the service closes it. */
async function open(port: number, from: string): Promise<{ socket: Socket; closed: Promise<void> }> {
  const socket = connect({ host: "127.0.0.1", port, localAddress: from });
  opened.push(socket);
  const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  socket.on("error", () => {});
  await new Promise<void>((resolve) => {
    socket.once("connect", () => resolve());
    socket.once("close", () => resolve());
  });
  return { socket, closed };
}

/** Whether the connection is still open after `ms` (a closed one settles `closed` first). */
async function stillOpenAfter(connection: { closed: Promise<void> }, ms: number): Promise<boolean> {
  return Promise.race([
    connection.closed.then(() => false),
    new Promise<boolean>((resolve) => setTimeout(() => resolve(true), ms)),
  ]);
}

function request(method: "OPTIONS" | "INVITE", from: string, port: number, callId: string): string {
  const sdp =
    "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 40000 RTP/AVP 0\r\n";
  const body = method === "INVITE" ? sdp : "";
  return [
    `${method} sip:service@127.0.0.1 SIP/2.0`,
    `Via: SIP/2.0/TCP ${from}:${port};branch=z9hG4bK${callId};rport`,
    "Max-Forwards: 70",
    `From: <sip:peer@${from}>;tag=${callId}`,
    "To: <sip:service@127.0.0.1>",
    `Call-ID: ${callId}`,
    `CSeq: 1 ${method}`,
    `Contact: <sip:peer@${from}:${port};transport=tcp>`,
    ...(method === "INVITE" ? ["Content-Type: application/sdp"] : []),
    `Content-Length: ${body.length}`,
    "",
    body,
  ].join("\r\n");
}

/** Sends a request over the connection and resolves with the status of the first response past 100. */
function ask(socket: Socket, method: "OPTIONS" | "INVITE", callId: string): Promise<number> {
  return new Promise((resolve, reject) => {
    let buffer = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      for (;;) {
        const parsed = parseMessage(buffer, { stream: true });
        if (!parsed.ok) return;
        buffer = buffer.subarray(parsed.consumed);
        if (parsed.message.kind === "response" && parsed.message.status > 100) {
          socket.off("data", onData);
          resolve(parsed.message.status);
          return;
        }
      }
    };
    socket.on("data", onData);
    socket.once("close", () => reject(new Error(`closed before an answer to ${method}`)));
    socket.write(request(method, socket.localAddress ?? "", socket.localPort ?? 0, callId));
  });
}

/** A transport answered by a real user agent; INVITEs are left ringing (pending) until the test ends. */
async function service(
  options: Partial<Parameters<typeof SipTransport.listen>[0]>,
): Promise<{ transport: SipTransport; agent: UserAgent }> {
  let agent: UserAgent | undefined;
  const transport = await SipTransport.listen({
    bindAddress: "127.0.0.1",
    port: 0,
    onMessage: (message, source) => agent?.receive(message, source),
    inUse: (flow) => agent?.usesFlow(flow) ?? false,
    ...options,
  });
  agent = new UserAgent(transport);
  agent.onInvite((session) => session.ring());
  return { transport, agent };
}

test("an accepted connection carrying no message is closed after the idle timeout; one carrying a call is kept", {
  timeout: 20_000,
}, async () => {
  const { transport } = await service({ idleTimeoutMs: 400 });
  try {
    const silent = await open(transport.port, "127.0.0.1");
    // Keep-alives alone are not a use: a peer must send SIP to keep a slot.
    const pinging = await open(transport.port, "127.0.0.1");
    const pings = setInterval(() => pinging.socket.write("\r\n\r\n"), 100);
    const asked = await open(transport.port, "127.0.0.1");
    assert.equal(await ask(asked.socket, "OPTIONS", "idle-options"), 200);
    const calling = await open(transport.port, "127.0.0.1");
    assert.equal(await ask(calling.socket, "INVITE", "idle-invite"), 180);
    try {
      await Promise.all([silent.closed, pinging.closed, asked.closed]);
    } finally {
      clearInterval(pings);
    }
    assert.equal(transport.stats.connectionsClosedForIdle, 3);
    assert.ok(await stillOpenAfter(calling, 1000), "the connection a call came over is kept while it lasts");
  } finally {
    await transport.close();
  }
});

test("idle connections from one source are capped, then closed after the idle timeout, making room", {
  timeout: 20_000,
}, async () => {
  const { transport } = await service({
    idleTimeoutMs: 500,
    maxConnections: { perSource: 4, total: 64 },
  });
  try {
    const flood = await Promise.all(Array.from({ length: 20 }, () => open(transport.port, "127.0.0.5")));
    await until("the connections past the cap closed", async () =>
      transport.stats.connectionsRefused >= 16 ? true : undefined,
    );
    const kept = (await Promise.all(flood.map((connection) => stillOpenAfter(connection, 100)))).filter(
      Boolean,
    );
    assert.equal(kept.length, 4, "four kept, the rest closed as accepted");
    assert.equal(transport.stats.connectionsRefused, 16);
    await Promise.all(flood.map((connection) => connection.closed));
    assert.equal(transport.stats.connectionsClosedForIdle, 4);
    const again = await open(transport.port, "127.0.0.5");
    assert.equal(await ask(again.socket, "OPTIONS", "after-flood"), 200, "the source is served again");
  } finally {
    await transport.close();
  }
});

test("a stranger's connections are closed as accepted; the trunk connects and is answered meanwhile", {
  timeout: 20_000,
}, async () => {
  const trunk = new BlockList();
  trunk.addAddress("127.0.0.2");
  const { transport } = await service({ trustedSources: trunk });
  try {
    const strangers = await Promise.all(
      Array.from({ length: 30 }, (_, index) => open(transport.port, `127.0.0.${10 + (index % 3)}`)),
    );
    await Promise.all(strangers.map((connection) => connection.closed));
    assert.equal(transport.stats.connectionsUntrusted, 30);
    const fromTrunk = await open(transport.port, "127.0.0.2");
    assert.equal(await ask(fromTrunk.socket, "OPTIONS", "trunk-options"), 200);
    assert.equal(await ask(fromTrunk.socket, "INVITE", "trunk-invite"), 180);
  } finally {
    await transport.close();
  }
});

test("strangers from many sources fill all but the trunks' share: the trunk still connects and is answered", {
  timeout: 20_000,
}, async () => {
  const trunk = new BlockList();
  trunk.addAddress("127.0.0.2");
  // Anyone trusted (BRIDGELINE_SIP_TRUSTED=0.0.0.0/0), the trunk known: 2 of 16 places kept for it.
  const anyone = new BlockList();
  anyone.addSubnet("0.0.0.0", 0, "ipv4");
  const { transport } = await service({
    trustedSources: anyone,
    trunkSources: trunk,
    maxConnections: { perSource: 4, total: 16 },
  });
  try {
    const strangers = await Promise.all(
      Array.from({ length: 24 }, (_, index) => open(transport.port, `127.0.0.${20 + (index % 6)}`)),
    );
    await until("the connections past the strangers' share closed", async () =>
      transport.stats.connectionsRefused >= 10 ? true : undefined,
    );
    const held = (await Promise.all(strangers.map((connection) => stillOpenAfter(connection, 100)))).filter(
      Boolean,
    );
    assert.equal(held.length, 14);
    const fromTrunk = await open(transport.port, "127.0.0.2");
    assert.equal(await ask(fromTrunk.socket, "INVITE", "trunk-reserved"), 180);
    const another = await open(transport.port, "127.0.0.30");
    assert.equal(await stillOpenAfter(another, 500), false, "a stranger has no place left");
  } finally {
    await transport.close();
  }
});

test("with anyone trusted, a caller from another source connects and is answered while one source floods", {
  timeout: 20_000,
}, async () => {
  const { transport } = await service({ maxConnections: { perSource: 8, total: 2048 } });
  try {
    const flood = await Promise.all(Array.from({ length: 200 }, () => open(transport.port, "127.0.0.6")));
    await until("the connections past the cap closed", async () =>
      transport.stats.connectionsRefused >= 192 ? true : undefined,
    );
    const held = (await Promise.all(flood.map((connection) => stillOpenAfter(connection, 100)))).filter(
      Boolean,
    );
    assert.equal(held.length, 8);
    const caller = await open(transport.port, "127.0.0.7");
    assert.equal(await ask(caller.socket, "INVITE", "caller-invite"), 180);
  } finally {
    await transport.close();
  }
});

test("a TLS handshake that never finishes is closed after the handshake timeout and told with its source", {
  timeout: 20_000,
}, async () => {
  const authority = testAuthority(certificateDir);
  const server = authority.issue("localhost", "DNS:localhost");
  const failures: { reason: string; source: MessageSource }[] = [];
  const { transport } = await service({
    tls: { port: 0, cert: server.cert, key: server.key },
    tlsHandshakeTimeoutMs: 300,
    onTlsFailure: (reason, source) => failures.push({ reason, source }),
  });
  try {
    const tlsPort = transport.tlsPort ?? assert.fail("no TLS listener");
    const started = performance.now();
    const silent = await open(tlsPort, "127.0.0.8");
    await silent.closed;
    assert.ok(performance.now() - started < 5000, "closed by the handshake timeout");
    assert.equal(failures[0]?.source.address, "127.0.0.8");
    assert.match(failures[0]?.reason ?? "", /TLS handshake failed: .*timeout/i);
    // A client that does not trust our certificate fails its handshake: told too.
    const distrustful = tlsConnect({ host: "127.0.0.1", port: tlsPort, servername: "localhost" });
    await new Promise<void>((resolve) => distrustful.once("error", () => resolve()));
    distrustful.destroy();
    const trusting = tlsConnect({
      host: "127.0.0.1",
      port: tlsPort,
      servername: "localhost",
      ca: readFileSync(authority.ca),
    });
    // A keep-alive answered: the handshake is done on both sides.
    trusting.once("secureConnect", () => trusting.write("\r\n\r\n"));
    await new Promise<void>((resolve) => trusting.once("data", () => resolve()));
    trusting.destroy();
    assert.equal(failures.length, 2, failures.map((failure) => failure.reason).join("; "));
    assert.equal(transport.stats.tlsFailures, 2);
  } finally {
    await transport.close();
  }
});
