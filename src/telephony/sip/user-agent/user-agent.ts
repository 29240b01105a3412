/**
 * The user agent core (RFC 3261 section 8): answers what no session claims (OPTIONS 200, unknown
 * dialogs 481, unsupported methods 405/501, unknown extensions 420), routes in-dialog requests, ACKs
 * and stray 2xx responses to their INVITE sessions, and starts sessions both ways. Over 400 lines:
 * section 8.2's checks, in their order, and the routing they precede read best as one core.
 */

import { createHash } from "node:crypto";
import { isIPv6 } from "node:net";
import { systemClock } from "../../../clock.js";
import type { Clock } from "../../../domain/clock.js";
import { dialogId, newCallId, newTag } from "../dialog/dialog.js";
import { listItems, quotedString, uriScheme } from "../message/header-values.js";
import { SipHeaders, type SipMessage, type SipRequest, type SipResponse } from "../message/sip-message.js";
import type { InviteClientTransaction } from "../transaction/invite-client-transaction.js";
import type { InviteServerTransaction } from "../transaction/invite-server-transaction.js";
import {
  responseTo,
  type ServerTransaction,
  type ServerTransactionLimits,
  type TransactionCore,
  TransactionLayer,
} from "../transaction/transaction-layer.js";
import type {
  Destination,
  MessageSource,
  SipTransport,
  SourceList,
  TransportName,
} from "../transport/sip-transport.js";
import { formatHost, newBranch } from "../transport/via.js";
import { IncomingInviteSession } from "./incoming-invite-session.js";
import type { InviteSession } from "./invite-session.js";
import { type Failover, OutgoingInviteSession } from "./outgoing-invite-session.js";
import type { Credentials, InviteResponseHandler, SessionHost } from "./session-host.js";
import { DEFAULT_SESSION_TIMER, type SessionTimerSettings, timerForInvite } from "./session-timer.js";
import { SourceLimit, type SourceRate } from "./source-limit.js";

/** Methods this user agent implements (the Allow header). */
const ALLOWED = ["INVITE", "ACK", "CANCEL", "BYE", "OPTIONS", "INFO", "UPDATE", "PRACK"];
/** Extensions a Require may name (section 8.2.2.3): session timers (RFC 4028), 100rel (RFC 3262). */
const SUPPORTED = ["timer", "100rel"];
/** Methods it knows of but does not support: 405 with Allow (section 8.2.1); anything else is 501. */
const KNOWN_UNSUPPORTED = new Set(["REGISTER", "SUBSCRIBE", "NOTIFY", "PUBLISH", "MESSAGE", "REFER"]);
/** Retry-After of a 503 for want of server transactions: about when Timer J ends those of a burst. */
const OVERLOAD_RETRY_AFTER_SECONDS = 5;

export interface UserAgentOptions {
  /** Written in User-Agent and Server headers. */
  readonly product?: string;
  readonly clock?: Clock;
  /** Told of dropped messages and protocol oddities, for logging. */
  readonly onDrop?: (reason: string) => void;
  /**
   * Who may send us requests: a request from anywhere else is refused 403 ("refuse") or dropped
   * without a word ("drop"). Undefined: anyone.
   */
  readonly trusted?: {
    readonly sources: SourceList;
    readonly others: "refuse" | "drop";
  };
  /** Told of each request refused or dropped for its source, for the operator's log. */
  readonly onUntrusted?: (source: MessageSource, method: string) => void;
  /** Session timers (RFC 4028): the interval asked for and the smallest taken; default 1800 and 90 s. */
  readonly sessionTimer?: SessionTimerSettings;
  /**
   * New requests (not ACKs, retransmissions, or requests within a dialog this agent has) each source
   * may send: past the rate they are refused 503, past a burst of refusals dropped (see SourceLimit).
   * Undefined: no limit.
   */
  readonly requestRate?: SourceRate;
  /** Server transactions kept at once, per source and in all; past them, requests get 503. */
  readonly serverTransactions?: ServerTransactionLimits;
  /** Milliseconds for the request rate; default performance.now. */
  readonly now?: () => number;
}

export interface OutgoingCallRequest {
  /** Request-URI, e.g. sip:+16045550123@trunk.example:5060. */
  readonly requestUri: string;
  /** Who we are in From: the user (our caller ID), a display name, and the host (default ours). */
  readonly from: Identity;
  /** Who we are to a trusted carrier when From may not say it (P-Asserted-Identity, RFC 3325). */
  readonly assertedIdentity?: Identity;
  readonly destination: Destination;
  readonly offer: string;
  readonly credentials?: Credentials;
  /** Further headers for the INVITE, e.g. what another instance needs to know of the call. */
  readonly headers?: readonly (readonly [string, string])[];
  /** The servers to try next when `destination` fails (RFC 3263 section 4.3). */
  readonly failover?: Failover;
  /**
   * The session timer asked of the far end (RFC 4028): its interval (at least our Min-SE), or null
   * to ask none and not list `timer` in Supported; default the agent's.
   */
  readonly sessionTimer?: { readonly interval: number } | null;
  /** Reliable provisional responses (RFC 3262): offered (default), required of the far end, or not offered. */
  readonly reliableProvisional?: ReliableProvisional;
}

export type ReliableProvisional = "supported" | "required" | "off";
export const RELIABLE_PROVISIONAL: readonly ReliableProvisional[] = ["supported", "required", "off"];

/**
 * A party in From or P-Asserted-Identity: `"displayName" <sip:user@host;params>`, host default ours,
 * or `"displayName" <uri>` when `uri` is given (a tel: URI, RFC 3966).
 */
export interface Identity {
  readonly user: string;
  readonly displayName?: string;
  readonly host?: string;
  /** URI parameters after the host, e.g. `;user=phone` (RFC 3261 section 19.1.1). */
  readonly params?: string;
  readonly uri?: string;
}

export class UserAgent implements TransactionCore, SessionHost {
  readonly clock: Clock;
  readonly allow = ALLOWED.join(", ");
  readonly userAgent: string;
  readonly sessionTimer: SessionTimerSettings;
  readonly #transport: SipTransport;
  readonly #layer: TransactionLayer;
  readonly #onDrop: ((reason: string) => void) | undefined;
  readonly #trusted: UserAgentOptions["trusted"];
  readonly #onUntrusted: UserAgentOptions["onUntrusted"];
  readonly #sourceLimit: SourceLimit | undefined;
  /** Sessions by dialog identifier, once they have one. */
  readonly #dialogs = new Map<string, InviteSession>();
  /** Incoming sessions not yet answered, by their INVITE server transaction. */
  readonly #pending = new Map<InviteServerTransaction, IncomingInviteSession>();
  #onInvite: ((session: IncomingInviteSession) => void) | undefined;

  constructor(transport: SipTransport, options: UserAgentOptions = {}) {
    this.#transport = transport;
    this.clock = options.clock ?? systemClock;
    this.userAgent = options.product ?? "Bridgeline";
    this.sessionTimer = options.sessionTimer ?? DEFAULT_SESSION_TIMER;
    this.#onDrop = options.onDrop;
    this.#trusted = options.trusted;
    this.#onUntrusted = options.onUntrusted;
    this.#sourceLimit =
      options.requestRate === undefined ? undefined : new SourceLimit(options.requestRate, options.now);
    this.#layer = new TransactionLayer(transport, this, { clock: this.clock }, options.serverTransactions);
  }

  /** What requests from each source got under the request rate; undefined without one. */
  get requestRateStats(): Readonly<SourceLimit["stats"]> | undefined {
    return this.#sourceLimit?.stats;
  }

  /** Server transactions kept now. */
  get serverTransactions(): number {
    return this.#layer.serverTransactions;
  }

  #nameAddr({
    user,
    displayName,
    host = formatHost(this.#transport.sentBy.host),
    params = "",
    uri,
  }: Identity): string {
    const name = displayName === undefined ? "" : `${quotedString(displayName)} `;
    return `${name}<${uri ?? `sip:${user}@${host}${params}`}>`;
  }

  /** The transport's messages come here. */
  receive(message: SipMessage, source: MessageSource): void {
    const trusted = this.#trusted;
    if (
      message.kind === "request" &&
      trusted !== undefined &&
      !trusted.sources.check(source.address, isIPv6(source.address) ? "ipv6" : "ipv4")
    ) {
      // A stranger's requests count against its rate too: neither 403s nor log lines follow a flood 1:1.
      if (!this.#withinRate(message, source)) return;
      this.#onUntrusted?.(source, message.method);
      if (trusted.others === "drop" || message.method === "ACK") return;
      // Refused 403 outside any transaction: a retransmission is refused again, and nothing else
      // (no transaction, dialog or call) is kept for a stranger.
      this.#transport
        .sendResponse(responseTo(message, 403, "Forbidden", { toTag: newTag() }))
        .catch(() => undefined);
      return;
    }
    this.#layer.receive(message, source);
  }

  /**
   * Whether a call taken, answered or not yet, came over this flow: its connection must stay open,
   * since responses and requests within the dialog go back over it. Asked only of connections idle
   * past the transport's idle timeout, so a walk over the sessions is cheap enough.
   */
  usesFlow(flow: MessageSource): boolean {
    for (const session of this.#pending.values()) if (session.cameOver(flow)) return true;
    for (const session of this.#dialogs.values())
      if (session instanceof IncomingInviteSession && session.cameOver(flow)) return true;
    return false;
  }

  /** Who answers INVITEs outside a dialog; without one they are refused 404. */
  onInvite(handler: (session: IncomingInviteSession) => void): void {
    this.#onInvite = handler;
  }

  /** Places a call: sends the INVITE (section 8.1.1) and returns its session. */
  call(request: OutgoingCallRequest): OutgoingInviteSession {
    const transportName = request.destination.transport;
    const sentBy = this.#transport.sentBy;
    const headers = new SipHeaders();
    headers.append("Via", this.via(transportName));
    headers.append("Max-Forwards", "70");
    headers.append("From", `${this.#nameAddr(request.from)};tag=${newTag()}`);
    headers.append("To", `<${request.requestUri}>`);
    headers.append("Call-ID", newCallId(sentBy.host));
    headers.append("CSeq", "1 INVITE");
    headers.append("Contact", this.contact(transportName, uriScheme(request.requestUri) === "sips"));
    headers.append("Allow", this.allow);
    // RFC 4028 section 7.1: we ask for a session timer and let the answerer pick the refresher.
    const timer =
      request.sessionTimer === undefined
        ? this.sessionTimer
        : request.sessionTimer && {
            interval: request.sessionTimer.interval,
            minimum: Math.min(this.sessionTimer.minimum, request.sessionTimer.interval),
          };
    const reliable = request.reliableProvisional ?? "supported";
    const supported = [...(timer === null ? [] : ["timer"]), ...(reliable === "off" ? [] : ["100rel"])];
    if (supported.length > 0) headers.append("Supported", supported.join(", "));
    if (reliable === "required") headers.append("Require", "100rel");
    if (timer !== null) {
      headers.append("Session-Expires", String(timer.interval));
      headers.append("Min-SE", String(timer.minimum));
    }
    headers.append("User-Agent", this.userAgent);
    if (request.assertedIdentity !== undefined)
      headers.append("P-Asserted-Identity", this.#nameAddr(request.assertedIdentity));
    for (const [name, value] of request.headers ?? []) headers.append(name, value);
    headers.append("Content-Type", "application/sdp");
    const body = Buffer.from(request.offer);
    headers.append("Content-Length", String(body.length));
    const invite: SipRequest = {
      kind: "request",
      method: "INVITE",
      uri: request.requestUri,
      version: "SIP/2.0",
      headers,
      body,
    };
    const session = new OutgoingInviteSession(
      this,
      invite,
      request.destination,
      request.credentials,
      request.failover,
    );
    session.start();
    return session;
  }

  // SessionHost

  via(transport: TransportName): string {
    const { host, port } = this.#transport.sentByFor(transport);
    return `SIP/2.0/${transport} ${formatHost(host)}:${port};branch=${newBranch()};rport`;
  }

  /** Our Contact over `transport`; `user` is `bridgeline` but where a registration names its own. */
  contact(transport: TransportName, secure = false, user = "bridgeline"): string {
    const { host, port } = this.#transport.sentByFor(transport);
    // A SIPS URI says TLS by itself (RFC 5630 section 3.1.3 deprecates ;transport=tls with it).
    if (secure) return `<sips:${user}@${formatHost(host)}:${port}>`;
    const param = transport === "UDP" ? "" : `;transport=${transport.toLowerCase()}`;
    return `<sip:${user}@${formatHost(host)}:${port}${param}>`;
  }

  sendInvite(
    request: SipRequest,
    destination: Destination,
    handler: InviteResponseHandler,
  ): InviteClientTransaction {
    return this.#layer.sendRequest(request, destination, {
      receiveResponse: (response) => handler.receiveResponse(response),
      onTimeout: () => handler.onTimeout(),
      onTransportError: (error) => handler.onTransportError(error),
    }) as InviteClientTransaction;
  }

  sendNonInvite(
    request: SipRequest,
    destination: Destination,
    onFinal?: (response: SipResponse | undefined) => void,
  ): void {
    this.#layer.sendRequest(
      request,
      destination,
      onFinal === undefined
        ? {}
        : {
            receiveResponse: (response) => {
              if (response.status >= 200) onFinal(response);
            },
            onTimeout: () => onFinal(undefined),
            onTransportError: () => onFinal(undefined),
          },
    );
  }

  sendAck(ack: SipRequest, destination: Destination): void {
    this.#layer.sendAck(ack, destination);
  }

  dialogConfirmed(session: InviteSession): void {
    const id = session.dialogId;
    if (id !== undefined) this.#dialogs.set(id, session);
    if (session instanceof IncomingInviteSession) this.#pending.delete(session.transaction);
  }

  sessionEnded(session: InviteSession): void {
    const id = session.dialogId;
    if (id !== undefined) this.#dialogs.delete(id);
    if (session instanceof IncomingInviteSession) this.#pending.delete(session.transaction);
  }

  // TransactionCore

  /**
   * Section 8.2, in its order: the method (405/501 with Allow), the Request-URI's scheme (416), any
   * Require (420 with Unsupported), then an INVITE's body and what it accepts back (415 with Accept,
   * 406); then the request is for a dialog, or for us.
   */
  receiveRequest(request: SipRequest, transaction: ServerTransaction, source: MessageSource): void {
    const refusal = this.#refusal(request, newTag());
    if (refusal !== undefined) {
      transaction.respond(refusal);
      return;
    }
    if (request.method === "INVITE") {
      const refusal = contentRefusal(request);
      if (refusal !== undefined) {
        transaction.respond(responseTo(request, refusal.status, refusal.reason, refusal));
        return;
      }
    }
    const toTag = request.headers.to?.tag;
    if (toTag !== undefined) {
      this.#receiveInDialog(request, transaction, toTag);
      return;
    }
    if (request.method === "INVITE")
      this.#receiveInvite(request, transaction as InviteServerTransaction, source);
    else transaction.respond(this.#outOfDialogAnswer(request, newTag()));
  }

  /**
   * Section 8.2.7: a request outside any dialog that is not an INVITE (nor a CANCEL, which matches
   * one) always gets the same answer, so it is answered statelessly: no transaction is kept for it, a
   * retransmission is answered again alike, and the To tag is made from the request. A scanner's
   * OPTIONS and REGISTERs then hold nothing for Timer J's 32 s, and cannot fill the server
   * transactions every caller needs.
   */
  answerStatelessly(request: SipRequest): SipResponse | undefined {
    if (request.method === "INVITE" || request.method === "CANCEL" || request.headers.to?.tag !== undefined)
      return undefined;
    const toTag = statelessTag(request);
    return this.#refusal(request, toTag) ?? this.#outOfDialogAnswer(request, toTag);
  }

  /**
   * Section 8.2, in its order: the method (405/501 with Allow), the Request-URI's scheme (416), any
   * Require (420 with Unsupported); undefined when none refuses the request.
   */
  #refusal(request: SipRequest, toTag: string): SipResponse | undefined {
    if (!ALLOWED.includes(request.method)) {
      const headers: [string, string][] = [["Allow", this.allow]];
      return KNOWN_UNSUPPORTED.has(request.method)
        ? responseTo(request, 405, "Method Not Allowed", { toTag, headers })
        : responseTo(request, 501, "Not Implemented", { toTag, headers });
    }
    // Section 8.2.2.1: we are reached by sip: and sips: URIs only.
    const scheme = uriScheme(request.uri);
    if (scheme !== "sip" && scheme !== "sips")
      return responseTo(request, 416, "Unsupported URI Scheme", { toTag });
    // Section 8.2.2.3: a Require we do not support is refused 420 with Unsupported.
    const unsupported = listItems(request.headers.getAll("Require")).filter(
      (option) => !SUPPORTED.includes(option.toLowerCase()),
    );
    if (unsupported.length > 0 && request.method !== "CANCEL")
      return responseTo(request, 420, "Bad Extension", {
        toTag,
        headers: [["Unsupported", unsupported.join(", ")]],
      });
    return undefined;
  }

  /**
   * A request for us outside any dialog, not an INVITE: OPTIONS 200 (section 11.2); BYE (15.1.2),
   * INFO (RFC 6086), UPDATE (RFC 3311) and PRACK (RFC 3262) belong to a dialog, and without one
   * get 481.
   */
  #outOfDialogAnswer(request: SipRequest, toTag: string): SipResponse {
    if (request.method !== "OPTIONS")
      return responseTo(request, 481, "Call/Transaction Does Not Exist", { toTag });
    return responseTo(request, 200, "OK", {
      toTag,
      headers: [
        ["Allow", this.allow],
        ["Accept", "application/sdp"],
        ["Server", this.userAgent],
      ],
    });
  }

  receiveAck(ack: SipRequest): void {
    const session = this.#sessionFor(ack);
    if (session !== undefined) session.receiveAck(ack);
  }

  receiveCancel(invite: InviteServerTransaction, cancel: SipRequest): void {
    this.#pending.get(invite)?.cancelled(cancel);
  }

  receiveStrayResponse(response: SipResponse): void {
    if (response.status < 200 || response.status >= 300) return;
    const callId = response.headers.callId;
    const fromTag = response.headers.from?.tag;
    const toTag = response.headers.to?.tag;
    if (callId === undefined || fromTag === undefined || toTag === undefined) return;
    this.#dialogs.get(dialogId(callId, fromTag, toTag))?.receiveStray2xx(response);
  }

  admitRequest(request: SipRequest, source: MessageSource): boolean {
    return this.#withinRate(request, source);
  }

  receiveOverload(request: SipRequest): void {
    this.#refuseOverloaded(request, OVERLOAD_RETRY_AFTER_SECONDS);
  }

  onDrop(reason: string): void {
    this.#onDrop?.(reason);
  }

  /**
   * Whether a request is within its source's rate; one that is not is answered 503 or dropped here.
   * An ACK is never answered, and a request within a dialog we have belongs to a call in progress: a
   * flood that shares its source must not end it. Neither counts.
   */
  #withinRate(request: SipRequest, source: MessageSource): boolean {
    const limit = this.#sourceLimit;
    if (limit === undefined || request.method === "ACK") return true;
    if (request.headers.to?.tag !== undefined && this.#sessionFor(request) !== undefined) return true;
    const admission = limit.take(source.address);
    if (admission === "refuse") this.#refuseOverloaded(request, limit.retryAfter(source.address));
    return admission === "serve";
  }

  /**
   * Section 21.5.4: 503 with Retry-After, sent outside any transaction so that nothing is kept for it
   * (a retransmission is refused again, while the limit lets it be).
   */
  #refuseOverloaded(request: SipRequest, retryAfterSeconds: number): void {
    this.#transport
      .sendResponse(
        responseTo(request, 503, "Service Unavailable", {
          toTag: newTag(),
          headers: [["Retry-After", String(retryAfterSeconds)]],
        }),
      )
      .catch(() => undefined);
  }

  #receiveInvite(request: SipRequest, transaction: InviteServerTransaction, source: MessageSource): void {
    // RFC 4028 section 8.1: an interval below our minimum is refused 422 with the minimum.
    const timer = timerForInvite(request, this.sessionTimer);
    if (timer !== undefined && "tooSmall" in timer) {
      transaction.respond(
        responseTo(request, 422, "Session Interval Too Small", {
          toTag: newTag(),
          headers: [["Min-SE", String(timer.tooSmall)]],
        }),
      );
      return;
    }
    const session = new IncomingInviteSession(this, request, transaction, newTag(), source);
    const handler = this.#onInvite;
    if (handler === undefined) {
      session.reject(404, "Not Found");
      return;
    }
    this.#pending.set(transaction, session);
    try {
      handler(session);
    } catch (error) {
      this.#onDrop?.(`INVITE handler failed: ${error instanceof Error ? error.message : String(error)}`);
      session.reject(500, "Server Internal Error");
    }
  }

  #receiveInDialog(request: SipRequest, transaction: ServerTransaction, toTag: string): void {
    const session = this.#sessionFor(request, toTag);
    const early = session === undefined ? this.#earlyFor(request, toTag) : undefined;
    if (early !== undefined) {
      early.receivePrack(request, transaction);
      return;
    }
    if (session === undefined) {
      // Section 12.2.2: a request for a dialog we do not have.
      transaction.respond(responseTo(request, 481, "Call/Transaction Does Not Exist"));
      return;
    }
    session.receiveRequest(request, transaction);
  }

  /** RFC 3262: a PRACK comes in the early dialog of an INVITE we have not answered yet. */
  #earlyFor(request: SipRequest, toTag: string): InviteSession | undefined {
    if (request.method !== "PRACK") return undefined;
    const callId = request.headers.callId;
    for (const session of this.#pending.values())
      if (session.localTag === toTag && session.invite.headers.callId === callId) return session;
    return undefined;
  }

  #sessionFor(request: SipRequest, toTag = request.headers.to?.tag): InviteSession | undefined {
    const callId = request.headers.callId;
    const fromTag = request.headers.from?.tag;
    if (callId === undefined || fromTag === undefined || toTag === undefined) return undefined;
    return this.#dialogs.get(dialogId(callId, toTag, fromTag));
  }
}

/**
 * Section 8.2.3 and 21.4.7: an INVITE whose body is not SDP gets 415 with Accept; one whose Accept
 * leaves out SDP (the only answer we give) gets 406. Undefined when it is acceptable.
 */
function contentRefusal(
  invite: SipRequest,
): { status: number; reason: string; toTag: string; headers?: [string, string][] } | undefined {
  const type = invite.headers.contentType?.mediaType;
  if (invite.body.length > 0 && invite.headers.has("Content-Type") && type !== "application/sdp")
    return {
      status: 415,
      reason: "Unsupported Media Type",
      toTag: newTag(),
      headers: [["Accept", "application/sdp"]],
    };
  const accepted = invite.headers
    .getAll("Accept")
    .flatMap((value) => value.split(","))
    .map((range) => range.split(";")[0]?.trim().toLowerCase() ?? "")
    .filter((range) => range !== "");
  if (
    accepted.length > 0 &&
    !accepted.some((range) => range === "application/sdp" || range === "application/*" || range === "*/*")
  )
    return { status: 406, reason: "Not Acceptable", toTag: newTag() };
  return undefined;
}

/**
 * Section 8.2.7: a stateless answer's To tag, the same for the same request (its retransmissions
 * included): made from its Call-ID, From tag, CSeq and top Via branch.
 */
function statelessTag(request: SipRequest): string {
  const { headers } = request;
  return createHash("sha1")
    .update(
      `${headers.callId ?? ""}\n${headers.from?.tag ?? ""}\n${headers.get("CSeq") ?? ""}\n${headers.via?.branch ?? ""}`,
    )
    .digest("hex")
    .slice(0, 12);
}
