/**
 * A test certificate authority made with openssl in a temporary directory, and certificates it
 * signs for a given subjectAltName ("IP:127.0.0.1", "DNS:wrong.example").
 */
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export interface IssuedCertificate {
  readonly cert: string;
  readonly key: string;
  /** Paths of the certificate and the key, and of a file holding both (as baresip wants). */
  readonly certFile: string;
  readonly keyFile: string;
  readonly pem: string;
}

export interface TestAuthority {
  /** The CA certificate's path. */
  readonly ca: string;
  issue(name: string, altName: string): IssuedCertificate;
}

export function testAuthority(dir: string): TestAuthority {
  const openssl = (...args: string[]) => execFileSync("openssl", args, { cwd: dir, stdio: "pipe" });
  openssl(
    "req",
    "-x509",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-days",
    "2",
    "-subj",
    "/CN=Bridgeline test CA",
    "-keyout",
    "ca.key",
    "-out",
    "ca.pem",
  );
  return {
    ca: join(dir, "ca.pem"),
    issue(name, altName) {
      openssl(
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-subj",
        `/CN=${name}`,
        "-keyout",
        `${name}.key`,
        "-out",
        `${name}.csr`,
      );
      writeFileSync(join(dir, `${name}.ext`), `subjectAltName=${altName}\n`);
      openssl(
        "x509",
        "-req",
        "-in",
        `${name}.csr`,
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-days",
        "2",
        "-extfile",
        `${name}.ext`,
        "-out",
        `${name}.crt`,
      );
      const certFile = join(dir, `${name}.crt`);
      const keyFile = join(dir, `${name}.key`);
      const cert = readFileSync(certFile, "utf8");
      const key = readFileSync(keyFile, "utf8");
      const pem = join(dir, `${name}.pem`);
      writeFileSync(pem, cert + key);
      return { cert, key, certFile, keyFile, pem };
    },
  };
}
