/**
 * STIR/SHAKEN end to end: SIPp as the carrier sends an INVITE to an access number with an Identity
 * header whose PASSporT the test signs fresh (test/fixtures/sipp/uac-identity.xml), the caller's
 * number in P-Asserted-Identity alone; the stack fetches the signing certificate from a repository on
 * https://127.0.0.1 and the IncomingCall's callerVerification() reads passed. The call is rejected
 * at once: verification goes on without it.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { IncomingCall } from "../../../src/telephony/call.js";
import { Telephony, type TelephonyOptions } from "../../../src/telephony/telephony.js";
import { rtpPortRange, Sipp, skipWithout } from "../../helpers/sipp.js";
import { certificateRepository, identityHeader, type StiPki, stiPki } from "../../helpers/sti-ca.js";

const skip = skipWithout("sipp");
const CALLER = "+16045550111";
const CALLED = "+16045550199";

describe("STIR/SHAKEN verification of a carrier's INVITE", { skip }, () => {
  const dir = mkdtempSync(join(tmpdir(), "bridgeline-stir-e2e-"));
  const running: { stop(): Promise<void> }[] = [];
  let pki: StiPki;
  let repository: Awaited<ReturnType<typeof certificateRepository>>;

  before(async () => {
    pki = stiPki(dir);
    repository = await certificateRepository(dir, { "/signer.pem": pki.signer.chainPem });
  });
  after(async () => {
    for (const peer of running) await peer.stop();
    await repository.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The call SIPp makes to a stack with `stirShaken`, rejected 486 as it arrives. */
  async function callIn(
    stirShaken: TelephonyOptions["stirShaken"],
    options: { readonly trusted?: boolean; readonly from?: string } = {},
  ): Promise<IncomingCall> {
    const telephony = await Telephony.start({
      bindAddress: "127.0.0.1",
      sipPort: 0,
      rtpPorts: rtpPortRange(),
      stirShaken,
      // SIPp as the carrier: a trusted peer, whose P-Asserted-Identity is believed.
      ...(options.trusted === false ? {} : { trustedSources: ["127.0.0.1"] }),
    });
    running.push({ stop: () => telephony.close() });
    const arrived = new Promise<IncomingCall>((resolve) =>
      telephony.onIncomingCall((call) => {
        call.reject(486);
        resolve(call);
      }),
    );
    const identity = await identityHeader(
      { orig: CALLER.slice(1), dest: CALLED.slice(1) },
      repository.url("/signer.pem"),
      pki.signer.keyPem,
    );
    const peer = await Sipp.start({
      scenario: "uac-identity.xml",
      remote: `127.0.0.1:${telephony.sipPort}`,
      args: ["-s", CALLED],
      keys: { caller: CALLER, identity, from: options.from ?? "anonymous" },
    });
    running.push(peer);
    const call = await arrived;
    await peer.expectSuccess();
    return call;
  }

  test("the caller's number verified: passed, attestation A, from P-Asserted-Identity", async () => {
    const call = await callIn({
      trustAnchors: pki.rootPem,
      repositoryCa: repository.ca,
      allowPrivateRepositories: true,
    });
    assert.equal(call.from, "anonymous");
    assert.equal(call.state, "failed");
    assert.deepEqual(await call.callerVerification(), { status: "passed", attestation: "A", reason: null });
  });

  test("a From number other than the one signed fails, whatever P-Asserted-Identity says; an untrusted source's P-Asserted-Identity is not believed", async () => {
    const settings = {
      trustAnchors: pki.rootPem,
      repositoryCa: repository.ca,
      allowPrivateRepositories: true,
    };
    const spoofed = await callIn(settings, { from: "+16045550666" });
    assert.equal(spoofed.from, "+16045550666");
    assert.equal((await spoofed.callerVerification())?.status, "failed");
    const untrusted = await callIn(settings, { trusted: false });
    assert.equal((await untrusted.callerVerification())?.status, "failed");
  });

  test("without verification configured the same call is none, not configured", async () => {
    const call = await callIn(undefined);
    assert.deepEqual(await call.callerVerification(), {
      status: "none",
      attestation: null,
      reason: "not configured",
    });
  });
});
