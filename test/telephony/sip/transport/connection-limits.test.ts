/**
 * Connections accepted per source and in all (TCP and TLS together): one past either limit is closed
 * at once, and a connection closed makes room again; one that leaves a message unfinished too long is
 * closed. Each connection's acceptance is shown by
 * a keep-alive ping answered (RFC 5626 section 3.5.1), its refusal by the connection closing unanswered.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { connect as tlsConnect } from "node:tls";
import { SipTransport } from "../../../../src/telephony/sip/transport/sip-transport.js";
import { testAuthority } from "../../../helpers/certificates.js";
import { until } from "../../../helpers/until.js";

const opened: Socket[] = [];
const certificateDir = mkdtempSync(join(tmpdir(), "bridgeline-connection-limits-"));
after(() => {
  for (const socket of opened) socket.destroy();
  rmSync(certificateDir, { recursive: true, force: true });
});

/** Opens a connection from `from` and says whether it was kept: "pong" to a ping, else "closed". */
async function tryConnection(
  port: number,
  from: string,
  tls?: { ca: Buffer },
): Promise<{ outcome: "pong" | "closed"; socket: Socket }> {
  const tcp = connect({ host: "127.0.0.1", port, localAddress: from });
  const socket: Socket =
    tls === undefined ? tcp : tlsConnect({ socket: tcp, ca: tls.ca, servername: "localhost" });
  opened.push(tcp);
  opened.push(socket);
  const outcome = await new Promise<"pong" | "closed">((resolve) => {
    socket.once(tls ? "secureConnect" : "connect", () => socket.write("\r\n\r\n"));
    socket.on("data", (chunk: Buffer) => {
      if (chunk.toString() === "\r\n") resolve("pong");
    });
    socket.once("error", () => resolve("closed"));
    socket.once("close", () => resolve("closed"));
  });
  return { outcome, socket };
}

test("past the connections allowed from one source, or in all, a connection is closed; one closed makes room", async () => {
  const authority = testAuthority(certificateDir);
  const server = authority.issue("localhost", "DNS:localhost");
  const ca = readFileSync(authority.ca);
  const transport = await SipTransport.listen({
    bindAddress: "127.0.0.1",
    port: 0,
    onMessage: () => {},
    maxConnections: { perSource: 2, total: 3 },
    tls: { port: 0, cert: server.cert, key: server.key },
  });
  try {
    const tcp = transport.port;
    const tlsPort = transport.tlsPort ?? assert.fail("no TLS listener");
    const first = await tryConnection(tcp, "127.0.0.1");
    assert.equal(first.outcome, "pong");
    assert.equal((await tryConnection(tlsPort, "127.0.0.1", { ca })).outcome, "pong");
    assert.equal((await tryConnection(tcp, "127.0.0.1")).outcome, "closed", "a third from one source");
    assert.equal(
      (await tryConnection(tlsPort, "127.0.0.1", { ca })).outcome,
      "closed",
      "a third from one source, over TLS",
    );
    assert.equal((await tryConnection(tcp, "127.0.0.2")).outcome, "pong", "another source has room");
    assert.equal((await tryConnection(tcp, "127.0.0.3")).outcome, "closed", "a fourth in all");
    assert.equal(transport.stats.connectionsRefused, 3);
    first.socket.destroy();
    await until("a connection from 127.0.0.1 kept again", async () =>
      (await tryConnection(tcp, "127.0.0.1")).outcome === "pong" ? true : undefined,
    );
  } finally {
    await transport.close();
  }
});

test("a connection that leaves a message unfinished past the timeout is closed; one idle between messages is not", {
  timeout: 20_000,
}, async () => {
  const transport = await SipTransport.listen({
    bindAddress: "127.0.0.1",
    port: 0,
    onMessage: () => {},
    partialMessageTimeoutMs: 300,
  });
  try {
    const idle = await tryConnection(transport.port, "127.0.0.1");
    assert.equal(idle.outcome, "pong");
    const slow = connect({ host: "127.0.0.1", port: transport.port });
    opened.push(slow);
    const closed = new Promise<void>((resolve) => slow.once("close", () => resolve()));
    slow.write(
      "OPTIONS sip:service@127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/TCP 127.0.0.1:5060;branch=z9hG4bKslow\r\n",
    );
    await closed;
    assert.equal(transport.stats.connectionsClosedForStall, 1);
    // Idle since before the slow one began, and still served: it is the unfinished message that counts.
    const pong = new Promise<string>((resolve) =>
      idle.socket.once("data", (chunk: Buffer) => resolve(chunk.toString())),
    );
    idle.socket.write("\r\n\r\n");
    assert.equal(await pong, "\r\n");
  } finally {
    await transport.close();
  }
});
