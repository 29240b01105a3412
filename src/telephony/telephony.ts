/**
 * The telephony service: Bridgeline's SIP user agent and RTP media on one address, placing calls
 * through the configured trunks and taking the calls that reach it. This is the API the layers above
 * use; it knows calls and numbers, not conferences.
 */
import { networkInterfaces } from "node:os";
import { normalizeNanpNumber } from "../domain/phone.js";
import { type Call, type CallHost, IncomingCall, OutgoingCall } from "./call.js";
import { RtpPortAllocator } from "./media/rtp/port-allocator.js";
import { RtpSession } from "./media/rtp/rtp-session.js";
import { destinationOf } from "./sip/dialog/dialog.js";
import { parseNameAddr, parseSipUri } from "./sip/message/header-values.js";
import { SipTransport } from "./sip/transport/sip-transport.js";
import type { IncomingInviteSession } from "./sip/user-agent/invite-session.js";
import { UserAgent } from "./sip/user-agent/user-agent.js";

/** Where log lines go; pino's logger fits. */
export interface TelephonyLogger {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  debug(fields: object, message: string): void;
}

export interface TelephonyOptions {
  /** Address the SIP and RTP sockets bind to. */
  readonly bindAddress: string;
  /** SIP port for UDP and TCP; 0 picks a free one. */
  readonly sipPort: number;
  /** Address written into Via, Contact and SDP (NAT); default the bind address. */
  readonly publicAddress?: string | null;
  /** The default trunk's SIP URI. */
  readonly trunk?: string | null;
  readonly trunkUser?: string | null;
  readonly trunkPassword?: string | null;
  readonly callerId?: string;
  /** Dial plan: number prefix to trunk URI; the longest matching prefix wins. */
  readonly routes?: readonly { readonly prefix: string; readonly trunk: string }[];
  readonly rtpPorts?: { readonly min: number; readonly max: number };
  readonly ringTimeoutMs?: number;
  /** An answered call with no RTP for this long is hung up (not while held). */
  readonly mediaTimeoutMs?: number;
  readonly logger?: TelephonyLogger;
}

export interface PlaceCallOptions {
  readonly callerId?: string;
  readonly ringTimeoutMs?: number;
}

const DEFAULT_RING_TIMEOUT_MS = 45_000;
const DEFAULT_MEDIA_TIMEOUT_MS = 30_000;
const MEDIA_CHECK_INTERVAL_MS = 1_000;

export class Telephony implements CallHost {
  readonly #transport: SipTransport;
  readonly #agent: UserAgent;
  readonly #options: TelephonyOptions;
  readonly #allocator: RtpPortAllocator;
  readonly #calls = new Set<Call>();
  readonly #mediaCheck: NodeJS.Timeout;
  #onIncomingCall: ((call: IncomingCall) => void) | undefined;
  #closing: Promise<void> | undefined;

  private constructor(transport: SipTransport, agent: UserAgent, options: TelephonyOptions) {
    this.#transport = transport;
    this.#agent = agent;
    this.#options = options;
    const ports = options.rtpPorts ?? { min: 10_000, max: 20_000 };
    this.#allocator = new RtpPortAllocator(ports.min, ports.max);
    agent.onInvite((session) => this.#receiveInvite(session));
    this.#mediaCheck = setInterval(() => this.#checkMedia(), MEDIA_CHECK_INTERVAL_MS);
    this.#mediaCheck.unref();
  }

  static async start(options: TelephonyOptions): Promise<Telephony> {
    let agent: UserAgent | undefined;
    const logger = options.logger;
    const transport = await SipTransport.listen({
      bindAddress: options.bindAddress,
      port: options.sipPort,
      publicAddress: options.publicAddress ?? advertisedAddress(options.bindAddress),
      onMessage: (message, source) => agent?.receive(message, source),
      onDrop: (reason, source) => logger?.debug({ source }, `SIP message dropped: ${reason}`),
    });
    agent = new UserAgent(transport, {
      onDrop: (reason) => logger?.debug({}, `SIP: ${reason}`),
    });
    return new Telephony(transport, agent, options);
  }

  get sipPort(): number {
    return this.#transport.port;
  }

  get mediaAddress(): string {
    return this.#transport.sentBy.host;
  }

  /** Calls in progress (placed or taken, not yet failed or ended). */
  get activeCalls(): number {
    return this.#calls.size;
  }

  /** Who takes INVITEs; without a handler they are refused 404 (no one here answers any number). */
  onIncomingCall(handler: (call: IncomingCall) => void): void {
    this.#onIncomingCall = handler;
  }

  /**
   * Calls a number through the trunk its prefix routes to. The number may be written any common way;
   * it goes out as +1NPANXXXXXX. Failures (bad number 484, no trunk 503) arrive as the call's
   * "failed" event, like any other.
   */
  placeCall(number: string, options: PlaceCallOptions = {}): OutgoingCall {
    const nanp = normalizeNanpNumber(number);
    const e164 = nanp === null ? number : `+1${nanp.subscriberNumber}`;
    const call = new OutgoingCall(this, "outbound", e164);
    this.#calls.add(call);
    const failLater = (status: number, reason: string) =>
      queueMicrotask(() => {
        this.#options.logger?.warn({ number, status }, `call not placed: ${reason}`);
        call.notPlaced(status, reason);
      });
    if (nanp === null) {
      failLater(484, "Address Incomplete");
      return call;
    }
    const trunk = this.#trunkFor(e164);
    const trunkUri = trunk === undefined ? undefined : parseSipUri(trunk);
    const destination = trunk === undefined ? undefined : destinationOf(trunk);
    if (trunkUri === undefined || destination === undefined) {
      failLater(503, "No trunk configured");
      return call;
    }
    const port = trunkUri.port === undefined ? "" : `:${trunkUri.port}`;
    const transport = destination.transport === "TCP" ? ";transport=tcp" : "";
    const requestUri = `sip:${e164}@${trunkUri.host}${port}${transport}`;
    const user = this.#options.trunkUser;
    const password = this.#options.trunkPassword;
    const credentials =
      user !== undefined && user !== null && password !== undefined && password !== null
        ? { username: user, password }
        : undefined;
    void call.start(
      (offer) =>
        this.#agent.call({
          requestUri,
          fromUser: options.callerId ?? this.#options.callerId ?? "bridgeline",
          destination,
          offer,
          credentials,
        }),
      options.ringTimeoutMs ?? this.#options.ringTimeoutMs ?? DEFAULT_RING_TIMEOUT_MS,
    );
    return call;
  }

  /** Hangs up every call, then closes the sockets. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      clearInterval(this.#mediaCheck);
      for (const call of [...this.#calls]) call.hangup();
      // Let the BYEs and CANCELs leave before the socket closes.
      await new Promise((resolve) => setTimeout(resolve, 50));
      await this.#transport.close();
    })();
    return this.#closing;
  }

  // CallHost

  openMedia(): Promise<RtpSession> {
    return RtpSession.open({ allocator: this.#allocator, bindAddress: this.#options.bindAddress });
  }

  callFinished(call: Call): void {
    this.#calls.delete(call);
  }

  #trunkFor(e164: string): string | undefined {
    let best: { prefix: string; trunk: string } | undefined;
    for (const route of this.#options.routes ?? []) {
      if (e164.startsWith(route.prefix) && (best === undefined || route.prefix.length > best.prefix.length)) {
        best = route;
      }
    }
    return best?.trunk ?? this.#options.trunk ?? undefined;
  }

  #receiveInvite(session: IncomingInviteSession): void {
    const handler = this.#onIncomingCall;
    const invite = session.invite;
    const from = parseNameAddr(invite.headers.get("From") ?? "");
    const fromUser = (from === undefined ? undefined : parseSipUri(from.uri)?.user) ?? "anonymous";
    const toUser = parseSipUri(invite.uri)?.user ?? "";
    if (handler === undefined) {
      session.reject(404, "Not Found");
      return;
    }
    // The handler decides first (a number not served is 404 whatever the offer); accept() refuses
    // an offer without a common codec with 488.
    const call = new IncomingCall(this, session, fromUser, toUser);
    this.#calls.add(call);
    this.#options.logger?.info({ from: fromUser, to: toUser }, "incoming call");
    handler(call);
  }

  #checkMedia(): void {
    const limit = this.#options.mediaTimeoutMs ?? DEFAULT_MEDIA_TIMEOUT_MS;
    const now = performance.now();
    for (const call of this.#calls) {
      if (call.state !== "answered" || call.held) continue;
      const last = call.lastMediaAt ?? call.answeredAt;
      if (last !== null && now - last > limit) {
        this.#options.logger?.warn({ number: call.remoteNumber }, "call ended: no media");
        call.endForMediaTimeout();
      }
    }
  }
}

/**
 * The address peers can reach us at when none is configured: the bound one, or, bound to every
 * interface, the first external IPv4 address (0.0.0.0 in a Via, Contact or c= line reaches nobody).
 */
function advertisedAddress(bindAddress: string): string | undefined {
  if (bindAddress !== "0.0.0.0" && bindAddress !== "::") return undefined;
  for (const addresses of Object.values(networkInterfaces())) {
    const external = addresses?.find((address) => address.family === "IPv4" && !address.internal);
    if (external !== undefined) return external.address;
  }
  return "127.0.0.1";
}
