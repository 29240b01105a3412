/**
 * STIR/SHAKEN verification against a test PKI made here (an STI-CA root, an intermediate, EC P-256
 * signing certificates with TNAuthList) and a certificate repository on https://127.0.0.1: what
 * passes, each way it fails, and none without an Identity header.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { loadConfig } from "../../src/config.js";
import {
  CallerVerifier,
  MAX_FETCHES_AT_ONCE,
  type StirShakenOptions,
} from "../../src/telephony/stir-shaken.js";
import { loadStirTrustAnchors } from "../../src/tls.js";
import { FakeClock } from "../helpers/fake-clock.js";
import { certificateRepository, identityHeader, type StiPki, stiPki } from "../helpers/sti-ca.js";
import { until } from "../helpers/until.js";

const CALLER = "+16045550111";
const CALLED = "+16045550199";
const DAY_MS = 24 * 3600 * 1000;

describe("STIR/SHAKEN verification", () => {
  const dir = mkdtempSync(join(tmpdir(), "bridgeline-stir-"));
  let pki: StiPki;
  let repository: Awaited<ReturnType<typeof certificateRepository>>;

  before(async () => {
    pki = stiPki(dir);
    repository = await certificateRepository(dir, {
      "/signer.pem": pki.signer.chainPem,
      "/short-lived.pem": pki.shortLived.chainPem,
      "/stranger.pem": pki.stranger.chainPem,
      "/leaf-only.pem": (
        pki.signer.chainPem.match(/-----BEGIN[\s\S]+?-----END CERTIFICATE-----\n/) as RegExpMatchArray
      )[0],
      "/junk.pem": "not a certificate",
    });
  });
  after(async () => {
    await repository.close();
    rmSync(dir, { recursive: true, force: true });
  });

  function verifier(options: Partial<StirShakenOptions> = {}): CallerVerifier {
    return new CallerVerifier({
      trustAnchors: pki.rootPem,
      repositoryCa: repository.ca,
      allowPrivateRepositories: true,
      clock: new FakeClock(Date.now()),
      ...options,
    });
  }

  /** The verification of an INVITE from CALLER to CALLED with this Identity header (none: without one). */
  function verify(identity: string | undefined, options: Partial<StirShakenOptions> = {}) {
    return verifier(options).verify({
      identities: identity === undefined ? [] : [identity],
      caller: CALLER,
      called: CALLED,
    });
  }

  it("passes a PASSporT signed by a certificate under the STI-CA, with its attestation", async () => {
    const identity = await identityHeader(
      { orig: "16045550111", dest: "16045550199" },
      repository.url("/signer.pem"),
      pki.signer.keyPem,
    );
    assert.deepEqual(await verify(identity), { status: "passed", attestation: "A", reason: null });
    // The numbers as SIP writes them otherwise: national, or with a + the PASSporT leaves out.
    const other = await verifier().verify({
      identities: [identity],
      caller: "6045550111",
      called: "16045550199",
    });
    assert.equal(other.status, "passed");
  });

  it("passes B and C attestations as they are", async () => {
    for (const attest of ["B", "C"]) {
      const identity = await identityHeader(
        { attest, orig: CALLER.slice(1), dest: CALLED.slice(1) },
        repository.url("/signer.pem"),
        pki.signer.keyPem,
      );
      assert.deepEqual(await verify(identity), { status: "passed", attestation: attest, reason: null });
    }
  });

  it("fails a signature the certificate did not make", async () => {
    // Signed by the stranger's key, but naming the trusted signer's certificate.
    const identity = await identityHeader(
      { orig: CALLER.slice(1), dest: CALLED.slice(1) },
      repository.url("/signer.pem"),
      pki.stranger.keyPem,
    );
    assert.deepEqual(await verify(identity), {
      status: "failed",
      attestation: null,
      reason: "bad signature",
    });
  });

  it("fails a PASSporT whose iat is more than 60 s from now, either way, without fetching", async () => {
    const before = repository.requests.length;
    const cases: [number, RegExp][] = [
      [-62, /^stale: iat is 6[23] s old$/],
      [120, /^stale: iat is 1(19|20) s ahead$/],
    ];
    for (const [offset, reason] of cases) {
      const identity = await identityHeader(
        { orig: CALLER.slice(1), dest: CALLED.slice(1), iat: Math.floor(Date.now() / 1000) + offset },
        repository.url("/signer.pem"),
        pki.signer.keyPem,
      );
      const result = await verify(identity);
      assert.equal(result.status, "failed");
      assert.match(result.reason ?? "", reason);
    }
    assert.equal(repository.requests.length, before);
  });

  it("fails a PASSporT whose orig is not the caller's number, or whose dest is not the number called", async () => {
    const notCaller = await identityHeader(
      { orig: "16045550112", dest: CALLED.slice(1) },
      repository.url("/signer.pem"),
      pki.signer.keyPem,
    );
    assert.deepEqual(await verify(notCaller), {
      status: "failed",
      attestation: null,
      reason: "orig.tn is not the caller's number",
    });
    const notCalled = await identityHeader(
      { orig: CALLER.slice(1), dest: "16045550198" },
      repository.url("/signer.pem"),
      pki.signer.keyPem,
    );
    assert.equal((await verify(notCalled)).reason, "dest.tn is not the number called");
  });

  it("fails a certificate that does not chain to the trust store, or not without its intermediate", async () => {
    const identity = await identityHeader(
      { orig: CALLER.slice(1), dest: CALLED.slice(1) },
      repository.url("/stranger.pem"),
      pki.stranger.keyPem,
    );
    assert.deepEqual(await verify(identity), {
      status: "failed",
      attestation: null,
      reason: "the certificate does not chain to a trusted STI-CA",
    });
    // The trusted signer's certificate served without its intermediate.
    const leafOnly = await identityHeader(
      { orig: CALLER.slice(1), dest: CALLED.slice(1) },
      repository.url("/leaf-only.pem"),
      pki.signer.keyPem,
    );
    assert.equal((await verify(leafOnly)).reason, "the certificate does not chain to a trusted STI-CA");
  });

  it("fails a certificate past its validity", async () => {
    // Two days on, the one-day certificate has expired (the root and intermediate have not).
    const later = Date.now() + 2 * DAY_MS;
    const identity = await identityHeader(
      { orig: CALLER.slice(1), dest: CALLED.slice(1), iat: Math.floor(later / 1000) },
      repository.url("/short-lived.pem"),
      pki.shortLived.keyPem,
    );
    const result = await verify(identity, { clock: new FakeClock(later) });
    assert.equal(result.status, "failed");
    assert.match(result.reason ?? "", /^certificate CN=short-lived is not valid now$/);
    // The same, today, passes.
    const today = await identityHeader(
      { orig: CALLER.slice(1), dest: CALLED.slice(1) },
      repository.url("/short-lived.pem"),
      pki.shortLived.keyPem,
    );
    assert.equal((await verify(today)).status, "passed");
  });

  it("fails within the fetch timeout when the x5u does not answer", async () => {
    const identity = await identityHeader(
      { orig: CALLER.slice(1), dest: CALLED.slice(1) },
      repository.url("/silent"),
      pki.signer.keyPem,
    );
    const started = performance.now();
    const result = await verify(identity, { fetchTimeoutMs: 200 });
    const tookMs = performance.now() - started;
    assert.deepEqual(result, {
      status: "failed",
      attestation: null,
      reason: "x5u did not answer within 200 ms",
    });
    assert.ok(tookMs < 5000, `took ${tookMs} ms`);
  });

  it(`fetches at most ${MAX_FETCHES_AT_ONCE} certificates at once: an INVITE naming one more fails at once`, async () => {
    const checker = verifier({ fetchTimeoutMs: 300 });
    const identities = await Promise.all(
      Array.from({ length: MAX_FETCHES_AT_ONCE + 1 }, (_, index) =>
        identityHeader(
          { orig: CALLER.slice(1), dest: CALLED.slice(1) },
          repository.url(`/silent?${index}`),
          pki.signer.keyPem,
        ),
      ),
    );
    const results = identities.map((identity) =>
      checker.verify({ identities: [identity], caller: CALLER, called: CALLED }),
    );
    const reasons = (await Promise.all(results)).map((result) => result.reason);
    assert.equal(
      reasons.filter((reason) => reason === "x5u did not answer within 300 ms").length,
      MAX_FETCHES_AT_ONCE,
    );
    assert.equal(reasons.at(-1), "too many certificate fetches at once");
  });

  it("fails an x5u that is not https:, redirects, is missing or holds no certificate", async () => {
    const cases: [string, string][] = [
      ["http://127.0.0.1:9/signer.pem", "x5u is not an https: URL"],
      [repository.url("/moved"), "x5u answered 302 (a redirect, not followed)"],
      [repository.url("/missing.pem"), "x5u answered 404"],
      [repository.url("/junk.pem"), "x5u holds no readable certificate"],
    ];
    for (const [x5u, reason] of cases) {
      const identity = await identityHeader(
        { orig: CALLER.slice(1), dest: CALLED.slice(1) },
        x5u,
        pki.signer.keyPem,
      );
      assert.deepEqual(await verify(identity), { status: "failed", attestation: null, reason }, x5u);
    }
  });

  it("fails an x5u that leads to a loopback or private address, unless allowed", async () => {
    const cases: [string, RegExp][] = [
      [repository.url("/signer.pem"), /^x5u leads to 127\.0\.0\.1, a loopback address$/],
      [
        repository.url("/signer.pem").replace("127.0.0.1", "localhost"),
        /^x5u leads to localhost \((127\.0\.0\.1|::1)\), a loopback address$/,
      ],
      ["https://10.1.2.3/signer.pem", /^x5u leads to 10\.1\.2\.3, a private address$/],
    ];
    for (const [x5u, reason] of cases) {
      const identity = await identityHeader(
        { orig: CALLER.slice(1), dest: CALLED.slice(1) },
        x5u,
        pki.signer.keyPem,
      );
      const result = await verify(identity, { allowPrivateRepositories: false });
      assert.equal(result.status, "failed", x5u);
      assert.match(result.reason ?? "", reason, x5u);
    }
  });

  it("fails the verifications under way when closed", async () => {
    const closing = verifier();
    const identity = await identityHeader(
      { orig: CALLER.slice(1), dest: CALLED.slice(1) },
      repository.url("/silent?closing"),
      pki.signer.keyPem,
    );
    const pending = closing.verify({ identities: [identity], caller: CALLER, called: CALLED });
    await until("the repository asked", async () =>
      repository.requests.includes("/silent?closing") ? true : undefined,
    );
    closing.close();
    assert.deepEqual(await pending, { status: "failed", attestation: null, reason: "closed" });
  });

  it("fails a chain larger than the size cap", async () => {
    const identity = await identityHeader(
      { orig: CALLER.slice(1), dest: CALLED.slice(1) },
      repository.url("/signer.pem"),
      pki.signer.keyPem,
    );
    assert.deepEqual(await verify(identity, { maxCertificateBytes: 100 }), {
      status: "failed",
      attestation: null,
      reason: "x5u holds over 100 bytes",
    });
  });

  it("fails malformed and compact-form headers, and an info parameter that is not the x5u", async () => {
    assert.equal((await verify("not a JWS;;")).reason, "malformed Identity header");
    assert.equal((await verify("abc.def;ppt=shaken")).reason, "the Identity header is not a JWS");
    const identity = await identityHeader(
      { orig: CALLER.slice(1), dest: CALLED.slice(1) },
      repository.url("/signer.pem"),
      pki.signer.keyPem,
    );
    const [header, , signature] = (identity.split(";")[0] as string).split(".");
    assert.equal(
      (await verify(`${header}..${signature};ppt=shaken`)).reason,
      "compact form: a SHAKEN PASSporT needs the full form",
    );
    const otherInfo = identity.replace(/info=<[^>]*>/, "info=<https://elsewhere.example/cert.pem>");
    assert.equal((await verify(otherInfo)).reason, "the info parameter and the PASSporT's x5u differ");
  });

  it("is none without an Identity header, or with only another kind of PASSporT", async () => {
    assert.deepEqual(await verify(undefined), {
      status: "none",
      attestation: null,
      reason: "no Identity header",
    });
    assert.deepEqual(await verify("a.b.c;info=<https://example.com/div.pem>;ppt=div"), {
      status: "none",
      attestation: null,
      reason: "no SHAKEN PASSporT",
    });
  });

  it("fetches a certificate once for the calls within its max-age", async () => {
    const shared = verifier();
    const identity = await identityHeader(
      { orig: CALLER.slice(1), dest: CALLED.slice(1) },
      repository.url("/signer.pem?cached"),
      pki.signer.keyPem,
    );
    const invite = { identities: [identity], caller: CALLER, called: CALLED };
    const results = await Promise.all([shared.verify(invite), shared.verify(invite)]);
    assert.deepEqual(
      results.map((result) => result.status),
      ["passed", "passed"],
    );
    assert.equal((await shared.verify(invite)).status, "passed");
    assert.equal(repository.requests.filter((path) => path === "/signer.pem?cached").length, 1);
  });

  it("refuses a trust store without a certificate", () => {
    assert.throws(() => verifier({ trustAnchors: "" }), /holds no certificate/);
  });
});

describe("BRIDGELINE_STIR_CA_FILE", () => {
  const dir = mkdtempSync(join(tmpdir(), "bridgeline-stir-setting-"));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("is read at start; unset, nothing is verified; a file without a certificate, or none, stops start", () => {
    const pki = stiPki(dir);
    assert.equal(loadStirTrustAnchors(loadConfig({ BRIDGELINE_STIR_CA_FILE: pki.rootFile })), pki.rootPem);
    assert.equal(loadStirTrustAnchors(loadConfig({})), undefined);
    const empty = join(dir, "empty.pem");
    writeFileSync(empty, "nothing here\n");
    assert.throws(
      () => loadStirTrustAnchors(loadConfig({ BRIDGELINE_STIR_CA_FILE: empty })),
      /^Error: BRIDGELINE_STIR_CA_FILE: .*empty\.pem holds no PEM certificate$/,
    );
    assert.throws(
      () => loadStirTrustAnchors(loadConfig({ BRIDGELINE_STIR_CA_FILE: join(dir, "missing.pem") })),
      /^Error: BRIDGELINE_STIR_CA_FILE: cannot read /,
    );
  });
});
