// Long because it is the one surface the layers above call: the options, each documented, and the call API.
/**
 * The telephony service: Bridgeline's SIP user agent and RTP media on one address, placing calls
 * through the configured trunks and taking the calls that reach it. This is the API the layers above
 * use; it knows calls and numbers, not conferences. Beside it: the dial plan (dial-plan.ts), what an
 * INVITE through a trunk carries (trunk-request.ts) and whom requests are taken from
 * (trusted-sources.ts).
 */
import { isIP, isIPv6 } from "node:net";
import { networkInterfaces } from "node:os";
import { systemClock } from "../clock.js";
import type { Clock } from "../domain/clock.js";
import { normalizeNanpNumber } from "../domain/phone.js";
import {
  type AttemptFailure,
  BrowserCall,
  Call,
  type CallAttempt,
  type CallHost,
  type CallMediaOptions,
  type CallOrigin,
  IncomingCall,
  OutgoingCall,
} from "./call.js";
import { type Attempts, failsOverTrunk, MAX_TRUNKS_PER_CALL, redirectOf } from "./call-attempts.js";
import {
  type DialPlan,
  dialPlanOf,
  type Hop,
  hopOf,
  locateTrunk,
  type TrunkHops,
  trunkCandidates,
  trunkServers,
} from "./dial-plan.js";
import { MediaError } from "./media/media-error.js";
import { type MediaMix, MediaPlane, type MediaStream } from "./media/plane/media-plane.js";
import { DEFAULT_SRTP_SUITES, type SrtpPolicy, type SrtpSuite } from "./media/rtp/srtp-suites.js";
import { type AudioCodec, WIDEBAND_AUDIO_CODECS } from "./sdp/session-description.js";
import { destinationOf, newCallId, newTag } from "./sip/dialog/dialog.js";
import { listItemEnd, parseNameAddr, parseSipUri } from "./sip/message/header-values.js";
import { SipHeaders, type SipRequest } from "./sip/message/sip-message.js";
import { ServerLocator } from "./sip/transport/server-locator.js";
import {
  type Destination,
  type SipTlsOptions,
  SipTransport,
  type TlsCertificate,
  type TransportStats,
} from "./sip/transport/sip-transport.js";
import { sourceOf } from "./sip/transport/source-address.js";
import type { IncomingInviteSession } from "./sip/user-agent/incoming-invite-session.js";
import { Registration } from "./sip/user-agent/registration.js";
import type { SessionTimerSettings } from "./sip/user-agent/session-timer.js";
import { UserAgent } from "./sip/user-agent/user-agent.js";
import { CallerVerifier, type StirShakenOptions, VERIFICATION_NOT_CONFIGURED } from "./stir-shaken.js";
import type { Trunk } from "./trunk.js";
import { uriUser } from "./trunk.js";
import { TrunkPacing, type TrunkPacingStats, type Turn } from "./trunk-pacing.js";
import {
  DEFAULT_PROBE_SETTINGS,
  type ProbeAnswer,
  type ProbeSettings,
  probeSettingsOf,
  type TrunkHealth,
  type TrunkProbeObserver,
  TrunkProbes,
} from "./trunk-probe.js";
import {
  ANONYMOUS,
  looseRoute,
  trunkAssertedIdentity,
  trunkCaller,
  trunkHeaders,
  trunkRequestUri,
  withholdsIdentity,
} from "./trunk-request.js";
import { blockListOf, mutualTlsPeers, TrustedSources } from "./trusted-sources.js";

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
  /** The default trunk: its SIP URI alone, or its profile. */
  readonly trunk?: string | Trunk | null;
  /** The From user of placed calls where the trunk names none: E.164 or a user name. */
  readonly callerId?: string;
  /** Dial plan: number prefix to trunk; the longest matching prefix wins. */
  readonly routes?: readonly { readonly prefix: string; readonly trunk: string | Trunk }[];
  readonly rtpPorts?: { readonly min: number; readonly max: number };
  readonly ringTimeoutMs?: number;
  /** An answered call with no RTP for this long is hung up (not while held). */
  readonly mediaTimeoutMs?: number;
  /** Media threads (RTP, mixing, playback, recording); 0, the default, keeps the media on this thread. */
  readonly mediaThreads?: number;
  /** The loudest talkers a room mixes at once (default 3); everyone else hears one shared mix of them. */
  readonly mixTalkers?: number;
  /** DNS servers for locating trunks (RFC 3263), `address` or `address:port`; default the system's. */
  readonly dnsServers?: readonly string[] | null;
  /**
   * How long a trunk server may leave an INVITE unanswered before the next one found in DNS is tried
   * (default 4000), and how long one that failed is tried last (default 60000).
   */
  readonly serverTimeoutMs?: number;
  readonly serverDownMs?: number;
  /**
   * OPTIONS probing of every trunk server (docs/telephony.md#trunk-health): the service's settings,
   * a trunk profile's `probe` over them; undefined or an interval of 0: only trunks whose profile
   * sets an interval are probed.
   */
  readonly trunkProbe?: ProbeSettings;
  /** Told of every probe and every trunk server's move up or down (metrics). */
  readonly probeObserver?: TrunkProbeObserver;
  /** Session timers (RFC 4028), in seconds: the interval asked for and the smallest taken (1800, 90). */
  readonly sessionTimer?: SessionTimerSettings;
  /** What SIP's timers (RFC 3261 T1 and the rest) run on; default Node's timers (a fake in tests). */
  readonly sipClock?: Clock;
  /** What calls' own timers (ring timeout, pauses between keys) run on; default the real clock. */
  readonly clock?: Clock;
  /**
   * Requests per second one source address may send, with a burst of twice that: past it they are
   * refused 503 with Retry-After, and past a burst of refusals dropped. Undefined: no limit.
   */
  readonly requestRatePerSource?: number;
  /** Calls in progress (placed and taken) past which INVITEs are refused 503; undefined: no limit. */
  readonly maxCalls?: number;
  /** Lets a mix be made to fail on purpose (tests of fault isolation). */
  readonly allowMediaFaultInjection?: boolean;
  /**
   * SIP over TLS: a listener with this certificate (calls out over TLS need none). Trunks with
   * `mutualTls` must present a certificate when they connect to it.
   */
  readonly tls?: Omit<SipTlsOptions, "mutual">;
  /**
   * TCP and TLS connections accepted from one source and in all, how long an accepted one may carry
   * no message, and how long a TLS handshake may take (the transport's defaults where undefined).
   */
  readonly connections?: {
    readonly perSource: number;
    readonly total: number;
    readonly idleTimeoutMs?: number;
    readonly tlsHandshakeTimeoutMs?: number;
  };
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
  /**
   * The codecs offered and accepted, preferred first, where a trunk profile names none: calls taken,
   * calls placed through a trunk without `codecs`, calls to other URIs (but a relayed caller's). Default
   * WIDEBAND_AUDIO_CODECS: Opus, G.722, PCMU, PCMA.
   */
  readonly codecs?: readonly AudioCodec[];
  /**
   * STIR/SHAKEN verification of the calls taken (docs/telephony.md#stirshaken): the STI-CA roots and
   * the fetch's limits; undefined: not done, every call's verification is none, "not configured".
   * A bundle without a readable certificate fails start.
   */
  readonly stirShaken?: Omit<StirShakenOptions, "clock">;
  readonly logger?: TelephonyLogger;
  /** Told of each call's course (metrics). */
  readonly observer?: CallObserver;
}

/** What happens to calls, as it happens. */
export interface CallObserver {
  /** A call placed: then answered after `setupSeconds`, or failed with a SIP status. */
  placed(): void;
  answered(setupSeconds: number): void;
  failed(status: number): void;
  /** A call taken (an INVITE that reached the service's call handling). */
  received(): void;
  /** An INVITE refused 503: as many calls in progress as allowed (maxCalls). */
  refusedAtLimit(): void;
}

export interface SipStats {
  readonly transport: Readonly<TransportStats>;
  /** Requests served, refused 503 and dropped under the per-source rate; undefined without one. */
  readonly requestRate: Readonly<{ served: number; refused: number; dropped: number }> | undefined;
  readonly serverTransactions: number;
}

export interface PlaceCallOptions {
  readonly callerId?: string;
  readonly ringTimeoutMs?: number;
  /** The mix the call will join: its media opens on the same thread. */
  readonly room?: MediaMix;
  /**
   * SIP over TLS and SRTP, or no call: a trunk not reached over TLS fails it (488) before anything
   * is sent, and the offer takes no answer without SRTP, whatever the trunk's `;srtp=` says.
   */
  readonly encrypted?: boolean;
  /**
   * Whether a number a trunk's 301/302 redirects the call to may be called (the caller's calling
   * policy), as +1NPANXXXXXX; without it no redirect is followed. Only trunks with
   * `follow-redirects` are asked.
   */
  readonly allowRedirect?: (e164: string) => boolean;
}

/** A trunk a call may go through, read for the call: its URIs and the SRTP its calls get. */
interface TrunkChoice {
  readonly trunk: Trunk;
  readonly hops: TrunkHops;
  readonly srtp: SrtpPolicy;
}

const DEFAULT_RING_TIMEOUT_MS = 45_000;
const DEFAULT_SERVER_TIMEOUT_MS = 4000;
const DEFAULT_MEDIA_TIMEOUT_MS = 30_000;
/** Retry-After of the 503 for a call past the limit of calls in progress: about when some have ended. */
const CALLS_FULL_RETRY_AFTER_SECONDS = 60;

export class Telephony implements CallHost {
  readonly #transport: SipTransport;
  readonly #agent: UserAgent;
  readonly #options: TelephonyOptions;
  readonly #media: MediaPlane;
  readonly #calls = new Set<Call>();
  readonly #locator: ServerLocator;
  readonly #dialPlan: DialPlan;
  readonly #registrations: Registration[] = [];
  readonly #probes: TrunkProbes;
  /** Each trunk's gate: calls per second and channels (trunk-pacing.ts). */
  readonly #pacing: TrunkPacing;
  /** Whom requests are taken from: the configured peers (trunks, edges, BRIDGELINE_SIP_TRUSTED) and the other instances; undefined when anyone may call. */
  readonly #trusted: TrustedSources | undefined;
  /** The other instances' hosts, as last told (trustInstances). */
  #instanceHosts: readonly string[] = [];
  #onIncomingCall: ((call: IncomingCall) => void) | undefined;
  readonly #verifier: CallerVerifier | undefined;
  #closing: Promise<void> | undefined;

  private constructor(
    transport: SipTransport,
    agent: UserAgent,
    locator: ServerLocator,
    dialPlan: DialPlan,
    options: TelephonyOptions,
    trusted: TrustedSources | undefined,
    verifier: CallerVerifier | undefined,
  ) {
    this.#trusted = trusted;
    this.#verifier = verifier;
    this.#transport = transport;
    this.#locator = locator;
    this.#dialPlan = dialPlan;
    this.#agent = agent;
    this.#options = options;
    this.#media = new MediaPlane({
      threads: options.mediaThreads ?? 0,
      bindAddress: options.bindAddress,
      rtpPorts: options.rtpPorts ?? { min: 10_000, max: 20_000 },
      mediaTimeoutMs: options.mediaTimeoutMs ?? DEFAULT_MEDIA_TIMEOUT_MS,
      mixTalkers: options.mixTalkers,
      allowFaultInjection: options.allowMediaFaultInjection,
      logger: options.logger,
    });
    agent.onInvite((session) => this.#receiveInvite(session));
    this.#pacing = new TrunkPacing(this.clock, dialPlan.trunks);
    const serviceProbe = options.trunkProbe ?? { ...DEFAULT_PROBE_SETTINGS, intervalMs: 0 };
    this.#probes = new TrunkProbes({
      clock: this.clock,
      trunks: dialPlan.trunks.flatMap((trunk) => {
        const first = dialPlan.hops.get(trunk)?.first;
        const settings = probeSettingsOf(serviceProbe, trunk.probe);
        return first === undefined || settings === undefined ? [] : [{ trunk, first, settings }];
      }),
      locate: (hop) => locateTrunk(locator, hop),
      sendOptions: (hop, server) => this.#sendOptions(hop, server),
      markDown: (server) => locator.markDown(server),
      markUp: (server) => locator.markUp(server),
      logger: options.logger,
      observer: options.probeObserver,
    });
  }

  static async start(options: TelephonyOptions): Promise<Telephony> {
    let agent: UserAgent | undefined;
    const logger = options.logger;
    // Before anything is opened: a trust store without a certificate throws.
    const verifier =
      options.stirShaken === undefined
        ? undefined
        : new CallerVerifier({ ...options.stirShaken, clock: options.clock ?? systemClock });
    const locator = new ServerLocator({
      servers: options.dnsServers ?? undefined,
      downForMs: options.serverDownMs,
    });
    const dialPlan = dialPlanOf(options.trunk, options.routes);
    const servers = await trunkServers(dialPlan, locator, (uri, error) =>
      logger?.warn(
        { host: destinationOf(uri)?.host ?? "", err: error },
        "a trunk's host could not be looked up: its requests are not trusted unless BRIDGELINE_SIP_TRUSTED lists it, and it has no connections kept for it nor its certificate checked",
      ),
    );
    const trunkSources = dialPlan.trunks.length === 0 ? undefined : blockListOf([...servers.values()].flat());
    // Those configured, else the trunks' and proxies' servers; undefined (anyone) when neither.
    const configured = options.trustedSources == null ? trunkSources : blockListOf(options.trustedSources);
    const trusted = configured === undefined ? undefined : new TrustedSources(configured);
    if (trusted === undefined)
      logger?.warn({}, "SIP requests are taken from anywhere: no trunk and no BRIDGELINE_SIP_TRUSTED");
    const connections = options.connections;
    const transport = await SipTransport.listen({
      bindAddress: options.bindAddress,
      port: options.sipPort,
      publicAddress: options.publicAddress ?? advertisedAddress(options.bindAddress),
      tls:
        options.tls === undefined ? undefined : { ...options.tls, mutual: mutualTlsPeers(dialPlan, servers) },
      tlsCa: options.tlsCa,
      maxConnections: connections,
      idleTimeoutMs: connections?.idleTimeoutMs,
      tlsHandshakeTimeoutMs: connections?.tlsHandshakeTimeoutMs,
      // A stranger's connection is closed as accepted: its requests would only be refused or dropped.
      trustedSources: trusted,
      trunkSources,
      inUse: (flow) => agent?.usesFlow(flow) ?? false,
      onMessage: (message, source) => agent?.receive(message, source),
      onDrop: (reason, source) => logger?.debug({ source }, `SIP message dropped: ${reason}`),
      onTlsFailure: (reason, source) =>
        logger?.warn({ source: `${source.address}:${source.port}` }, `SIP over TLS: ${reason}`),
    });
    const rate = options.requestRatePerSource;
    agent = new UserAgent(transport, {
      sessionTimer: options.sessionTimer,
      clock: options.sipClock,
      requestRate: rate === undefined ? undefined : { perSecond: rate, burst: 2 * rate },
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
    const telephony = new Telephony(transport, agent, locator, dialPlan, options, trusted, verifier);
    for (const trunk of dialPlan.trunks) telephony.#register(trunk);
    telephony.#probes.start();
    return telephony;
  }

  /**
   * One OPTIONS to a server of a trunk's first hop (RFC 3261 section 11: out of any dialog, the
   * hop's URI as the Request-URI), through a non-INVITE client transaction. Any final response but
   * 408 and 503 says the server is alive: a 404 or a 401 still comes from a SIP stack that works
   * (Asterisk's qualify counts any response; Kamailio's dispatcher 2xx unless told more codes).
   */
  #sendOptions(hop: Hop, server: Destination): Promise<ProbeAnswer> {
    const { uri } = hop;
    const port = uri.port === undefined ? "" : `:${uri.port}`;
    const transport = hop.destination.transport;
    const transportParam =
      transport === "UDP" || uri.scheme === "sips" ? "" : `;transport=${transport.toLowerCase()}`;
    const requestUri = `${uri.scheme === "sips" ? "sips" : "sip"}:${uri.host}${port}${transportParam}`;
    const contact = this.#agent.contact(server.transport, uri.scheme === "sips");
    const headers = new SipHeaders();
    headers.append("Via", this.#agent.via(server.transport));
    headers.append("Max-Forwards", "70");
    headers.append("From", `${contact};tag=${newTag()}`);
    headers.append("To", `<${requestUri}>`);
    headers.append("Call-ID", newCallId(this.#transport.sentBy.host));
    headers.append("CSeq", "1 OPTIONS");
    headers.append("Contact", contact);
    headers.append("Accept", "application/sdp");
    headers.append("User-Agent", this.#agent.userAgent);
    headers.append("Content-Length", "0");
    const request: SipRequest = {
      kind: "request",
      method: "OPTIONS",
      uri: requestUri,
      version: "SIP/2.0",
      headers,
      body: Buffer.alloc(0),
    };
    return new Promise((resolve) =>
      this.#agent.sendNonInvite(request, server, (response) => {
        if (response === undefined) resolve({ result: "error", reason: "not sent, or no answer" });
        else if (response.status === 408 || response.status === 503)
          resolve({ result: "unavailable", reason: `${response.status} ${response.reason}` });
        else resolve({ result: "ok", status: response.status });
      }),
    );
  }

  /** Each probed trunk's servers and their health (none while not probed or not yet found). */
  trunkHealth(): TrunkHealth[] {
    return this.#probes.health();
  }

  /**
   * Starts the trunk's registration, when it has one; its outcomes go to the log. The registrar is
   * looked up for each REGISTER, so that a lookup that fails is retried like any other failure.
   */
  #register(trunk: Trunk): void {
    const settings = trunk.registration;
    if (settings === undefined || settings === null) return;
    const credentials = trunk.credentials;
    if (credentials === undefined || credentials === null)
      throw new Error(`registering with ${trunk.uri} needs its credentials`);
    const registrarText = settings.registrar ?? trunk.uri;
    const registrar = parseSipUri(registrarText);
    if (registrar === undefined) throw new Error(`not a SIP URI: ${registrarText}`);
    const firstHopText = trunk.outboundProxy ?? registrarText;
    const firstHop = hopOf(firstHopText);
    if (firstHop === undefined) throw new Error(`not a SIP URI: ${firstHopText}`);
    const logger = this.#options.logger;
    const port = registrar.port === undefined ? "" : `:${registrar.port}`;
    const registration = new Registration(this.#agent, {
      registrar: `${registrar.scheme}:${registrar.host}${port}`,
      route: trunk.outboundProxy == null ? undefined : looseRoute(trunk.outboundProxy),
      locate: async () => {
        const [server] = await locateTrunk(this.#locator, firstHop);
        if (server === undefined) throw new Error(`no address found for ${firstHopText}`);
        return server;
      },
      aor: `${registrar.scheme}:${uriUser(credentials.username)}@${registrar.host}`,
      credentials,
      expires: settings.expires,
      ...(settings.contactUser === undefined ? {} : { contactUser: settings.contactUser }),
      callId: newCallId(this.#transport.sentBy.host),
      tag: newTag(),
      onState: (state, detail) =>
        state === "failed"
          ? logger?.warn({ registrar: registrarText }, `registration failed: ${detail}`)
          : logger?.info({ registrar: registrarText }, `registration ${state} ${detail}`),
    });
    this.#registrations.push(registration);
    registration.start();
  }

  get sipPort(): number {
    return this.#transport.port;
  }

  /** Whether the SIP sockets are open (until close). */
  get listening(): boolean {
    return this.#transport.listening;
  }

  /**
   * Presents a new certificate and key on SIP over TLS from now on (connections open keep theirs);
   * throws, keeping the pair in use, when the new one does not load.
   */
  setTlsCertificate(certificate: TlsCertificate): void {
    this.#transport.setCertificate(certificate);
  }

  /** The SIP over TLS port; undefined without a TLS listener. */
  get sipTlsPort(): number | undefined {
    return this.#transport.tlsPort;
  }

  get srtpSuites(): readonly SrtpSuite[] {
    return this.#options.srtp?.suites ?? DEFAULT_SRTP_SUITES;
  }

  get codecs(): readonly AudioCodec[] {
    return this.#options.codecs ?? WIDEBAND_AUDIO_CODECS;
  }

  get clock(): Clock {
    return this.#options.clock ?? systemClock;
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

  /**
   * Answers a browser's WebRTC offer (the join page): a call answered at once, its media next to
   * `room`'s; `refused` says why an offer cannot be answered (no port free rejects).
   */
  async answerBrowser(
    offer: string,
    options: { readonly signallingTls: boolean; readonly room?: MediaMix },
  ): Promise<{ call: BrowserCall; answer: string } | { refused: string }> {
    let answered: { call: BrowserCall; answer: string };
    try {
      answered = await BrowserCall.answer(this, offer, {
        signallingTls: options.signallingTls,
        near: options.room,
      });
    } catch (error) {
      if (error instanceof MediaError && error.code === "MEDIA_ERR_OFFER") return { refused: error.message };
      throw error;
    }
    if (answered.call.state === "answered") this.#calls.add(answered.call);
    return answered;
  }

  /** Calls in progress (placed or taken, not yet failed or ended). */
  get activeCalls(): number {
    return this.#calls.size;
  }

  /** The SIP stack's figures: messages, requests limited by source, server transactions kept. */
  get sipStats(): SipStats {
    return {
      transport: this.#transport.stats,
      requestRate: this.#agent.requestRateStats,
      serverTransactions: this.#agent.serverTransactions,
    };
  }

  /** Who takes INVITEs; without a handler they are refused 404 (no one here answers any number). */
  onIncomingCall(handler: (call: IncomingCall) => void): void {
    this.#onIncomingCall = handler;
  }

  /**
   * Calls a number through the trunk its prefix routes to, written as that trunk wants it; when that
   * trunk cannot carry it (no server answered, a 5xx), through the next (docs/telephony.md#failover-
   * across-trunks), and a trunk's 301/302 to another number is followed when the trunk and
   * `allowRedirect` say so. The number may be written any common way. Failures (bad number 484, no
   * trunk 503) arrive as the call's "failed" event, like any other, once: the last attempt's.
   */
  placeCall(number: string, options: PlaceCallOptions = {}): OutgoingCall {
    const nanp = normalizeNanpNumber(number);
    const e164 = nanp === null ? number : `+1${nanp.subscriberNumber}`;
    const choices = nanp === null ? { usable: 0, fit: [] } : this.#trunksFor(e164, options);
    const first = choices.fit[0];
    const call = this.#observed(
      new OutgoingCall(
        this,
        "outbound",
        e164,
        first === undefined ? {} : mediaOptionsOf(first),
        first?.trunk.uri ?? null,
      ),
    );
    this.#calls.add(call);
    const failLater = (status: number, reason: string) =>
      queueMicrotask(() => {
        this.#options.logger?.warn({ number, status, reason }, `call not placed: ${reason}`);
        call.notPlaced(status, reason);
      });
    if (nanp === null) {
      failLater(484, "Address Incomplete");
      return call;
    }
    if (choices.usable === 0) {
      failLater(503, "No trunk configured");
      return call;
    }
    if (first === undefined) {
      failLater(488, "SRTP is required but the trunk is not SIP over TLS: keys would travel in plain text");
      return call;
    }
    void this.#dial(
      call,
      { number: e164, trunks: choices.fit, index: 0, attempt: 1, redirectedFrom: undefined },
      options,
    );
    return call;
  }

  /**
   * The trunks a number may be called through, in order (dial-plan.ts trunkCandidates), leaving out
   * those without a SIP URI and those that cannot meet the call's encryption: `usable` counts the
   * former, `fit` lists the rest, at most MAX_TRUNKS_PER_CALL.
   */
  #trunksFor(e164: string, options: PlaceCallOptions): { usable: number; fit: TrunkChoice[] } {
    const usable = trunkCandidates(this.#dialPlan, e164, this.#probes.downTrunks()).flatMap((trunk) => {
      const hops = this.#dialPlan.hops.get(trunk);
      return hops === undefined ? [] : [{ trunk, hops }];
    });
    const fit = usable.flatMap(({ trunk, hops }): TrunkChoice[] => {
      // The first hop decides what the INVITE travels over: the outbound proxy, else the trunk.
      const transport = hops.first.destination.transport;
      const srtp = this.#srtpOver(
        transport,
        options.encrypted ? "required" : (trunk.srtp ?? this.#options.srtp?.placed ?? "optional"),
      );
      return srtp === "refuse" || (options.encrypted && transport !== "TLS") ? [] : [{ trunk, hops, srtp }];
    });
    return { usable: usable.length, fit: fit.slice(0, MAX_TRUNKS_PER_CALL) };
  }

  /**
   * A placed call's attempts, one trunk after another (and a redirect's number through its own),
   * until one is answered, the call is over, or the last one's failure is the call's.
   */
  async #dial(call: OutgoingCall, first: Attempts<TrunkChoice>, options: PlaceCallOptions): Promise<void> {
    const ringTimeoutMs = options.ringTimeoutMs ?? this.#options.ringTimeoutMs ?? DEFAULT_RING_TIMEOUT_MS;
    // Its turn at the first trunk before its media port and ring timeout: a call queued there holds
    // neither while it waits.
    let turn = await this.#turn(call, (first.trunks[first.index] as TrunkChoice).trunk);
    if (turn === undefined) return;
    if (!(await call.open(ringTimeoutMs, options.room))) {
      turn.release();
      return;
    }
    for (let attempts = first; ; ) {
      const choice = attempts.trunks[attempts.index] as TrunkChoice;
      turn ??= await this.#turn(call, choice.trunk);
      if (turn === undefined) return;
      const failed = await this.#attempt(call, choice, turn, attempts, options);
      turn = undefined;
      // Over meanwhile (hung up, its ring timeout): no other trunk is tried.
      if (failed === undefined || !call.placing) return;
      const next = this.#afterFailure(attempts, choice, failed, options);
      if (next === undefined) {
        call.failWith(failed.failure);
        return;
      }
      this.#options.logger?.warn(
        {
          number: attempts.number,
          from: choice.trunk.uri,
          to: (next.trunks[next.index] as TrunkChoice).trunk.uri,
          ...(next.number === attempts.number ? {} : { redirectedTo: next.number }),
          status: failed.failure.status,
          reason: failed.failure.reason,
        },
        next.number === attempts.number
          ? "call failed over to the next trunk: the trunk could not carry it"
          : "call redirected (3xx): the new number is called through the dial plan",
      );
      attempts = next;
    }
  }

  /**
   * What follows a failed attempt: the next trunk when the failure says the trunk could not carry the
   * call, the number a 301/302 names through its own trunks, or undefined (the failure is the call's).
   */
  #afterFailure(
    attempts: Attempts<TrunkChoice>,
    choice: TrunkChoice,
    { failure, response }: AttemptFailure,
    options: PlaceCallOptions,
  ): Attempts<TrunkChoice> | undefined {
    if (attempts.attempt >= MAX_TRUNKS_PER_CALL) return undefined;
    const redirect = redirectOf(failure.status, response?.headers.contact?.uri, {
      follow: choice.trunk.followRedirects === true,
      allow: options.allowRedirect,
      redirectedFrom: attempts.redirectedFrom,
      calling: attempts.number,
    });
    if (redirect !== undefined) {
      const trunks = "number" in redirect ? this.#trunksFor(redirect.number, options).fit : [];
      if ("refused" in redirect || trunks.length === 0) {
        this.#options.logger?.info(
          { number: attempts.number, status: failure.status, contact: response?.headers.get("Contact") },
          `redirect not followed: ${"refused" in redirect ? redirect.refused : "no trunk for the number"}`,
        );
        return undefined;
      }
      return {
        number: redirect.number,
        trunks,
        index: 0,
        attempt: attempts.attempt + 1,
        redirectedFrom: attempts.number,
      };
    }
    if (!failsOverTrunk(failure.status, response !== undefined)) return undefined;
    if (attempts.index + 1 >= attempts.trunks.length) return undefined;
    return { ...attempts, index: attempts.index + 1, attempt: attempts.attempt + 1 };
  }

  /**
   * One INVITE of a placed call through `choice`'s trunk, in its `turn` there (given back when the
   * attempt fails or the call is over), with that trunk's own request (number
   * format, caller ID, headers) and media; resolves with its failure (a trunk name DNS does not know
   * is a 503 of ours), or undefined once the call is answered or over.
   */
  async #attempt(
    call: OutgoingCall,
    { trunk, hops, srtp }: TrunkChoice,
    turn: Turn,
    attempts: Attempts<TrunkChoice>,
    options: PlaceCallOptions,
  ): Promise<AttemptFailure | undefined> {
    const e164 = attempts.number;
    let servers: Destination[];
    try {
      servers = await locateTrunk(this.#locator, hops.first);
    } catch (error) {
      turn.release();
      if (!call.placing) return undefined;
      const reason = `Service Unavailable: ${(error as Error).message}`;
      this.#options.logger?.warn({ number: e164, trunk: trunk.uri, reason }, `call not placed: ${reason}`);
      return { failure: { status: 503, reason, cause: null }, response: undefined };
    }
    const [first, ...next] = servers;
    const requestUri = trunkRequestUri(trunk, hops.trunk, e164);
    const callerId = options.callerId ?? trunk.callerId ?? this.#options.callerId ?? "bridgeline";
    const caller = trunkCaller(trunk, callerId);
    const withheld = withholdsIdentity(trunk);
    const headers = trunkHeaders(trunk);
    // Another trunk to go to: a silent last server is given up at the server timeout, not Timer B.
    const elsewhere = attempts.index + 1 < attempts.trunks.length && attempts.attempt < MAX_TRUNKS_PER_CALL;
    const attempt: CallAttempt = {
      route: trunk.uri,
      media: mediaOptionsOf({ trunk, hops, srtp }),
      send: (offer) => {
        turn.sent();
        return this.#agent.call({
          requestUri,
          // RFC 3323 section 4.1.1.3: a withheld identity leaves an anonymous From.
          from: withheld ? ANONYMOUS : caller,
          ...(trunk.assertedIdentity ? { assertedIdentity: trunkAssertedIdentity(trunk, callerId) } : {}),
          destination: first as Destination,
          offer,
          credentials: trunk.credentials ?? undefined,
          headers,
          ...(trunk.sessionTimer === undefined
            ? {}
            : { sessionTimer: trunk.sessionTimer === "off" ? null : { interval: trunk.sessionTimer } }),
          reliableProvisional: trunk.reliableProvisional,
          failover: {
            next,
            elsewhere,
            targetTimeoutMs: this.#options.serverTimeoutMs ?? DEFAULT_SERVER_TIMEOUT_MS,
            onTargetFailed: (target, reason) => {
              this.#locator.markDown(target);
              this.#options.logger?.warn(
                {
                  trunk: hops.first.text,
                  server: `${target.transport} ${target.host}:${target.port}`,
                  reason,
                },
                "a trunk server failed: trying the next, and this one last for a while",
              );
            },
          },
        });
      },
    };
    const failed = await call.attempt(attempt);
    this.#holdChannel(call, turn, failed);
    return failed;
  }

  /**
   * The call's turn at `trunk`'s gate (trunk-pacing.ts): resolves with it once the INVITE may go (at
   * once when no limit holds it), or undefined when it will not go: refused (the call failed 503,
   * "trunk queue full" or "shutting down") or the call over while it waited (its place given back).
   */
  #turn(call: OutgoingCall, trunk: Trunk): Promise<Turn | undefined> {
    const logger = this.#options.logger;
    // Over already (hung up while it looked for a trunk): it takes no place.
    if (!call.placing) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      const stopWaiting = () => {
        call.off("failed", gone);
        call.off("ended", gone);
      };
      const refuse = (reason: string) => {
        stopWaiting();
        resolve(undefined);
        logger?.warn({ number: call.remoteNumber, trunk: trunk.uri, reason }, `call not placed: ${reason}`);
        call.notPlaced(503, reason);
      };
      const turn = this.#pacing.gate(trunk).enter({
        go: () => {
          stopWaiting();
          resolve(turn);
        },
        refused: refuse,
      });
      // Hung up while it waits: its place goes to the next.
      const gone = () => {
        stopWaiting();
        turn.release();
        resolve(undefined);
      };
      const state = turn.state;
      if (state.kind === "through") {
        resolve(turn);
        return;
      }
      if (state.kind === "refused") {
        // Told once placeCall's caller has the call, to listen to it.
        queueMicrotask(() => refuse(state.reason));
        return;
      }
      if (state.kind !== "waiting") return;
      call.once("failed", gone);
      call.once("ended", gone);
      const why = state.why;
      queueMicrotask(() => {
        if (turn.state.kind !== "waiting") return;
        logger?.info(
          { number: call.remoteNumber, trunk: trunk.uri, why },
          `call queued at its trunk: ${why}`,
        );
        call.queued(why, trunk.uri);
      });
    });
  }

  /**
   * Holds the call's channel at its trunk while the call goes on, and gives it back when the attempt
   * failed (another trunk may carry the call) or once the call has failed or ended.
   */
  #holdChannel(call: OutgoingCall, turn: Turn, failed: AttemptFailure | undefined): void {
    if (failed !== undefined || call.state === "failed" || call.state === "ended") {
      turn.release();
      return;
    }
    const over = () => {
      call.off("failed", over);
      call.off("ended", over);
      turn.release();
    };
    call.on("failed", over);
    call.on("ended", over);
  }

  /** Each trunk's calls waiting their turn and calls through it now (the metrics). */
  trunkPacing(): TrunkPacingStats[] {
    return this.#pacing.stats();
  }

  /**
   * Calls a SIP URI directly rather than a number through a trunk (another instance of this service),
   * with `headers` added to the INVITE. Its media opens next to `nextTo`'s, and it offers `nextTo`'s
   * codec alone, so that the two can be relayed.
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
    const near = options.nextTo instanceof Call ? options.nextTo : undefined;
    // A call relayed to this one passes its packets as they come: offered its codec alone, the
    // other instance answers in it, whatever either prefers.
    const codecs = near?.codec === undefined ? undefined : [near.codec];
    const call = this.#observed(new OutgoingCall(this, "outbound", uri, { codecs }, uri));
    this.#calls.add(call);
    const destination = destinationOf(uri);
    if (destination === undefined) {
      queueMicrotask(() => call.notPlaced(416, "Unsupported URI Scheme"));
      return call;
    }
    void (async () => {
      const ringTimeoutMs = options.ringTimeoutMs ?? this.#options.ringTimeoutMs ?? DEFAULT_RING_TIMEOUT_MS;
      if (!(await call.open(ringTimeoutMs, near?.mediaStream))) return;
      const failed = await call.attempt({
        route: uri,
        media: { codecs },
        send: (offer) =>
          this.#agent.call({
            requestUri: uri,
            from: { user: this.#options.callerId ?? "bridgeline" },
            destination,
            offer,
            headers: options.headers,
          }),
      });
      if (failed !== undefined) call.failWith(failed.failure);
    })();
    return call;
  }

  /** This instance's own SIP address, for other instances to call it. */
  get sipUri(): string {
    const { host } = this.#transport.sentBy;
    return `sip:${host.includes(":") ? `[${host}]` : host}:${this.#transport.port}`;
  }

  /**
   * The other instances of the service, by their SIP URIs (`sipUri`): requests from their addresses
   * are taken as from a trusted source, beside the configured ones, until the next call replaces
   * them. An instance named by a host name, not an address, is not trusted by it (logged).
   */
  trustInstances(sipUris: readonly string[]): void {
    const trusted = this.#trusted;
    if (trusted === undefined) return;
    const hosts = [
      ...new Set(sipUris.map((uri) => parseSipUri(uri)?.host.replace(/^\[(.*)\]$/, "$1") ?? uri)),
    ].sort();
    if (hosts.join() === this.#instanceHosts.join()) return;
    this.#instanceHosts = hosts;
    const addresses = hosts.filter((host) => isIP(host) !== 0);
    const names = hosts.filter((host) => isIP(host) === 0);
    trusted.setInstances(addresses);
    const logger = this.#options.logger;
    logger?.info({ addresses }, "SIP requests from the other instances' addresses are trusted");
    if (names.length > 0)
      logger?.warn(
        { hosts: names },
        "another instance's SIP address is a host name, not trusted by it: list its address in BRIDGELINE_SIP_TRUSTED",
      );
  }

  /** Hangs up every call, then closes the sockets. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      this.#probes.stop();
      this.#verifier?.close();
      // Calls waiting at a trunk fail 503 "shutting down"; the others are hung up.
      this.#pacing.close();
      for (const call of [...this.#calls]) call.hangup();
      // Let the BYEs and CANCELs leave before the socket closes.
      await new Promise((resolve) => setTimeout(resolve, 50));
      await Promise.all(this.#registrations.map((registration) => registration.stop()));
      this.#locator.close();
      await Promise.all([this.#transport.close(), this.#media.close()]);
    })();
    return this.#closing;
  }

  // CallHost

  openMedia(near?: MediaMix | MediaStream): Promise<MediaStream> {
    return this.#media.openStream(near);
  }

  /** A browser's media: its one host candidate is the address phones' media is reached at. */
  openWebRtcMedia(
    offer: string,
    near?: MediaMix | MediaStream,
  ): Promise<{ stream: MediaStream; answer: string }> {
    return this.#media.openWebRtcStream(offer, [this.mediaAddress], near);
  }

  callFinished(call: Call): void {
    this.#calls.delete(call);
  }

  /** The SRTP a call gets over a transport: keys go only over TLS unless allowed otherwise. */
  #srtpOver(transport: "UDP" | "TCP" | "TLS", policy: SrtpPolicy): SrtpPolicy | "refuse" {
    if (policy === "off" || transport === "TLS" || this.#options.srtp?.keysOverPlainSignalling) return policy;
    return policy === "required" ? "refuse" : "off";
  }

  /** A placed call, told to the observer as it goes. */
  #observed(call: OutgoingCall): OutgoingCall {
    const observer = this.#options.observer;
    if (observer === undefined) return call;
    const placedAt = performance.now();
    observer.placed();
    call.once("answered", () => observer.answered((performance.now() - placedAt) / 1000));
    call.once("failed", (failure) => observer.failed(failure.status));
    return call;
  }

  #receiveInvite(session: IncomingInviteSession): void {
    const handler = this.#onIncomingCall;
    const invite = session.invite;
    // The parser checked From and To and keeps their values: read them, not the raw text again.
    const from = invite.headers.from;
    const fromUser = (from === undefined ? undefined : parseSipUri(from.uri)?.user) ?? "anonymous";
    // A trunk that reaches us by registration sends the number called in To, and our Contact as the
    // Request-URI: the number is whichever of the two is one.
    const requestUser = parseSipUri(invite.uri)?.user ?? "";
    const toHeaderUser = parseSipUri(invite.headers.to?.uri ?? "")?.user ?? "";
    const toUser =
      normalizeNanpNumber(requestUser) === null && normalizeNanpNumber(toHeaderUser) !== null
        ? toHeaderUser
        : requestUser;
    if (handler === undefined) {
      session.reject(404, "Not Found");
      return;
    }
    const maxCalls = this.#options.maxCalls;
    if (maxCalls !== undefined && this.#calls.size >= maxCalls) {
      session.reject(503, "Service Unavailable", [["Retry-After", String(CALLS_FULL_RETRY_AFTER_SECONDS)]]);
      this.#options.observer?.refusedAtLimit();
      this.#options.logger?.warn(
        { from: fromUser, to: toUser, maxCalls },
        "call refused: as many calls as allowed",
      );
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
    const address = session.source?.address;
    const origin: CallOrigin = {
      source: address === undefined ? "unknown" : sourceOf(address),
      peer:
        address !== undefined && this.#trusted?.check(address, isIPv6(address) ? "ipv6" : "ipv4") === true,
      callId: invite.headers.callId ?? "",
    };
    // Verified from now, beside whatever the handler does (the PIN prompt); the call holds the outcome.
    const verification =
      this.#verifier?.verify({
        identities: invite.headers.getAll("Identity"),
        caller: callerToVerify(invite, fromUser, origin.peer),
        called: toUser,
      }) ?? Promise.resolve(VERIFICATION_NOT_CONFIGURED);
    if (this.#verifier !== undefined)
      void verification.then(({ status, attestation, reason }) =>
        this.#options.logger?.info(
          { from: fromUser, to: toUser, callId: origin.callId, status, attestation, reason },
          `caller verification (STIR/SHAKEN): ${status}`,
        ),
      );
    const call = new IncomingCall(this, session, fromUser, toUser, origin, srtp, verification);
    this.#options.observer?.received();
    this.#calls.add(call);
    this.#options.logger?.info({ from: fromUser, to: toUser }, "incoming call");
    handler(call);
  }
}

/**
 * The number a caller's PASSporT must be from (RFC 8224 section 6.2: the identity the call
 * presents): its From number, which the call shows and records; only when From is no number (an
 * anonymous caller) a trusted peer's P-Asserted-Identity (RFC 3325: believed from its trust domain
 * alone), else none is taken from an INVITE that anyone could have written.
 */
function callerToVerify(invite: SipRequest, fromUser: string, fromPeer: boolean): string {
  if (/^\+?\d+$/.test(fromUser) || !fromPeer) return fromUser;
  return assertedCaller(invite) ?? fromUser;
}

/** The user part of an INVITE's first P-Asserted-Identity (RFC 3325): a tel: URI's number, or a SIP URI's user. */
function assertedCaller(invite: SipRequest): string | undefined {
  const field = invite.headers.get("P-Asserted-Identity");
  if (field === undefined) return undefined;
  const identity = parseNameAddr(field, 0, listItemEnd(field, 0, field.length));
  return identity === undefined ? undefined : parseSipUri(identity.uri)?.user;
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

/** What a call through a trunk offers and accepts: its SRTP, codecs and way of sending keys. */
function mediaOptionsOf({ trunk, srtp }: TrunkChoice): CallMediaOptions {
  return { srtp, codecs: trunk.codecs, dtmf: trunk.dtmf };
}
