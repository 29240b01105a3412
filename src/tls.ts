import { createPrivateKey, X509Certificate } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import type { Config } from "./config.js";

export interface TlsMaterial {
  cert: string;
  key: string;
}

/**
 * The configured certificate, or a self-signed one made on first start and kept in the data
 * directory so clients that pinned it keep working across restarts.
 */
export async function loadTlsMaterial(config: Config): Promise<TlsMaterial> {
  if (config.tlsCertFile && config.tlsKeyFile) {
    return {
      cert: readRequired(config.tlsCertFile, "BRIDGELINE_TLS_CERT"),
      key: readRequired(config.tlsKeyFile, "BRIDGELINE_TLS_KEY"),
    };
  }
  const dir = path.join(config.dataDir, "tls");
  const certFile = path.join(dir, "self-signed-cert.pem");
  const keyFile = path.join(dir, "self-signed-key.pem");
  if (fs.existsSync(certFile) && fs.existsSync(keyFile)) {
    return { cert: fs.readFileSync(certFile, "utf8"), key: fs.readFileSync(keyFile, "utf8") };
  }
  const notAfterDate = new Date();
  notAfterDate.setFullYear(notAfterDate.getFullYear() + 5);
  // Loaded only here: most starts find the certificate already made.
  const { default: selfsigned } = await import("selfsigned");
  const generated = await selfsigned.generate([{ name: "commonName", value: "localhost" }], {
    keySize: 2048,
    algorithm: "sha256",
    notAfterDate,
    extensions: [
      {
        name: "subjectAltName",
        altNames: [
          { type: 2, value: "localhost" },
          { type: 7, ip: "127.0.0.1" },
        ],
      },
    ],
  });
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  fs.writeFileSync(keyFile, generated.private, { mode: 0o600 });
  fs.writeFileSync(certFile, generated.cert);
  return { cert: generated.cert, key: generated.private };
}

/** SIP over TLS: its own pair when configured, else the HTTPS one; and the CAs trunks must chain to. */
export function loadSipTlsMaterial(
  config: Config,
  https: TlsMaterial,
): { material: TlsMaterial; ca: string | undefined } {
  const { tlsCertFile, tlsKeyFile, tlsCaFile } = config.sip;
  const material =
    tlsCertFile !== null && tlsKeyFile !== null
      ? {
          cert: readRequired(tlsCertFile, "BRIDGELINE_SIP_TLS_CERT"),
          key: readRequired(tlsKeyFile, "BRIDGELINE_SIP_TLS_KEY"),
        }
      : https;
  return { material, ca: tlsCaFile === null ? undefined : readRequired(tlsCaFile, "BRIDGELINE_SIP_TLS_CA") };
}

/** The STI-CA roots of STIR/SHAKEN verification (BRIDGELINE_STIR_CA_FILE); undefined when unset. */
export function loadStirTrustAnchors(config: Config): string | undefined {
  const file = config.sip.stirCaFile;
  if (file === null) return undefined;
  const pem = readRequired(file, "BRIDGELINE_STIR_CA_FILE");
  if (!pem.includes("-----BEGIN CERTIFICATE-----"))
    throw new Error(`BRIDGELINE_STIR_CA_FILE: ${file} holds no PEM certificate`);
  return pem;
}

/**
 * Why a certificate and key cannot be presented: not PEM, the key not the certificate's, or the
 * certificate not valid now; undefined when they can. Checked before a reloaded pair replaces the one
 * in use, so that a half-written or mismatched pair never reaches a listener.
 */
export function certificateProblem(material: TlsMaterial, now = new Date()): string | undefined {
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(material.cert);
  } catch (error) {
    return `the certificate is not a PEM certificate (${(error as Error).message})`;
  }
  try {
    if (!certificate.checkPrivateKey(createPrivateKey(material.key)))
      return "the key is not the certificate's";
  } catch (error) {
    return `the key is not a PEM private key (${(error as Error).message})`;
  }
  if (now.getTime() < Date.parse(certificate.validFrom))
    return `the certificate is not valid before ${certificate.validFrom}`;
  if (now.getTime() > Date.parse(certificate.validTo))
    return `the certificate expired on ${certificate.validTo}`;
  return undefined;
}

/** When the PEM's (first) certificate expires, in seconds since the epoch; undefined when it cannot be read. */
export function certificateExpiry(pem: string): number | undefined {
  try {
    return Date.parse(new X509Certificate(pem).validTo) / 1000;
  } catch {
    return undefined;
  }
}

function readRequired(file: string, variable: string): string {
  try {
    return fs.readFileSync(file, "utf8");
  } catch (error) {
    throw new Error(`${variable}: cannot read ${file}: ${(error as Error).message}`);
  }
}
