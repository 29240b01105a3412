/**
 * The telephony service: Bridgeline's SIP user agent and RTP media on one address, placing calls
 * through the configured trunks and taking the calls that reach it. This is the API the layers above
 * use; it knows calls and numbers, not conferences.
 */
import { BlockList, isIPv6 } from "node:net";
import { networkInterfaces } from "node:os";
import { normalizeNanpNumber } from "../domain/phone.js";
import { Call, type CallHost, IncomingCall, OutgoingCall, type SrtpPolicy } from "./call.js";
import { type MediaMix, MediaPlane, type MediaStream } from "./media/plane/media-plane.js";
import { SRTP_SUITES, type SrtpSuite } from "./media/rtp/srtp.js";
import { destinationOf, newCallId, newTag } from "./sip/dialog/dialog.js";
import { parseNameAddr, parseSipUri } from "./sip/message/header-values.js";
import { ServerLocator } from "./sip/transport/server-locator.js";
import { type Destination, type SipTlsOptions, SipTransport } from "./sip/transport/sip-transport.js";
import type { IncomingInviteSession } from "./sip/user-agent/invite-session.js";
import { Registration } from "./sip/user-agent/registration.js";
import type { SessionTimerSettings } from "./sip/user-agent/session-timer.js";
import { UserAgent } from "./sip/user-agent/user-agent.js";

/** Where log lines go; pino's logger fits. */
export interface TelephonyLogger {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
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
  /** Media threads (RTP, mixing, playback, recording); 0, the default, keeps the media on this thread. */
  readonly mediaThreads?: number;
  /** DNS servers for locating trunks (RFC 3263), `address` or `address:port`; default the system's. */
  readonly dnsServers?: readonly string[] | null;
  /**
   * How long a trunk server may leave an INVITE unanswered before the next one found in DNS is tried
   * (default 4000), and how long one that failed is tried last (default 60000).
   */
  readonly serverTimeoutMs?: number;
  readonly serverDownMs?: number;
  /**
   * Registration (RFC 3261 section 10) for a trunk that reaches us only by it: REGISTER to
   * `registrar` (a SIP URI) as `trunkUser` with `trunkPassword`, for `expires` seconds, kept up
   * until close.
   */
  readonly registration?: { readonly registrar: string; readonly expires: number } | null;
  /** Session timers (RFC 4028), in seconds: the interval asked for and the smallest taken (1800, 90). */
  readonly sessionTimer?: SessionTimerSettings;
  /** Lets a mix be made to fail on purpose (tests of fault isolation). */
  readonly allowMediaFaultInjection?: boolean;
  /** SIP over TLS: a listener with this certificate (calls out over TLS need none). */
  readonly tls?: SipTlsOptions;
  /** What peers' TLS certificates must chain to (PEM); default the system's CAs. */
  readonly tlsCa?: string | Buffer;
  /**
   * Addresses and CIDRs (IPv4 or IPv6) requests may come from; default the trunk's and routes'
   * addresses, or anyone when neither is configured.
   */
  readonly trustedSources?: readonly string[] | null;
  /** What a request from anywhere else gets: 403 ("refuse", the default) or nothing ("drop"). */
  readonly untrustedRequests?: "refuse" | "drop";
  /**
   * SRTP for placed calls (a trunk or route's `;srtp=` parameter overrides it) and for calls taken;
   * default optional. Keys travel only in SIP over TLS unless `keysOverPlainSignalling`: without
   * TLS, optional means off and required refuses the call.
   */
  readonly srtp?: {
    readonly placed: SrtpPolicy;
    readonly dialIn: SrtpPolicy;
    readonly keysOverPlainSignalling: boolean;
    /** The suites offered and accepted, preferred first (default both, _80 first). */
    readonly suites?: readonly SrtpSuite[];
  };
  readonly logger?: TelephonyLogger;
}

export interface PlaceCallOptions {
  readonly callerId?: string;
  readonly ringTimeoutMs?: number;
  /** The mix the call will join: its media opens on the same thread. */
  readonly room?: MediaMix;
}

const DEFAULT_RING_TIMEOUT_MS = 45_000;
const DEFAULT_SERVER_TIMEOUT_MS = 4000;
const DEFAULT_MEDIA_TIMEOUT_MS = 30_000;

export class Telephony implements CallHost {
  readonly #transport: SipTransport;
  readonly #agent: UserAgent;
  readonly #options: TelephonyOptions;
  readonly #media: MediaPlane;
  readonly #calls = new Set<Call>();
  readonly #locator: ServerLocator;
  #registration: Registration | undefined;
  #onIncomingCall: ((call: IncomingCall) => void) | undefined;
  #closing: Promise<void> | undefined;

  private constructor(
    transport: SipTransport,
    agent: UserAgent,
    locator: ServerLocator,
    options: TelephonyOptions,
  ) {
    this.#transport = transport;
    this.#locator = locator;
    this.#agent = agent;
    this.#options = options;
    this.#media = new MediaPlane({
      threads: options.mediaThreads ?? 0,
      bindAddress: options.bindAddress,
      rtpPorts: options.rtpPorts ?? { min: 10_000, max: 20_000 },
      mediaTimeoutMs: options.mediaTimeoutMs ?? DEFAULT_MEDIA_TIMEOUT_MS,
      allowFaultInjection: options.allowMediaFaultInjection,
      logger: options.logger,
    });
    agent.onInvite((session) => this.#receiveInvite(session));
  }

  static async start(options: TelephonyOptions): Promise<Telephony> {
    let agent: UserAgent | undefined;
    const logger = options.logger;
    const locator = new ServerLocator({
      servers: options.dnsServers ?? undefined,
      downForMs: options.serverDownMs,
    });
    const trusted = await trustedSources(options, locator);
    if (trusted === undefined)
      logger?.warn({}, "SIP requests are taken from anywhere: no trunk and no BRIDGELINE_SIP_TRUSTED");
    const transport = await SipTransport.listen({
      bindAddress: options.bindAddress,
      port: options.sipPort,
      publicAddress: options.publicAddress ?? advertisedAddress(options.bindAddress),
      tls: options.tls,
      tlsCa: options.tlsCa,
      onMessage: (message, source) => agent?.receive(message, source),
      onDrop: (reason, source) => logger?.debug({ source }, `SIP message dropped: ${reason}`),
    });
    agent = new UserAgent(transport, {
      sessionTimer: options.sessionTimer,
      onDrop: (reason) => logger?.debug({}, `SIP: ${reason}`),
      trusted:
        trusted === undefined
          ? undefined
          : { sources: trusted, others: options.untrustedRequests ?? "refuse" },
      onUntrusted: (source, method) =>
        logger?.info(
          { source: `${source.address}:${source.port}`, method },
          `SIP request from an untrusted source ${options.untrustedRequests === "drop" ? "dropped" : "refused"}`,
        ),
    });
    const telephony = new Telephony(transport, agent, locator, options);
    telephony.#register();
    return telephony;
  }

  /**
   * Starts the registration, when one is configured; its outcomes go to the log. The registrar is
   * looked up for each REGISTER, so that a lookup that fails is retried like any other failure.
   */
  #register(): void {
    const settings = this.#options.registration;
    const user = this.#options.trunkUser;
    if (settings === undefined || settings === null) return;
    if (user === undefined || user === null) throw new Error("registration needs the trunk's user name");
    const registrar = parseSipUri(settings.registrar);
    if (registrar === undefined) throw new Error(`not a SIP URI: ${settings.registrar}`);
    const password = this.#options.trunkPassword;
    const logger = this.#options.logger;
    this.#registration = new Registration(this.#agent, {
      registrar: `${registrar.scheme}:${registrar.host}${registrar.port === undefined ? "" : `:${registrar.port}`}`,
      locate: async () => {
        const [server] = await locateTrunk(this.#locator, settings.registrar);
        if (server === undefined) throw new Error(`no address found for ${settings.registrar}`);
        return server;
      },
      aor: `${registrar.scheme}:${user}@${registrar.host}`,
      credentials: password === undefined || password === null ? undefined : { username: user, password },
      expires: settings.expires,
      callId: newCallId(this.#transport.sentBy.host),
      tag: newTag(),
      onState: (state, detail) =>
        state === "failed"
          ? logger?.warn({ registrar: settings.registrar }, `registration failed: ${detail}`)
          : logger?.info({ registrar: settings.registrar }, `registration ${state} ${detail}`),
    });
    this.#registration.start();
  }

  get sipPort(): number {
    return this.#transport.port;
  }

  /** The SIP over TLS port; undefined without a TLS listener. */
  get sipTlsPort(): number | undefined {
    return this.#transport.tlsPort;
  }

  get srtpSuites(): readonly SrtpSuite[] {
    return this.#options.srtp?.suites ?? SRTP_SUITES;
  }

  get mediaAddress(): string {
    return this.#transport.sentBy.host;
  }

  get logger(): TelephonyLogger | undefined {
    return this.#options.logger;
  }

  /** The media threads, their figures and their calls' streams. */
  get media(): MediaPlane {
    return this.#media;
  }

  /** A new mix for a room, on the least loaded media thread. */
  openRoom(): MediaMix {
    return this.#media.openMix();
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
    const trunk = nanp === null ? undefined : this.#trunkFor(e164);
    const trunkUri = trunk === undefined ? undefined : parseSipUri(trunk);
    const destination = trunk === undefined ? undefined : destinationOf(trunk);
    const asked = trunkUri?.params.get("srtp") ?? this.#options.srtp?.placed ?? "optional";
    const srtp = this.#srtpOver(
      destination?.transport ?? "UDP",
      asked === "off" || asked === "required" ? asked : "optional",
    );
    const call = new OutgoingCall(this, "outbound", e164, srtp === "refuse" ? "off" : srtp);
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
    if (trunkUri === undefined || destination === undefined) {
      failLater(503, "No trunk configured");
      return call;
    }
    if (srtp === "refuse") {
      failLater(488, "SRTP is required but the trunk is not SIP over TLS: keys would travel in plain text");
      return call;
    }
    const port = trunkUri.port === undefined ? "" : `:${trunkUri.port}`;
    // The trunk's scheme and transport carry over: a sips: or TLS trunk is called over TLS only.
    const scheme = trunkUri.scheme === "sips" ? "sips" : "sip";
    const transport =
      destination.transport === "UDP" || scheme === "sips"
        ? ""
        : `;transport=${destination.transport.toLowerCase()}`;
    const requestUri = `${scheme}:${e164}@${trunkUri.host}${port}${transport}`;
    const user = this.#options.trunkUser;
    const password = this.#options.trunkPassword;
    const credentials =
      user !== undefined && user !== null && password !== undefined && password !== null
        ? { username: user, password }
        : undefined;
    void locateTrunk(this.#locator, trunk as string).then(
      ([first, ...next]) =>
        call.start(
          (offer) =>
            this.#agent.call({
              requestUri,
              from: { user: options.callerId ?? this.#options.callerId ?? "bridgeline" },
              destination: first as Destination,
              offer,
              credentials,
              failover: {
                next,
                targetTimeoutMs: this.#options.serverTimeoutMs ?? DEFAULT_SERVER_TIMEOUT_MS,
                onTargetFailed: (target, reason) => {
                  this.#locator.markDown(target);
                  this.#options.logger?.warn(
                    { trunk, server: `${target.transport} ${target.host}:${target.port}`, reason },
                    "a trunk server failed: trying the next, and this one last for a while",
                  );
                },
              },
            }),
          options.ringTimeoutMs ?? this.#options.ringTimeoutMs ?? DEFAULT_RING_TIMEOUT_MS,
          options.room,
        ),
      (error: unknown) => failLater(503, `Service Unavailable: ${(error as Error).message}`),
    );
    return call;
  }

  /**
   * Calls a SIP URI directly rather than a number through a trunk (another instance of this service),
   * with `headers` added to the INVITE. Its media opens next to `nextTo`'s, so the two can be relayed.
   */
  callUri(
    uri: string,
    options: {
      readonly headers?: readonly (readonly [string, string])[];
      /** A call of this service's (anything else is ignored). */
      readonly nextTo?: object;
      readonly ringTimeoutMs?: number;
    } = {},
  ): OutgoingCall {
    const call = new OutgoingCall(this, "outbound", uri);
    this.#calls.add(call);
    const destination = destinationOf(uri);
    if (destination === undefined) {
      queueMicrotask(() => call.notPlaced(416, "Unsupported URI Scheme"));
      return call;
    }
    void call.start(
      (offer) =>
        this.#agent.call({
          requestUri: uri,
          from: { user: this.#options.callerId ?? "bridgeline" },
          destination,
          offer,
          headers: options.headers,
        }),
      options.ringTimeoutMs ?? this.#options.ringTimeoutMs ?? DEFAULT_RING_TIMEOUT_MS,
      options.nextTo instanceof Call ? options.nextTo.mediaStream : undefined,
    );
    return call;
  }

  /** This instance's own SIP address, for other instances to call it. */
  get sipUri(): string {
    const { host } = this.#transport.sentBy;
    return `sip:${host.includes(":") ? `[${host}]` : host}:${this.#transport.port}`;
  }

  /** Hangs up every call, then closes the sockets. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      for (const call of [...this.#calls]) call.hangup();
      // Let the BYEs and CANCELs leave before the socket closes.
      await new Promise((resolve) => setTimeout(resolve, 50));
      await this.#registration?.stop();
      this.#locator.close();
      await Promise.all([this.#transport.close(), this.#media.close()]);
    })();
    return this.#closing;
  }

  // CallHost

  openMedia(near?: MediaMix | MediaStream): Promise<MediaStream> {
    return this.#media.openStream(near);
  }

  callFinished(call: Call): void {
    this.#calls.delete(call);
  }

  /** The SRTP a call gets over a transport: keys go only over TLS unless allowed otherwise. */
  #srtpOver(transport: "UDP" | "TCP" | "TLS", policy: SrtpPolicy): SrtpPolicy | "refuse" {
    if (policy === "off" || transport === "TLS" || this.#options.srtp?.keysOverPlainSignalling) return policy;
    return policy === "required" ? "refuse" : "off";
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
    // A trunk that reaches us by registration sends the number called in To, and our Contact as the
    // Request-URI: the number is whichever of the two is one.
    const requestUser = parseSipUri(invite.uri)?.user ?? "";
    const toHeaderUser = parseSipUri(parseNameAddr(invite.headers.get("To") ?? "")?.uri ?? "")?.user ?? "";
    const toUser =
      normalizeNanpNumber(requestUser) === null && normalizeNanpNumber(toHeaderUser) !== null
        ? toHeaderUser
        : requestUser;
    if (handler === undefined) {
      session.reject(404, "Not Found");
      return;
    }
    // Keys go back only over the transport the INVITE truly came on (a Via can claim TLS over UDP).
    const srtp = this.#srtpOver(session.transport, this.#options.srtp?.dialIn ?? "optional");
    if (srtp === "refuse") {
      session.reject(488, "Not Acceptable Here");
      this.#options.logger?.info(
        { from: fromUser, to: toUser },
        "call refused: SRTP is required, and needs SIP over TLS",
      );
      return;
    }
    // The handler decides first (a number not served is 404 whatever the offer); accept() refuses
    // an offer without a common codec (or, with SRTP required, without a key) with 488.
    const call = new IncomingCall(this, session, fromUser, toUser, srtp);
    this.#calls.add(call);
    this.#options.logger?.info({ from: fromUser, to: toUser }, "incoming call");
    handler(call);
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

/**
 * The sources requests are taken from: those configured, else the trunk's and routes' hosts (looked
 * up once, at start); undefined (anyone) when there are neither.
 */
/**
 * The servers a trunk URI names, in the order to try them (RFC 3263): itself when it is an address
 * or has `maddr`, else what DNS says.
 */
async function locateTrunk(locator: ServerLocator, trunk: string): Promise<Destination[]> {
  const uri = parseSipUri(trunk);
  const destination = destinationOf(trunk);
  if (uri === undefined || destination === undefined) throw new Error(`not a SIP URI: ${trunk}`);
  if (uri.params.has("maddr")) return [destination];
  const transport = uri.params.get("transport")?.toUpperCase();
  return locator.locate({
    host: destination.host,
    port: uri.port,
    transport: transport === "UDP" || transport === "TCP" || transport === "TLS" ? transport : undefined,
    secure: uri.scheme === "sips",
  });
}

async function trustedSources(
  options: TelephonyOptions,
  locator: ServerLocator,
): Promise<BlockList | undefined> {
  let entries = options.trustedSources ?? undefined;
  if (entries === undefined) {
    const trunks = [options.trunk, ...(options.routes ?? []).map((route) => route.trunk)].flatMap((trunk) =>
      trunk === null || trunk === undefined ? [] : [trunk],
    );
    if (trunks.length === 0) return undefined;
    // Every server DNS names for each trunk (RFC 3263), or its address.
    entries = (
      await Promise.all(
        trunks.map(async (trunk) => {
          const host = destinationOf(trunk)?.host ?? "";
          try {
            return (await locateTrunk(locator, trunk)).map((server) => server.host);
          } catch (error) {
            options.logger?.warn(
              { host, err: error },
              "a trunk's host could not be looked up: requests from it are not trusted (set BRIDGELINE_SIP_TRUSTED)",
            );
            return [];
          }
        }),
      )
    ).flat();
  }
  const list = new BlockList();
  for (const entry of entries) {
    const [address = "", prefix] = entry.split("/");
    const family = isIPv6(address) ? "ipv6" : "ipv4";
    if (prefix === undefined) list.addAddress(address, family);
    else list.addSubnet(address, Number(prefix), family);
  }
  return list;
}
