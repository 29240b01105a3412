/** RFC 4475 torture messages from shared/sip-torture (see its README.md for the index.json fields). */
import { readFileSync } from "node:fs";

export interface TortureCase {
  readonly name: string;
  readonly file: string;
  readonly section: string;
  readonly title: string;
  readonly valid: boolean;
  readonly uas_status: readonly number[];
  readonly liberal_ok: boolean | null;
  readonly kind: "request" | "response";
}

const TORTURE_DIR = new URL("../../../shared/sip-torture/", import.meta.url);

export const TORTURE_CASES: readonly TortureCase[] = JSON.parse(
  readFileSync(new URL("index.json", TORTURE_DIR), "utf8"),
);

/** A message's bytes (by its case or its name), exactly as the RFC's archive has them. */
export function tortureBytes(torture: TortureCase | string): Buffer {
  return readFileSync(new URL(typeof torture === "string" ? `${torture}.sip` : torture.file, TORTURE_DIR));
}
