/**
 * STIR/SHAKEN verification of the calls that reach us, as the terminating service's verifier
 * (ATIS-1000074): the INVITE's Identity header (RFC 8224) carries a PASSporT (RFC 8225) with the
 * SHAKEN extension (RFC 8588), ES256-signed by a certificate named by its `x5u`. The certificate is
 * fetched over HTTPS, its chain checked against the configured STI-CA roots, the signature, the
 * PASSporT's age and its numbers against the INVITE's. The outcome is a verstat's: passed, failed,
 * none. Not done: the TNAuthList of the certificate against `orig` (RFC 8226, optional), CRLs and
 * OCSP, signing our own calls.
 */
import { X509Certificate } from "node:crypto";
import { lookup } from "node:dns";
import { get } from "node:https";
import { isIP, type LookupFunction } from "node:net";
import { compactVerify, decodeProtectedHeader } from "jose";
import type { CallerVerification } from "../domain/call-record.js";
import type { Clock } from "../domain/clock.js";
import { callerNumberKey } from "../domain/phone.js";
import { refusedAddressKind, urlHost } from "../domain/webhook.js";
import { parseIdentity } from "./sip/message/header-values.js";

export interface StirShakenOptions {
  /** PEM bundle of the STI-CA root certificates a signing certificate must chain to. */
  readonly trustAnchors: string;
  /** How long fetching a certificate may take in all, connection to last byte; default 2000. */
  readonly fetchTimeoutMs?: number;
  /** The largest certificate chain taken, in bytes; default 32 KiB. */
  readonly maxCertificateBytes?: number;
  /** How far `iat` may be from now, in seconds (RFC 8224 section 6.2.1 suggests 60, the default). */
  readonly freshnessSeconds?: number;
  /** What the certificate repositories' own HTTPS must chain to; default the system's CAs. */
  readonly repositoryCa?: string;
  /** Certificates kept by URL for their Cache-Control max-age; default 100. */
  readonly cacheEntries?: number;
  /**
   * Repositories at private, loopback and link-local addresses allowed (tests); by default an x5u
   * leading there fails, as webhooks' URLs do: the INVITE names the URL the service fetches.
   */
  readonly allowPrivateRepositories?: boolean;
  /** What `iat` and the certificates' validity are checked against. */
  readonly clock: Clock;
}

/**
 * Certificate fetches in flight at once, over every x5u: a flood of INVITEs each naming a URL of its
 * own gets no more outbound connections than this (their calls are told "failed", and go on).
 */
export const MAX_FETCHES_AT_ONCE = 16;

/** What of an INVITE verification reads. */
export interface VerifiedInvite {
  /** Its Identity header fields, as written. */
  readonly identities: readonly string[];
  /** The caller's number as the INVITE asserts it: P-Asserted-Identity's, else From's user part. */
  readonly caller: string;
  /** The number called. */
  readonly called: string;
}

export const VERIFICATION_NOT_CONFIGURED: CallerVerification = {
  status: "none",
  attestation: null,
  reason: "not configured",
};
const NO_IDENTITY: CallerVerification = { status: "none", attestation: null, reason: "no Identity header" };

const DEFAULT_FETCH_TIMEOUT_MS = 2000;
const DEFAULT_MAX_CERTIFICATE_BYTES = 32 * 1024;
const DEFAULT_FRESHNESS_SECONDS = 60;
const DEFAULT_CACHE_ENTRIES = 100;
/** A max-age above this is taken as this: a certificate revoked meanwhile is not kept for days. */
const MAX_CACHE_SECONDS = 24 * 3600;
/** Intermediates followed from the leaf up to a root. */
const MAX_CHAIN_DEPTH = 4;

/** A verification that failed, for `reason`. */
class Unverified extends Error {}

interface CachedChain {
  readonly certificates: readonly X509Certificate[];
  /** When it stops being used, on the clock (ms). */
  readonly until: number;
}

export class CallerVerifier {
  readonly #anchors: readonly X509Certificate[];
  readonly #options: StirShakenOptions;
  readonly #cache = new Map<string, CachedChain>();
  /** Fetches under way by URL: calls from one carrier arriving together share one. */
  readonly #fetching = new Map<string, Promise<readonly X509Certificate[]>>();
  /** Aborts the fetches under way when closed. */
  readonly #closed = new AbortController();

  /** Throws when the bundle holds no certificate, or one that cannot be read. */
  constructor(options: StirShakenOptions) {
    this.#anchors = pemCertificates(options.trustAnchors);
    if (this.#anchors.length === 0) throw new Error("the STI-CA bundle holds no certificate");
    this.#options = options;
  }

  /** Stops the fetches under way (their verifications fail, "closed") and any later one. */
  close(): void {
    this.#closed.abort();
  }

  /** The outcome for an INVITE; never rejects, and resolves within the fetch's timeout. */
  async verify(invite: VerifiedInvite): Promise<CallerVerification> {
    if (invite.identities.length === 0) return NO_IDENTITY;
    try {
      return await this.#verify(invite);
    } catch (error) {
      return {
        status: "failed",
        attestation: null,
        reason: error instanceof Unverified ? error.message : `verification failed: ${String(error)}`,
      };
    }
  }

  async #verify(invite: VerifiedInvite): Promise<CallerVerification> {
    // Of several (a diversion's PASSporT beside the caller's, RFC 8946), the SHAKEN one.
    const values = invite.identities.map((field) => parseIdentity(field));
    const value = values.find((parsed) => (parsed?.params.get("ppt") ?? "shaken") === "shaken");
    if (value === undefined) {
      if (values.includes(undefined)) throw new Unverified("malformed Identity header");
      return { status: "none", attestation: null, reason: "no SHAKEN PASSporT" };
    }
    const parts = value.token.split(".");
    if (parts.length !== 3) throw new Unverified("the Identity header is not a JWS");
    if (parts[1] === "")
      // RFC 8588 section 6: attest and origid cannot be rebuilt from the SIP message.
      throw new Unverified("compact form: a SHAKEN PASSporT needs the full form");
    let header: ReturnType<typeof decodeProtectedHeader>;
    let claims: Record<string, unknown>;
    try {
      header = decodeProtectedHeader(value.token);
      claims = JSON.parse(Buffer.from(parts[1] as string, "base64url").toString("utf8"));
    } catch {
      throw new Unverified("the PASSporT cannot be decoded");
    }
    if (header.alg !== "ES256") throw new Unverified(`unsupported alg ${String(header.alg)}`);
    if (header.ppt !== "shaken") throw new Unverified("the PASSporT is not SHAKEN (ppt)");
    const x5u = header.x5u;
    if (typeof x5u !== "string") throw new Unverified("the PASSporT has no x5u");
    if (value.info !== undefined && value.info !== x5u)
      throw new Unverified("the info parameter and the PASSporT's x5u differ");
    const attestation = claims.attest;
    if (attestation !== "A" && attestation !== "B" && attestation !== "C")
      throw new Unverified("attest is not A, B or C");
    if (typeof claims.origid !== "string") throw new Unverified("the PASSporT has no origid");
    const iat = claims.iat;
    if (typeof iat !== "number") throw new Unverified("the PASSporT has no iat");
    const freshness = this.#options.freshnessSeconds ?? DEFAULT_FRESHNESS_SECONDS;
    const now = this.#options.clock.now();
    const age = Math.round(now / 1000 - iat);
    if (Math.abs(now / 1000 - iat) > freshness)
      throw new Unverified(age > 0 ? `stale: iat is ${age} s old` : `stale: iat is ${-age} s ahead`);
    const orig = (claims.orig as { tn?: unknown } | undefined)?.tn;
    if (typeof orig !== "string" || !sameNumber(orig, invite.caller))
      throw new Unverified("orig.tn is not the caller's number");
    const dest = (claims.dest as { tn?: unknown } | undefined)?.tn;
    if (!Array.isArray(dest) || !dest.some((tn) => typeof tn === "string" && sameNumber(tn, invite.called)))
      throw new Unverified("dest.tn is not the number called");

    const [leaf, ...chain] = await this.#certificates(x5u);
    if (leaf === undefined) throw new Unverified("x5u names no certificate");
    const when = new Date(now);
    for (const certificate of [leaf, ...chain]) {
      if (new Date(certificate.validFrom) > when || new Date(certificate.validTo) < when)
        throw new Unverified(`certificate ${certificate.subject.replace(/\n/g, ", ")} is not valid now`);
    }
    const key = leaf.publicKey;
    if (key.asymmetricKeyType !== "ec" || key.asymmetricKeyDetails?.namedCurve !== "prime256v1")
      throw new Unverified("the certificate's key is not P-256");
    this.#checkChain(leaf, chain, when);
    try {
      await compactVerify(value.token, key, { algorithms: ["ES256"] });
    } catch {
      throw new Unverified("bad signature");
    }
    return { status: "passed", attestation, reason: null };
  }

  /** Throws unless `leaf` chains through `chain` to a trust anchor valid now. */
  #checkChain(leaf: X509Certificate, chain: readonly X509Certificate[], when: Date): void {
    let current = leaf;
    for (let depth = 0; depth <= MAX_CHAIN_DEPTH; depth++) {
      const issuedBy = (issuer: X509Certificate) => {
        try {
          return current.checkIssued(issuer) && current.verify(issuer.publicKey);
        } catch {
          return false; // a key that cannot have made the signature (another type)
        }
      };
      const anchor = this.#anchors.find(issuedBy);
      if (anchor !== undefined) {
        if (new Date(anchor.validFrom) > when || new Date(anchor.validTo) < when)
          throw new Unverified("the trusted STI-CA certificate is not valid now");
        return;
      }
      const issuer = chain.find(
        (certificate) => certificate !== current && certificate.ca && issuedBy(certificate),
      );
      if (issuer === undefined) throw new Unverified("the certificate does not chain to a trusted STI-CA");
      current = issuer;
    }
    throw new Unverified("the certificate chain is too long");
  }

  /** The chain at `url`, leaf first: from the cache while its max-age lasts, else fetched. */
  async #certificates(url: string): Promise<readonly X509Certificate[]> {
    const cached = this.#cache.get(url);
    if (cached !== undefined && cached.until > this.#options.clock.now()) return cached.certificates;
    this.#cache.delete(url);
    let fetching = this.#fetching.get(url);
    if (fetching === undefined) {
      // Each distinct x5u is a fetch a caller's INVITE chooses: a bounded number at once, the rest fail.
      if (this.#fetching.size >= MAX_FETCHES_AT_ONCE)
        throw new Unverified("too many certificate fetches at once");
      fetching = this.#fetch(url).finally(() => this.#fetching.delete(url));
      this.#fetching.set(url, fetching);
    }
    return fetching;
  }

  async #fetch(url: string): Promise<readonly X509Certificate[]> {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new Unverified("x5u is not a URL");
    }
    if (parsed.protocol !== "https:") throw new Unverified("x5u is not an https: URL");
    const allowPrivate = this.#options.allowPrivateRepositories === true;
    // An address in the URL is connected to without a lookup: checked here; names, as looked up.
    const host = urlHost(parsed);
    const kind = isIP(host) === 0 || allowPrivate ? undefined : refusedAddressKind(host);
    if (kind !== undefined) throw new Unverified(`x5u leads to ${host}, a ${kind} address`);
    const { body, maxAgeSeconds } = await fetchBody(parsed, {
      timeoutMs: this.#options.fetchTimeoutMs ?? DEFAULT_FETCH_TIMEOUT_MS,
      maxBytes: this.#options.maxCertificateBytes ?? DEFAULT_MAX_CERTIFICATE_BYTES,
      ca: this.#options.repositoryCa,
      lookup: allowPrivate ? undefined : publicLookup,
      signal: this.#closed.signal,
    });
    let certificates: X509Certificate[];
    try {
      // ATIS-1000080: PEM, leaf first; a lone DER certificate (application/pkix-cert) is taken too.
      const text = body.toString("latin1");
      certificates = text.includes("-----BEGIN") ? pemCertificates(text) : [new X509Certificate(body)];
    } catch {
      throw new Unverified("x5u holds no readable certificate");
    }
    if (maxAgeSeconds !== undefined && maxAgeSeconds > 0) {
      const limit = this.#options.cacheEntries ?? DEFAULT_CACHE_ENTRIES;
      // Oldest first out (a Map keeps insertion order).
      while (this.#cache.size >= limit) this.#cache.delete(this.#cache.keys().next().value as string);
      const until = this.#options.clock.now() + Math.min(maxAgeSeconds, MAX_CACHE_SECONDS) * 1000;
      this.#cache.set(url, { certificates, until });
    }
    return certificates;
  }
}

/** The certificates of a PEM bundle, in order; throws on one that cannot be read. */
function pemCertificates(pem: string): X509Certificate[] {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  return blocks.map((block) => new X509Certificate(block));
}

/**
 * Whether a PASSporT's `tn` (E.164 digits, RFC 8225 section 5.2.1) and a number from SIP (any common
 * spelling: +1..., 1..., a North American national number) are one number.
 */
function sameNumber(tn: string, sip: string): boolean {
  const digits = tn.replace(/[^0-9]/g, "");
  if (digits === "") return false;
  const fromSip = callerNumberKey(sip.replace(/[-.() ]/g, ""));
  const fromTn = callerNumberKey(`+${digits}`);
  if (fromSip !== undefined && fromTn !== undefined) return fromSip === fromTn;
  return sip.replace(/[^0-9]/g, "") === digits;
}

/**
 * A GET of `url` (https: only, no redirect followed), within `timeoutMs` in all and `maxBytes`; with
 * its Cache-Control max-age. Throws Unverified when it cannot be had.
 */
function fetchBody(
  url: URL,
  options: {
    readonly timeoutMs: number;
    readonly maxBytes: number;
    readonly ca: string | undefined;
    readonly lookup: LookupFunction | undefined;
    readonly signal: AbortSignal;
  },
): Promise<{ body: Buffer; maxAgeSeconds: number | undefined }> {
  return new Promise((resolve, reject) => {
    if (options.signal.aborted) {
      reject(new Unverified("closed"));
      return;
    }
    const request = get(url, {
      ca: options.ca,
      agent: false,
      lookup: options.lookup,
      headers: { accept: "application/x-pem-file" },
    });
    const closed = () => fail(new Unverified("closed"));
    options.signal.addEventListener("abort", closed);
    // Settled once: the first of the answer, an error, the size cap or the timeout; the request is
    // given up on every path but the answer's (where it has ended).
    let settled = false;
    const fail = (error: Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      options.signal.removeEventListener("abort", closed);
      request.destroy();
      reject(
        error instanceof Unverified ? error : new Unverified(`x5u could not be fetched: ${error.message}`),
      );
    };
    const timer = setTimeout(
      () => fail(new Unverified(`x5u did not answer within ${options.timeoutMs} ms`)),
      options.timeoutMs,
    );
    request.on("error", fail);
    request.on("response", (response) => {
      if (response.statusCode !== 200) {
        const redirect = response.headers.location === undefined ? "" : " (a redirect, not followed)";
        fail(new Unverified(`x5u answered ${response.statusCode}${redirect}`));
        return;
      }
      const tooLarge = () => fail(new Unverified(`x5u holds over ${options.maxBytes} bytes`));
      if (Number(response.headers["content-length"] ?? 0) > options.maxBytes) {
        tooLarge();
        return;
      }
      const chunks: Buffer[] = [];
      let size = 0;
      response.on("data", (chunk: Buffer) => {
        size += chunk.length;
        if (size > options.maxBytes) tooLarge();
        else chunks.push(chunk);
      });
      response.on("error", fail);
      response.on("end", () => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        options.signal.removeEventListener("abort", closed);
        const cacheControl = response.headers["cache-control"] ?? "";
        const maxAge = /(?:^|,)\s*max-age\s*=\s*(\d+)/i.exec(cacheControl);
        resolve({
          body: Buffer.concat(chunks),
          maxAgeSeconds:
            maxAge === null || /no-cache|no-store/i.test(cacheControl) ? undefined : Number(maxAge[1]),
        });
      });
    });
  });
}

/** The system's lookup, refusing a host with any private, loopback or link-local address. */
const publicLookup: LookupFunction = (hostname, options, callback) => {
  lookup(hostname, { ...options, all: true }, (error, addresses) => {
    if (error !== null) {
      callback(error, "");
      return;
    }
    const refused = addresses.find(({ address }) => refusedAddressKind(address) !== undefined);
    const [first] = addresses;
    if (refused !== undefined || first === undefined) {
      const kind = refused === undefined ? "no" : `a ${refusedAddressKind(refused.address)}`;
      callback(
        new Unverified(`x5u leads to ${hostname} (${refused?.address ?? "nothing"}), ${kind} address`),
        "",
      );
    } else if (options.all) callback(null, addresses);
    else callback(null, first.address, first.family);
  });
};
