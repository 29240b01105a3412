/**
 * A SIP dialog (RFC 3261 section 12): the peer-to-peer relationship an INVITE sets up, with its
 * identifier, sequence numbers, remote target and route set. It builds the requests sent within it
 * and checks the ones received.
 */
import { randomBytes } from "node:crypto";
import { parseNameAddr, parseSipUri, type SipUri } from "../message/header-values.js";
import { SIP_VERSION, SipHeaders, type SipRequest, type SipResponse } from "../message/sip-message.js";
import type { Destination, TransportName } from "../transport/sip-transport.js";
import { DEFAULT_SIP_PORT, DEFAULT_SIPS_PORT, normalizeHost } from "../transport/via.js";

export function newTag(): string {
  return randomBytes(6).toString("hex");
}

export function newCallId(host: string): string {
  return `${randomBytes(12).toString("hex")}@${host}`;
}

/** The URI inside a Route or Record-Route value. */
function uriOf(value: string): string | undefined {
  return parseNameAddr(value)?.uri;
}

/** The dialog identifier as seen from this side: Call-ID, local tag, remote tag (section 12). */
export function dialogId(callId: string, localTag: string, remoteTag: string): string {
  return `${callId}|${localTag}|${remoteTag}`;
}

/**
 * Where a request to the URI goes (RFC 3263 reduced to what a trunk needs: a numeric or resolvable
 * host, the URI's port or 5060, its transport parameter or UDP).
 */
export function destinationOf(uri: string): Destination | undefined {
  const parsed = parseSipUri(uri);
  return parsed === undefined ? undefined : destinationOfUri(parsed);
}

/** destinationOf for a URI already parsed. */
export function destinationOfUri(parsed: SipUri): Destination | undefined {
  if (parsed.scheme === "tel") return undefined;
  const maddr = parsed.params.get("maddr");
  const transportParam = parsed.params.get("transport")?.toUpperCase();
  // A sips: URI, or transport=tls, is TLS all the way (RFC 3261 section 26.2.1; RFC 5630): never
  // anything in plain text.
  const transport: TransportName =
    parsed.scheme === "sips" || transportParam === "TLS" ? "TLS" : transportParam === "TCP" ? "TCP" : "UDP";
  return {
    host: normalizeHost(maddr ?? parsed.host),
    port: parsed.port ?? (transport === "TLS" ? DEFAULT_SIPS_PORT : DEFAULT_SIP_PORT),
    transport,
  };
}

export interface DialogRequestOptions {
  /** Our Via sent-by and transport, written with a fresh branch. */
  readonly via: string;
  readonly contact: string;
  readonly headers?: Iterable<readonly [string, string]>;
  readonly body?: Buffer;
  readonly contentType?: string;
}

export class Dialog {
  /** Our CSeq for the last request we sent in the dialog. */
  private localSeq: number;
  /** The peer's last CSeq; undefined until it sends a request (section 12.1.2). */
  private remoteSeq: number | undefined;
  /** Where in-dialog requests go: the peer's Contact, refreshed by target-refresh requests. */
  private remoteTarget: string;

  private constructor(
    readonly callId: string,
    readonly localTag: string,
    readonly remoteTag: string,
    /** From of our requests, as on the dialog-creating request. */
    private readonly localParty: string,
    /** To of our requests. */
    private readonly remoteParty: string,
    /** Route values in the order our requests carry them (section 12.1.1, 12.1.2). */
    private routeSet: readonly string[],
    remoteTarget: string,
    localSeq: number,
    remoteSeq: number | undefined,
  ) {
    this.remoteTarget = remoteTarget;
    this.localSeq = localSeq;
    this.remoteSeq = remoteSeq;
  }

  /**
   * Section 12.1.2, the UAC side: from our INVITE and a 2xx or 101-199 response with a To tag. The route
   * set is the response's Record-Route in reverse order; the remote target its Contact.
   */
  static forUac(invite: SipRequest, response: SipResponse): Dialog | undefined {
    const remoteTag = response.headers.to?.tag;
    const localTag = invite.headers.from?.tag;
    const callId = invite.headers.callId;
    const target = response.headers.contact?.uri;
    const cseq = invite.headers.cseq;
    if (remoteTag === undefined || localTag === undefined || callId === undefined || cseq === undefined) {
      return undefined;
    }
    const routeSet = response.headers.getAll("Record-Route").reverse();
    const to = response.headers.get("To") ?? "";
    return new Dialog(
      callId,
      localTag,
      remoteTag,
      invite.headers.get("From") ?? "",
      to,
      routeSet,
      target ?? invite.uri,
      cseq.seq,
      undefined,
    );
  }

  /**
   * Section 12.1.1, the UAS side: from a received INVITE and the tag we put in our To. The route set is
   * the request's Record-Route in order; the remote target its Contact. Given where the INVITE came
   * from (`source`), a caller behind NAT (its Contact names another address or port than the one its
   * packets come from, and no proxy record-routes) is sent its in-dialog requests back to that
   * source, as symmetric signalling does (RFC 3581's idea for requests).
   */
  static forUas(invite: SipRequest, localTag: string, source?: Destination): Dialog | undefined {
    const remoteTag = invite.headers.from?.tag;
    const callId = invite.headers.callId;
    const target = invite.headers.contact?.uri;
    const cseq = invite.headers.cseq;
    const from = invite.headers.get("From");
    const to = invite.headers.get("To");
    if (
      remoteTag === undefined ||
      callId === undefined ||
      target === undefined ||
      cseq === undefined ||
      from === undefined ||
      to === undefined
    ) {
      return undefined;
    }
    const localParty = invite.headers.to?.tag === undefined ? `${to};tag=${localTag}` : to;
    const routeSet = invite.headers.getAll("Record-Route");
    const contactDestination = destinationOf(target);
    const behindNat =
      source !== undefined &&
      routeSet.length === 0 &&
      (contactDestination === undefined ||
        normalizeHost(contactDestination.host) !== normalizeHost(source.host) ||
        contactDestination.port !== source.port);
    const dialog = new Dialog(callId, localTag, remoteTag, localParty, from, routeSet, target, 0, cseq.seq);
    if (behindNat) dialog.#flow = source;
    return dialog;
  }

  /** Where a caller behind NAT is reached: where its INVITE came from. */
  #flow: Destination | undefined;

  get id(): string {
    return dialogId(this.callId, this.localTag, this.remoteTag);
  }

  /** Section 12.2.1.1: the next hop is the first route (loose routing) or else the remote target. */
  get destination(): Destination | undefined {
    if (this.#flow !== undefined) return this.#flow;
    const firstRoute = this.routeSet[0];
    const next = firstRoute === undefined ? this.remoteTarget : uriOf(firstRoute);
    return next === undefined ? undefined : destinationOf(next);
  }

  /**
   * Section 12.2.2: a request within the dialog. False when its CSeq is lower than the last one, to be
   * answered 500; a target refresh (re-INVITE) with a Contact updates the remote target.
   */
  receiveRequest(request: SipRequest): boolean {
    const cseq = request.headers.cseq;
    if (cseq === undefined) return false;
    if (request.method !== "ACK" && request.method !== "CANCEL") {
      if (this.remoteSeq !== undefined && cseq.seq <= this.remoteSeq) return false;
      this.remoteSeq = cseq.seq;
    }
    if (request.method === "INVITE") {
      const target = request.headers.contact?.uri;
      if (target !== undefined) this.remoteTarget = target;
    }
    return true;
  }

  /**
   * Section 13.2.2.4, the UAC side: the 2xx that confirms this early dialog recomputes its route set
   * (the 2xx's Record-Route, reversed) and its remote target (the 2xx's Contact); the CSeq count, and
   * so the PRACKs sent in it, go on.
   */
  confirmWith(response: SipResponse): void {
    this.routeSet = response.headers.getAll("Record-Route").reverse();
    this.receiveTargetRefreshResponse(response);
  }

  /** A 2xx to our re-INVITE refreshes the remote target too (section 12.2.1.2). */
  receiveTargetRefreshResponse(response: SipResponse): void {
    const target = response.headers.contact?.uri;
    if (target !== undefined) this.remoteTarget = target;
  }

  /**
   * Section 12.2.1.1: a request within the dialog. Request-URI is the remote target and the route set
   * becomes Route (loose routing; a strict first route is put last as the RFC describes). CSeq increments,
   * except for ACK, which reuses the INVITE's number (given as `cseq`).
   */
  createRequest(method: string, options: DialogRequestOptions & { cseq?: number }): SipRequest {
    let uri = this.remoteTarget;
    let routes = this.routeSet;
    const first = routes[0];
    const firstUri = first === undefined ? undefined : uriOf(first);
    if (firstUri !== undefined && parseSipUri(firstUri)?.params.has("lr") === false) {
      uri = firstUri;
      routes = [...routes.slice(1), `<${this.remoteTarget}>`];
    }
    let seq = options.cseq;
    if (seq === undefined) {
      this.localSeq += 1;
      seq = this.localSeq;
    }
    const headers = new SipHeaders();
    headers.append("Via", options.via);
    for (const route of routes) headers.append("Route", route);
    headers.append("Max-Forwards", "70");
    headers.append("From", this.localParty);
    headers.append("To", this.remoteParty);
    headers.append("Call-ID", this.callId);
    headers.append("CSeq", `${seq} ${method}`);
    if (method !== "ACK" && method !== "BYE" && method !== "CANCEL")
      headers.append("Contact", options.contact);
    for (const [name, value] of options.headers ?? []) headers.append(name, value);
    const body = options.body ?? Buffer.alloc(0);
    if (body.length > 0) headers.append("Content-Type", options.contentType ?? "application/sdp");
    headers.append("Content-Length", String(body.length));
    return { kind: "request", method, uri, version: SIP_VERSION, headers, body };
  }
}
