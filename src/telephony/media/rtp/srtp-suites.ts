/**
 * The SRTP suites we know (RFC 4568, RFC 6188, RFC 7714): their names, preference, key and tag
 * sizes, and fresh master keys for them.
 */
import { randomBytes } from "node:crypto";

export type SrtpSuite =
  | "AES_CM_128_HMAC_SHA1_80"
  | "AES_CM_128_HMAC_SHA1_32"
  | "AES_256_CM_HMAC_SHA1_80"
  | "AES_256_CM_HMAC_SHA1_32"
  | "AEAD_AES_128_GCM"
  | "AEAD_AES_256_GCM";

/** Every suite we know, strongest first. */
export const SRTP_SUITES: readonly SrtpSuite[] = [
  "AEAD_AES_256_GCM",
  "AEAD_AES_128_GCM",
  "AES_256_CM_HMAC_SHA1_80",
  "AES_256_CM_HMAC_SHA1_32",
  "AES_CM_128_HMAC_SHA1_80",
  "AES_CM_128_HMAC_SHA1_32",
];

/** The suites offered and accepted unless configured otherwise: those every SDES peer has (RFC 4568). */
export const DEFAULT_SRTP_SUITES: readonly SrtpSuite[] = [
  "AES_CM_128_HMAC_SHA1_80",
  "AES_CM_128_HMAC_SHA1_32",
];

/** SRTP for a call: none, offered and either answer taken, or nothing else accepted (488). */
export const SRTP_POLICIES = ["off", "optional", "required"] as const;
export type SrtpPolicy = (typeof SRTP_POLICIES)[number];

/** A master key and salt, as an SDES inline key carries them (RFC 4568 section 6.1). */
export interface SrtpKeyMaterial {
  readonly suite: SrtpSuite;
  /** The master key then the master salt, base64 (what `inline:` carries). */
  readonly inline: string;
}

export interface SuiteParameters {
  /** Master and session encryption key, in bytes. */
  readonly keyLength: number;
  /** Master and session salt, in bytes: 14 for AES-CM, 12 for GCM (RFC 7714 section 11). */
  readonly saltLength: number;
  readonly aead: boolean;
  readonly rtpTagLength: number;
  readonly rtcpTagLength: number;
}

/**
 * RFC 4568 section 6.2 and RFC 6188 section 6: the _32 suites keep an 80-bit SRTCP tag. RFC 7714
 * section 14.2: a 16-octet tag on both.
 */
export const SUITES: Readonly<Record<SrtpSuite, SuiteParameters>> = {
  AES_CM_128_HMAC_SHA1_80: {
    keyLength: 16,
    saltLength: 14,
    aead: false,
    rtpTagLength: 10,
    rtcpTagLength: 10,
  },
  AES_CM_128_HMAC_SHA1_32: { keyLength: 16, saltLength: 14, aead: false, rtpTagLength: 4, rtcpTagLength: 10 },
  AES_256_CM_HMAC_SHA1_80: {
    keyLength: 32,
    saltLength: 14,
    aead: false,
    rtpTagLength: 10,
    rtcpTagLength: 10,
  },
  AES_256_CM_HMAC_SHA1_32: { keyLength: 32, saltLength: 14, aead: false, rtpTagLength: 4, rtcpTagLength: 10 },
  AEAD_AES_128_GCM: { keyLength: 16, saltLength: 12, aead: true, rtpTagLength: 16, rtcpTagLength: 16 },
  AEAD_AES_256_GCM: { keyLength: 32, saltLength: 12, aead: true, rtpTagLength: 16, rtcpTagLength: 16 },
};

/** The longest tag any suite adds to an RTP packet (GCM's 16 bytes). */
export const SRTP_MAX_RTP_OVERHEAD = Math.max(...Object.values(SUITES).map((suite) => suite.rtpTagLength));

/** How many bytes the inline key of `suite` holds: master key and salt. */
export function inlineKeyLength(suite: SrtpSuite): number {
  return SUITES[suite].keyLength + SUITES[suite].saltLength;
}

/** A fresh random master key and salt for `suite`. */
export function newSrtpKey(suite: SrtpSuite): SrtpKeyMaterial {
  return { suite, inline: randomBytes(inlineKeyLength(suite)).toString("base64") };
}
