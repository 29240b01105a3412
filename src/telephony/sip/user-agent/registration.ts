/**
 * Registration (RFC 3261 section 10): a binding of our Contact to an address-of-record at a
 * registrar, kept up by REGISTER before it expires, so that a trunk that knows us only by
 * registration (credential trunks, dynamic addresses) can send us calls. Challenges are answered
 * with digest credentials (section 22); 423 asks again with the registrar's Min-Expires (10.2.8); a
 * failure is retried with back-off; `stop()` removes the binding (Expires: 0, 10.2.2).
 */

import type { Clock, TimerHandle } from "../../../domain/clock.js";
import { SipHeaders, type SipRequest, type SipResponse } from "../message/sip-message.js";
import type { Destination } from "../transport/sip-transport.js";
import { chooseChallenge, digestAuthorization } from "./digest.js";

export interface RegistrationHost {
  readonly clock: Clock;
  readonly userAgent: string;
  via(transport: Destination["transport"]): string;
  contact(transport: Destination["transport"], secure: boolean, user?: string): string;
  sendNonInvite(
    request: SipRequest,
    destination: Destination,
    onFinal?: (response: SipResponse | undefined) => void,
  ): void;
}

export interface RegistrationOptions {
  /** The registrar's URI (the Request-URI), e.g. `sip:sip.carrier.example`. */
  readonly registrar: string;
  /** Where each REGISTER goes: the registrar's server, looked up again for every attempt. */
  readonly locate: () => Promise<Destination>;
  /** An outbound proxy's Route value, `<sip:proxy.example;lr>` (RFC 3261 section 8.1.2). */
  readonly route?: string;
  /** The address-of-record (To and From), e.g. `sip:acct@sip.carrier.example`. */
  readonly aor: string;
  readonly credentials?: { readonly username: string; readonly password: string };
  /** The lifetime asked for, in seconds. */
  readonly expires: number;
  /** The user of the Contact registered; default the host's own. */
  readonly contactUser?: string;
  readonly callId: string;
  readonly tag: string;
  /** Told of each outcome, for the log. */
  readonly onState?: (state: RegistrationState, detail: string) => void;
}

export type RegistrationState = "registered" | "failed" | "unregistered";

/** The first retry after a failure; it doubles up to the last. */
const RETRY_FIRST_MS = 30_000;
const RETRY_LAST_MS = 600_000;

export class Registration {
  #cseq = 1;
  #timer: TimerHandle | undefined;
  #retryMs = RETRY_FIRST_MS;
  #expires: number;
  #stopped = false;
  #state: RegistrationState | undefined;

  constructor(
    private readonly host: RegistrationHost,
    private readonly options: RegistrationOptions,
  ) {
    this.#expires = options.expires;
  }

  get state(): RegistrationState | undefined {
    return this.#state;
  }

  start(): void {
    this.#register(this.#expires, undefined);
  }

  /** Removes the binding (Expires: 0); resolves when the registrar answered, or after 5 s. */
  stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer !== undefined) this.host.clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#state !== "registered") return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, 5000);
      timer.unref();
      this.#register(0, undefined, () => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  /** One REGISTER asking for `expires`; `authorization` answers the last challenge. */
  #register(expires: number, authorization: [string, string] | undefined, done?: () => void): void {
    this.options.locate().then(
      (destination) => this.#send(destination, expires, authorization, done),
      (error: unknown) => {
        const reason = `the registrar could not be found: ${error instanceof Error ? error.message : error}`;
        if (done === undefined) this.#failed(reason);
        else {
          this.#setState("unregistered", reason);
          done();
        }
      },
    );
  }

  #send(
    destination: Destination,
    expires: number,
    authorization: [string, string] | undefined,
    done: (() => void) | undefined,
  ): void {
    const headers = new SipHeaders();
    headers.append("Via", this.host.via(destination.transport));
    headers.append("Max-Forwards", "70");
    if (this.options.route !== undefined) headers.append("Route", this.options.route);
    headers.append("From", `<${this.options.aor}>;tag=${this.options.tag}`);
    headers.append("To", `<${this.options.aor}>`);
    headers.append("Call-ID", this.options.callId);
    headers.append("CSeq", `${this.#cseq++} REGISTER`);
    headers.append("Contact", this.host.contact(destination.transport, false, this.options.contactUser));
    headers.append("Expires", String(expires));
    headers.append("User-Agent", this.host.userAgent);
    if (authorization !== undefined) headers.append(authorization[0], authorization[1]);
    headers.append("Content-Length", "0");
    const request: SipRequest = {
      kind: "request",
      method: "REGISTER",
      uri: this.options.registrar,
      version: "SIP/2.0",
      headers,
      body: Buffer.alloc(0),
    };
    this.host.sendNonInvite(request, destination, (response) => {
      if (done !== undefined) {
        // Unregistering: one answer to a challenge, then done whatever comes.
        const retry = response === undefined ? undefined : this.#answer(response, request);
        if (retry !== undefined && authorization === undefined) this.#register(0, retry, done);
        else {
          this.#setState("unregistered", response === undefined ? "no answer" : `${response.status}`);
          done();
        }
        return;
      }
      this.#outcome(request, response, expires, authorization !== undefined, destination);
    });
  }

  #outcome(
    request: SipRequest,
    response: SipResponse | undefined,
    expires: number,
    answered: boolean,
    destination: Destination,
  ): void {
    if (this.#stopped) return;
    if (response === undefined) {
      this.#failed("no answer from the registrar");
      return;
    }
    if (response.status === 401 || response.status === 407) {
      const authorization = answered ? undefined : this.#answer(response, request);
      if (authorization !== undefined) this.#register(expires, authorization);
      else this.#failed(`${response.status} ${response.reason}: the credentials were refused`);
      return;
    }
    if (response.status === 423) {
      const minimum = Number(response.headers.get("Min-Expires"));
      if (Number.isInteger(minimum) && minimum > expires) {
        this.#expires = minimum;
        this.#register(minimum, undefined);
      } else this.#failed(`423 ${response.reason} without a usable Min-Expires`);
      return;
    }
    if (response.status >= 300) {
      this.#failed(`${response.status} ${response.reason}`);
      return;
    }
    const granted = grantedExpires(
      response,
      this.host.contact(destination.transport, false, this.options.contactUser),
      expires,
    );
    this.#retryMs = RETRY_FIRST_MS;
    this.#setState("registered", `for ${granted} s`);
    // Refresh before it lapses: at 80 % of the lifetime, at least 5 s early.
    this.#schedule(Math.max(1000, Math.min(granted * 800, (granted - 5) * 1000)), () =>
      this.#register(this.#expires, undefined),
    );
  }

  /** Section 22.2: the Authorization (or Proxy-Authorization) that answers a challenge. */
  #answer(response: SipResponse, request: SipRequest): [string, string] | undefined {
    const credentials = this.options.credentials;
    if (credentials === undefined) return undefined;
    const proxy = response.status === 407;
    const challenge = chooseChallenge(
      response.headers.getAll(proxy ? "Proxy-Authenticate" : "WWW-Authenticate"),
    );
    if (challenge === undefined) return undefined;
    const value = digestAuthorization(challenge, {
      username: credentials.username,
      password: credentials.password,
      method: "REGISTER",
      uri: request.uri,
      nonceCount: 1,
    });
    return [proxy ? "Proxy-Authorization" : "Authorization", value];
  }

  #failed(detail: string): void {
    this.#setState("failed", `${detail}; trying again in ${this.#retryMs / 1000} s`);
    this.#schedule(this.#retryMs, () => this.#register(this.#expires, undefined));
    this.#retryMs = Math.min(2 * this.#retryMs, RETRY_LAST_MS);
  }

  #schedule(ms: number, then: () => void): void {
    if (this.#timer !== undefined) this.host.clock.clearTimeout(this.#timer);
    this.#timer = this.host.clock.setTimeout(() => {
      this.#timer = undefined;
      if (!this.#stopped) then();
    }, ms);
  }

  #setState(state: RegistrationState, detail: string): void {
    this.#state = state;
    this.options.onState?.(state, detail);
  }
}

/**
 * Section 10.2.4: the lifetime the registrar granted our binding: our Contact's `expires` parameter
 * in the 2xx, else its Expires header, else what we asked for.
 */
function grantedExpires(response: SipResponse, ourContact: string, asked: number): number {
  const uri = /<([^>]+)>/.exec(ourContact)?.[1] ?? ourContact;
  for (const value of response.headers.getAll("Contact"))
    for (const binding of value.split(/,(?=\s*<)/)) {
      if (!binding.includes(uri)) continue;
      const expires = /;\s*expires\s*=\s*(\d+)/i.exec(binding)?.[1];
      if (expires !== undefined) return Number(expires);
    }
  const header = Number(response.headers.get("Expires"));
  if (Number.isInteger(header) && header > 0) return header;
  return asked;
}
