/**
 * Mutual TLS with a trunk, against OpenSSL's own client and server on loopback: a trunk profile with
 * `mutualTls` has its connections to us kept only with a certificate that chains to our CA and names
 * it (others are not asked), and our certificate is presented to a server that requires one.
 */
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { SipHeaders, type SipRequest } from "../../../../src/telephony/sip/message/sip-message.js";
import { SipTransport } from "../../../../src/telephony/sip/transport/sip-transport.js";
import { Telephony } from "../../../../src/telephony/telephony.js";
import { type IssuedCertificate, testAuthority } from "../../../helpers/certificates.js";
import { freePorts, rtpPortRange, skipWithout } from "../../../helpers/sipp.js";
import { until } from "../../../helpers/until.js";

const skip = skipWithout("openssl");
const dir = mkdtempSync(join(tmpdir(), "bridgeline-mutual-tls-"));
const children: ChildProcess[] = [];
after(() => {
  for (const child of children) child.kill();
  rmSync(dir, { recursive: true, force: true });
});

function optionsFrom(address: string): string {
  const id = Math.random().toString(36).slice(2);
  return [
    "OPTIONS sip:service@127.0.0.1 SIP/2.0",
    `Via: SIP/2.0/TLS ${address}:5061;branch=z9hG4bK${id};rport`,
    "Max-Forwards: 70",
    `From: <sip:trunk@${address}>;tag=${id}`,
    "To: <sip:service@127.0.0.1>",
    `Call-ID: ${id}`,
    "CSeq: 1 OPTIONS",
    "Content-Length: 0",
    "",
    "",
  ].join("\r\n");
}

/**
 * `openssl s_client` from `bind`, verifying our certificate, presenting `certificate` if given,
 * sending an OPTIONS: "answered" when a 200 comes back, "closed" when the connection is closed first.
 */
function sClient(
  port: number,
  ca: string,
  bind: string,
  certificate?: IssuedCertificate,
): Promise<"answered" | "closed"> {
  const args = ["s_client", "-quiet", "-connect", `127.0.0.1:${port}`, "-bind", bind];
  args.push("-CAfile", ca, "-verify_return_error", "-verify_ip", "127.0.0.1");
  if (certificate !== undefined) args.push("-cert", certificate.certFile, "-key", certificate.keyFile);
  const client = spawn("openssl", args, { stdio: ["pipe", "pipe", "pipe"] });
  children.push(client);
  return new Promise((resolve) => {
    let received = "";
    client.stdout.on("data", (chunk: Buffer) => {
      received += chunk.toString();
      if (received.includes("SIP/2.0 200 ")) {
        resolve("answered");
        client.kill();
      }
    });
    client.once("exit", () => resolve("closed"));
    client.stdin.on("error", () => {});
    client.stdin.write(optionsFrom(bind));
  });
}

describe("mutual TLS with a trunk", { skip }, () => {
  const authority = skip ? undefined : testAuthority(dir);
  const issue = (name: string, altName: string) =>
    (authority as NonNullable<typeof authority>).issue(name, altName);
  const ca = authority?.ca ?? "";

  test("the trunk's connection is kept only with a certificate from our CA naming it; others are not asked", {
    timeout: 20_000,
  }, async () => {
    const service = issue("service", "IP:127.0.0.1");
    const trunk = issue("trunk", "IP:127.0.0.2");
    const misnamed = issue("misnamed", "IP:127.0.0.9");
    const stranger = testAuthority(mkdtempSync(join(dir, "other-ca-"))).issue("trunk", "IP:127.0.0.2");
    const warnings: string[] = [];
    const telephony = await Telephony.start({
      bindAddress: "127.0.0.1",
      sipPort: 0,
      rtpPorts: rtpPortRange(),
      trunk: { uri: "sip:127.0.0.2:5061;transport=tls", mutualTls: true },
      trustedSources: ["127.0.0.0/8"],
      tls: { port: 0, cert: service.cert, key: service.key },
      tlsCa: readFileSync(ca),
      logger: {
        info: () => {},
        debug: () => {},
        error: () => {},
        warn: (fields, message) => warnings.push(`${message} ${JSON.stringify(fields)}`),
      },
    });
    try {
      const port = telephony.sipTlsPort ?? assert.fail("no TLS listener");
      assert.equal(await sClient(port, ca, "127.0.0.2", trunk), "answered");
      assert.equal(await sClient(port, ca, "127.0.0.2"), "closed", "no certificate");
      assert.equal(
        await sClient(port, ca, "127.0.0.2", misnamed),
        "closed",
        "a certificate for another host",
      );
      assert.equal(await sClient(port, ca, "127.0.0.2", stranger), "closed", "a certificate from another CA");
      assert.equal(await sClient(port, ca, "127.0.0.3"), "answered", "a peer that is not the trunk");
      await until("the refusals logged", async () => (warnings.length >= 3 ? true : undefined));
      assert.match(
        warnings[0] ?? "",
        /client certificate refused \(127\.0\.0\.2\): no certificate presented/,
      );
      assert.match(warnings[1] ?? "", /client certificate refused .*does not match certificate's altnames/);
      assert.match(warnings[2] ?? "", /client certificate refused .*UNABLE_TO_VERIFY_LEAF_SIGNATURE/);
      assert.ok(
        warnings.every((line) => line.includes('"source":"127.0.0.2:')),
        warnings.join("\n"),
      );
    } finally {
      await telephony.close();
    }
  });

  test("our certificate is presented to a trunk's server that requires one", {
    timeout: 20_000,
  }, async () => {
    const service = issue("service-client", "IP:127.0.0.1");
    const trunk = issue("trunk-server", "IP:127.0.0.2");
    const port = await freePorts();
    const server = spawn(
      "openssl",
      [
        "s_server",
        "-accept",
        `127.0.0.2:${port}`,
        "-cert",
        trunk.certFile,
        "-key",
        trunk.keyFile,
        "-CAfile",
        ca,
        "-Verify",
        "1",
        "-verify_return_error",
      ],
      { stdio: ["pipe", "pipe", "pipe"] },
    );
    children.push(server);
    let output = "";
    server.stdout.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    server.stderr.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    await until("s_server listening", async () => (output.includes("ACCEPT") ? true : undefined));
    const transport = await SipTransport.listen({
      bindAddress: "127.0.0.1",
      port: 0,
      onMessage: () => {},
      tls: { port: 0, cert: service.cert, key: service.key },
      tlsCa: readFileSync(ca),
    });
    try {
      const headers = new SipHeaders();
      headers.append("Max-Forwards", "70");
      headers.append("From", "<sip:bridgeline@127.0.0.1>;tag=1");
      headers.append("To", "<sip:trunk@127.0.0.2>");
      headers.append("Call-ID", "mutual-out");
      headers.append("CSeq", "1 OPTIONS");
      const request: SipRequest = {
        kind: "request",
        method: "OPTIONS",
        uri: `sip:trunk@127.0.0.2:${port};transport=tls`,
        version: "SIP/2.0",
        headers,
        body: Buffer.alloc(0),
      };
      await transport.sendRequest(request, { host: "127.0.0.2", port, transport: "TLS" });
      await until("the OPTIONS read by the trunk", async () =>
        output.includes("OPTIONS sip:trunk@127.0.0.2") ? true : undefined,
      );
      assert.match(output, /CN ?= ?service-client/, "our certificate, verified by the trunk");
    } finally {
      await transport.close();
    }
  });
});
