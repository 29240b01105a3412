/**
 * The ICE servers a browser participant is given (RTCConfiguration.iceServers): the configured STUN
 * and TURN URLs, with short-lived TURN credentials made from the secret the TURN server shares with
 * us (the "TURN REST API" scheme, draft-uberti-behave-turn-rest; coturn's `use-auth-secret`). No
 * per-user state: the TURN server checks the credential by computing the same HMAC.
 */
import { createHmac } from "node:crypto";

export interface IceServerSettings {
  /** `stun:`, `turn:` and `turns:` URIs (BRIDGELINE_TURN_URLS). */
  readonly urls: readonly string[];
  /** coturn's `static-auth-secret`; null gives the URLs without credentials. */
  readonly secret: string | null;
  /** How long the credentials may be used to make an allocation. */
  readonly ttlSeconds: number;
}

/** An RTCIceServer as a browser's RTCPeerConnection takes it. */
export interface BrowserIceServer {
  urls: string[];
  username?: string;
  credential?: string;
}

/** What the username names besides its expiry: coturn logs it, and nothing checks it. */
const TURN_USER = "bridgeline";

/**
 * One entry holding every URL (they share the credentials), or none when no URL is configured.
 * The username is `<expiry in Unix seconds>:bridgeline` and the credential
 * base64(HMAC-SHA1(secret, username)).
 */
export function browserIceServers(settings: IceServerSettings, now: Date): BrowserIceServer[] {
  if (settings.urls.length === 0) return [];
  const urls = [...settings.urls];
  if (settings.secret === null) return [{ urls }];
  const expiry = Math.floor(now.getTime() / 1000) + settings.ttlSeconds;
  const username = `${expiry}:${TURN_USER}`;
  const credential = createHmac("sha1", settings.secret).update(username).digest("base64");
  return [{ urls, username, credential }];
}
