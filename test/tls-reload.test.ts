/**
 * Certificates reloaded without a restart (what SIGHUP does): the HTTPS and SIP TLS listeners of the
 * running service present the new pair to new connections, connections open keep going, and a pair
 * that cannot be used is refused with a log line while the one in use is kept. The metrics give the
 * expiry of the pair each listener presents.
 */
import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { connect, type TLSSocket } from "node:tls";
import { loadConfig } from "../src/config.js";
import { type IssuedCertificate, testAuthority } from "./helpers/certificates.js";
import { scrapeMetrics, startTestService, type TestService } from "./helpers/service.js";
import { rtpPortRange } from "./helpers/sipp.js";

const dir = mkdtempSync(join(tmpdir(), "bridgeline-tls-reload-"));
const opened: TLSSocket[] = [];
after(() => rmSync(dir, { recursive: true, force: true }));

/** Connects to `port`, verifying against the test CA, and resolves with the socket and the CN it was shown. */
async function presented(port: number, ca: Buffer): Promise<{ name: string; socket: TLSSocket }> {
  const socket = connect({ host: "127.0.0.1", port, ca });
  opened.push(socket);
  await new Promise<void>((resolve, reject) => {
    socket.once("secureConnect", () => resolve());
    socket.once("error", reject);
  });
  return { name: String(socket.getPeerCertificate().subject.CN), socket };
}

/** bridgeline_certificate_expiry_timestamp_seconds by listener, and when `certificate` expires. */
async function expiries(api: TestService, certificate: IssuedCertificate) {
  const metrics = await scrapeMetrics(api);
  const metric = "bridgeline_certificate_expiry_timestamp_seconds";
  return {
    https: metrics.get(`${metric}{listener="https"}`),
    sip: metrics.get(`${metric}{listener="sip"}`),
    expected: Date.parse(new X509Certificate(readFileSync(certificate.certFile)).validTo) / 1000,
  };
}

test("a reload gives new connections the new pair on HTTPS and SIP TLS; a bad pair is refused and the old kept", {
  timeout: 30_000,
}, async () => {
  const authority = testAuthority(dir);
  const ca = readFileSync(authority.ca);
  const certFile = join(dir, "live-cert.pem");
  const keyFile = join(dir, "live-key.pem");
  const install = (certificate: IssuedCertificate, key: IssuedCertificate = certificate) => {
    copyFileSync(certificate.certFile, certFile);
    copyFileSync(key.keyFile, keyFile);
  };
  const first = authority.issue("first", "IP:127.0.0.1");
  const second = authority.issue("second", "IP:127.0.0.1");
  const third = authority.issue("third", "IP:127.0.0.1");
  install(first);
  const api = await startTestService({
    tlsCertFile: certFile,
    tlsKeyFile: keyFile,
    sip: { ...loadConfig({}).sip, bindAddress: "127.0.0.1", port: 0, rtpPorts: rtpPortRange() },
    metricsPort: 0,
  });
  try {
    const sipTlsPort = api.service.telephony.sipTlsPort ?? assert.fail("no SIP TLS listener");
    const httpsPort = api.service.httpsPort;
    assert.equal((await presented(httpsPort, ca)).name, "first");
    const openBefore = await presented(sipTlsPort, ca);
    assert.equal(openBefore.name, "first");
    const atStart = await expiries(api, first);
    assert.deepEqual([atStart.https, atStart.sip], [atStart.expected, atStart.expected]);

    install(second);
    assert.equal(await api.service.reloadCertificates(), true);
    assert.equal((await presented(httpsPort, ca)).name, "second");
    assert.equal((await presented(sipTlsPort, ca)).name, "second");
    assert.ok(api.logs.some((line) => line.includes("certificates reloaded")));
    const reloaded = await expiries(api, second);
    assert.deepEqual([reloaded.https, reloaded.sip], [reloaded.expected, reloaded.expected]);
    // A connection made before goes on: its keep-alive is answered.
    const pong = new Promise<string>((resolve) =>
      openBefore.socket.once("data", (chunk: Buffer) => resolve(chunk.toString())),
    );
    openBefore.socket.write("\r\n\r\n");
    assert.equal(await pong, "\r\n");

    // Half a renewal: the new certificate with the old key.
    install(third, second);
    assert.equal(await api.service.reloadCertificates(), false);
    assert.ok(
      api.logs.some((line) =>
        line.includes(
          "certificates not reloaded, the ones in use are kept: HTTPS: the key is not the certificate's",
        ),
      ),
    );
    writeFileSync(certFile, "not a certificate");
    assert.equal(await api.service.reloadCertificates(), false);
    assert.ok(api.logs.some((line) => line.includes("the certificate is not a PEM certificate")));
    assert.equal((await presented(httpsPort, ca)).name, "second", "HTTPS keeps the pair in use");
    assert.equal((await presented(sipTlsPort, ca)).name, "second", "SIP TLS keeps the pair in use");
    const kept = await expiries(api, second);
    assert.deepEqual([kept.https, kept.sip], [kept.expected, kept.expected]);
  } finally {
    // The HTTPS listener waits for open connections as it closes.
    for (const socket of opened) socket.destroy();
    await api.close();
  }
});
