/**
 * How a call is protected: its signalling over SIP over TLS, its media SRTP, both or neither. An
 * "encrypted only" conference takes only calls with both: SRTP keys travel in the SDP, so SRTP
 * without TLS hands the keys to anyone on the path, and TLS without SRTP leaves the voice readable.
 */

export const CALL_ENCRYPTIONS = ["tls+srtp", "tls", "srtp", "none"] as const;
export type CallEncryption = (typeof CALL_ENCRYPTIONS)[number];

/** The encryption of a call whose signalling came (or went) over TLS or not, and whose media is SRTP or not. */
export function callEncryption(call: {
  readonly signallingTls: boolean;
  readonly encrypted: boolean;
}): CallEncryption {
  if (call.signallingTls) return call.encrypted ? "tls+srtp" : "tls";
  return call.encrypted ? "srtp" : "none";
}

/** Whether a call of this encryption may be in a conference that is (or is not) encrypted only. */
export function admittedByEncryption(encryptedOnly: boolean, encryption: CallEncryption): boolean {
  return !encryptedOnly || encryption === "tls+srtp";
}

/** Reads a stored value back; anything else (a row of an older version) is unknown. */
export function readCallEncryption(value: string | null): CallEncryption | null {
  return (CALL_ENCRYPTIONS as readonly string[]).includes(value ?? "") ? (value as CallEncryption) : null;
}
