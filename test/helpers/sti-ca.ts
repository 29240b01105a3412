/**
 * A STIR/SHAKEN test PKI made with openssl in a temporary directory: an STI-CA root, an intermediate,
 * EC P-256 signing certificates (with the TNAuthList extension of RFC 8226, a service provider code,
 * as SHAKEN certificates carry), served from a certificate repository on https://127.0.0.1; and
 * PASSporTs (RFC 8225, SHAKEN RFC 8588) signed with them, for Identity headers (RFC 8224).
 */
import { execFileSync } from "node:child_process";
import { createPrivateKey, randomUUID } from "node:crypto";
import { once } from "node:events";
import { readFileSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { CompactSign } from "jose";
import { testAuthority } from "./certificates.js";

/** TNAuthList (RFC 8226 section 9): SEQUENCE { [0] EXPLICIT IA5String "709J" }, a service provider code. */
const TN_AUTH_LIST = "1.3.6.1.5.5.7.1.26=DER:30:08:a0:06:16:04:37:30:39:4a";

export interface SigningCertificate {
  /** The certificate and its intermediate, leaf first, as a repository serves them. */
  readonly chainPem: string;
  readonly keyPem: string;
}

export interface StiPki {
  /** The STI-CA root (PEM): what BRIDGELINE_STIR_CA_FILE holds. */
  readonly rootPem: string;
  readonly rootFile: string;
  /** Valid for 30 days, under the root and the intermediate. */
  readonly signer: SigningCertificate;
  /** Valid for one day only: expired once the clock is moved two days on. */
  readonly shortLived: SigningCertificate;
  /** Under a root of its own, which the trust store does not hold. */
  readonly stranger: SigningCertificate;
}

export function stiPki(dir: string): StiPki {
  const openssl = (...args: string[]) => execFileSync("openssl", args, { cwd: dir, stdio: "pipe" });
  const ecKey = (name: string) =>
    openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", `${name}.key`);
  const root = (name: string) => {
    ecKey(name);
    openssl(
      "req",
      "-x509",
      "-new",
      "-key",
      `${name}.key`,
      "-days",
      "30",
      "-subj",
      `/CN=${name}`,
      "-addext",
      "basicConstraints=critical,CA:TRUE",
      "-addext",
      "keyUsage=critical,keyCertSign,cRLSign",
      "-out",
      `${name}.pem`,
    );
  };
  const issue = (name: string, issuer: string, days: number, extensions: string) => {
    ecKey(name);
    openssl("req", "-new", "-key", `${name}.key`, "-subj", `/CN=${name}`, "-out", `${name}.csr`);
    writeFileSync(join(dir, `${name}.ext`), extensions);
    openssl(
      "x509",
      "-req",
      "-in",
      `${name}.csr`,
      "-CA",
      `${issuer}.pem`,
      "-CAkey",
      `${issuer}.key`,
      "-CAcreateserial",
      "-days",
      String(days),
      "-extfile",
      `${name}.ext`,
      "-out",
      `${name}.pem`,
    );
  };
  const read = (name: string) => readFileSync(join(dir, name), "utf8");
  const leafExtensions = `basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n${TN_AUTH_LIST}\n`;
  root("sti-root");
  issue(
    "sti-intermediate",
    "sti-root",
    30,
    "basicConstraints=critical,CA:TRUE,pathlen:0\nkeyUsage=critical,keyCertSign,cRLSign\n",
  );
  issue("signer", "sti-intermediate", 30, leafExtensions);
  issue("short-lived", "sti-intermediate", 1, leafExtensions);
  root("stranger-root");
  issue("stranger", "stranger-root", 30, leafExtensions);
  const signing = (name: string, issuer: string): SigningCertificate => ({
    chainPem: read(`${name}.pem`) + read(`${issuer}.pem`),
    keyPem: read(`${name}.key`),
  });
  return {
    rootPem: read("sti-root.pem"),
    rootFile: join(dir, "sti-root.pem"),
    signer: signing("signer", "sti-intermediate"),
    shortLived: signing("short-lived", "sti-intermediate"),
    stranger: signing("stranger", "stranger-root"),
  };
}

/**
 * A certificate repository on https://127.0.0.1 serving `files` by path (Cache-Control max-age=60),
 * `/silent` never answered, `/moved` redirected (a query is ignored); `ca` is what its own HTTPS
 * certificate chains to; `requests`, the paths asked for, queries included.
 */
export async function certificateRepository(
  dir: string,
  files: Record<string, string>,
): Promise<{ url(path: string): string; ca: string; requests: string[]; close(): Promise<void> }> {
  const tls = testAuthority(dir).issue("repository", "IP:127.0.0.1");
  const requests: string[] = [];
  const server: Server = createServer({ cert: tls.cert, key: tls.key }, (request, response) => {
    requests.push(request.url ?? "/");
    const path = (request.url ?? "/").split("?")[0] as string;
    if (path === "/silent") return; // never answered: closed with the server
    if (path === "/moved") {
      response.writeHead(302, { location: "/signer.pem" }).end();
      return;
    }
    const body = files[path];
    if (body === undefined) {
      response.writeHead(404).end();
      return;
    }
    response
      .writeHead(200, { "content-type": "application/x-pem-file", "cache-control": "max-age=60" })
      .end(body);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return {
    url: (path) => `https://127.0.0.1:${port}${path}`,
    ca: readFileSync(join(dir, "ca.pem"), "utf8"),
    requests,
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, "close");
    },
  };
}

export interface PassportClaims {
  readonly attest?: string;
  readonly orig: string;
  readonly dest: string;
  /** Seconds since the epoch; default now. */
  readonly iat?: number;
}

/**
 * An Identity header value carrying a SHAKEN PASSporT signed with `keyPem`, its x5u (and info
 * parameter) `x5u`: `<jws>;info=<x5u>;alg=ES256;ppt=shaken`.
 */
export async function identityHeader(claims: PassportClaims, x5u: string, keyPem: string): Promise<string> {
  const payload = {
    attest: claims.attest ?? "A",
    dest: { tn: [claims.dest] },
    iat: claims.iat ?? Math.floor(Date.now() / 1000),
    orig: { tn: claims.orig },
    origid: randomUUID(),
  };
  const jws = await new CompactSign(new TextEncoder().encode(JSON.stringify(payload)))
    .setProtectedHeader({ alg: "ES256", ppt: "shaken", typ: "passport", x5u })
    .sign(createPrivateKey(keyPem));
  return `${jws};info=<${x5u}>;alg=ES256;ppt=shaken`;
}
