/**
 * Prometheus metrics (prom-client) for `GET /metrics` on BRIDGELINE_METRICS_PORT: calls, rooms,
 * dial-in, media threads, RTP, API requests, event streams, notifications, webhooks, the
 * database, the scheduler, certificates and the build.
 * Figures kept elsewhere (the media threads' counts, the store's rows) are read once per scrape and
 * copied in; events (calls, requests) are counted as they happen. The names and example queries are
 * in docs/operations.md.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import type { EventFeed } from "./api/event-feed.js";
import { readBuildInfo } from "./build-info.js";
import type { ConferenceRuntime } from "./conference/conference-runtime.js";
import { ATTENDEE_STATES } from "./domain/attendee.js";
import { CONFERENCE_STATES } from "./domain/conference.js";
import type { CallNotPlaced } from "./domain/phone.js";
import type { QueryFailure, QueryKind, QueryObserver, Store } from "./store/database.js";
import { readStoreCounts } from "./store/metrics.js";
import { LATENESS_BUCKETS_MS } from "./telephony/media/media-clock.js";
import type { MediaPlaneStats } from "./telephony/media/plane/media-plane.js";
import type { CallObserver, SipStats } from "./telephony/telephony.js";
import type { TrunkPacingStats } from "./telephony/trunk-pacing.js";
import type { TrunkProbeObserver } from "./telephony/trunk-probe.js";
import { certificateExpiry } from "./tls.js";

/** Where the figures read at each scrape come from. */
export interface MetricSources {
  readonly store: Store;
  readonly conferences: ConferenceRuntime;
  readonly mediaStats: () => Promise<MediaPlaneStats>;
  readonly eventFeed: EventFeed;
  readonly sipStats: () => SipStats;
  /** Each trunk's calls waiting their turn and calls through it (calls per second, channels). */
  readonly trunkPacing: () => readonly TrunkPacingStats[];
  /** The readiness checks of /health/ready: each one's name and whether it passes. */
  readonly readiness: () => Promise<readonly (readonly [string, { readonly passes: boolean }])[]>;
}

interface MetricsLogger {
  warn(fields: object, message: string): void;
}

const SETUP_BUCKETS = [0.25, 0.5, 1, 2, 3, 5, 8, 13, 21, 34, 60];
const REQUEST_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];
const LATENESS_METRIC = "bridgeline_media_tick_lateness_seconds";
const START_LAG_BUCKETS = [0.25, 0.5, 1, 2, 5, 10, 30, 60, 300, 900, 3600];
const QUERY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];
const DELIVERY_LAG_BUCKETS = [0.5, 1, 2, 5, 10, 30, 60, 300, 1800, 3600, 4 * 3600, 24 * 3600];
const QUERY_KINDS: readonly QueryKind[] = ["select", "insert", "update", "delete", "other"];
const QUERY_FAILURES: readonly QueryFailure[] = ["unreachable", "statement"];
const REFUSAL_REASONS: readonly ("max-calls" | CallNotPlaced)[] = [
  "max-calls",
  "user-limit",
  "denied-number",
];
/**
 * prom-client's default gauges named `_total`, which is a counter's suffix (promtool warns): each is
 * the sum of the gauge of the same name without it, by `type`, so they are left out.
 */
const GAUGES_NAMED_TOTAL = [
  "bridgeline_nodejs_active_handles_total",
  "bridgeline_nodejs_active_requests_total",
  "bridgeline_nodejs_active_resources_total",
];

export class ServiceMetrics {
  readonly registry = new Registry();
  readonly #logger: MetricsLogger;
  #sources: MetricSources | undefined;

  readonly #placed = this.#counter(
    "bridgeline_calls_placed_total",
    "Calls placed (attendees dialled, internal legs)",
  );
  readonly #answered = this.#counter("bridgeline_calls_answered_total", "Placed calls answered");
  readonly #failed = new Counter({
    name: "bridgeline_calls_failed_total",
    help: "Placed calls that failed, by SIP status class of the failure (4xx, 5xx, 6xx)",
    labelNames: ["status_class"],
    registers: [this.registry],
  });
  readonly #received = this.#counter("bridgeline_calls_received_total", "Calls taken (INVITEs handled)");
  readonly #setup = new Histogram({
    name: "bridgeline_call_setup_seconds",
    help: "From placing a call to its answer",
    buckets: SETUP_BUCKETS,
    registers: [this.registry],
  });
  readonly #requests = new Counter({
    name: "bridgeline_http_requests_total",
    help: "API requests answered, by route pattern, method and status",
    labelNames: ["route", "method", "status"],
    registers: [this.registry],
  });
  readonly #requestSeconds = new Histogram({
    name: "bridgeline_http_request_duration_seconds",
    help: "API request latency, by route pattern and method",
    labelNames: ["route", "method"],
    buckets: REQUEST_BUCKETS,
    registers: [this.registry],
  });

  // Operators' basics (issue 30): build, RTP ports, refusals, scheduler, database, webhook lag,
  // certificates, readiness.
  readonly #buildInfo = this.#gauge(
    "bridgeline_build_info",
    "The build running: version (package.json) and commit (stamped by npm run build; dev from the sources)",
    ["version", "commit"],
  );
  readonly #rtpPortsInUse = this.#gauge(
    "bridgeline_rtp_ports_in_use",
    "RTP and RTCP ports bound now, by media thread (two per call's stream)",
    ["thread"],
  );
  readonly #rtpPorts = this.#gauge(
    "bridgeline_rtp_ports",
    "RTP and RTCP ports of BRIDGELINE_RTP_PORTS each media thread hands out (its share of the range)",
    ["thread"],
  );
  readonly #callsRefused = this.#counter(
    "bridgeline_calls_refused_total",
    "Calls refused for a limit, by reason (max-calls: INVITE refused 503 at BRIDGELINE_SIP_MAX_CALLS; user-limit: an attendee call not placed, past its owner's per-user limits; denied-number: not placed, a number never called)",
    ["reason"],
  );
  readonly #startLag = new Histogram({
    name: "bridgeline_conference_start_lag_seconds",
    help: "For each conference this instance started: from its scheduled start to its claim",
    buckets: START_LAG_BUCKETS,
    registers: [this.registry],
  });
  readonly #delayed = this.#counter(
    "bridgeline_conferences_delayed_total",
    "Due conferences this instance found still waiting: no instance had room for them (BRIDGELINE_MAX_PARTICIPANTS)",
  );
  readonly #queries = new Histogram({
    name: "bridgeline_db_query_seconds",
    help: "Database statements run by this instance (not the migrations), by kind (select, insert, update, delete, other)",
    labelNames: ["kind"],
    buckets: QUERY_BUCKETS,
    registers: [this.registry],
  });
  readonly #queryErrors = this.#counter(
    "bridgeline_db_errors_total",
    "Database statements that failed, by kind and cause (unreachable: connection lost or no answer in time; statement: refused by the database)",
    ["kind", "cause"],
  );
  readonly #deliveryLag = new Histogram({
    name: "bridgeline_webhook_delivery_lag_seconds",
    help: "For each webhook delivery this instance got through: from its event (queued) to the receiver's 2xx",
    buckets: DELIVERY_LAG_BUCKETS,
    registers: [this.registry],
  });
  readonly #certificateExpiry = this.#gauge(
    "bridgeline_certificate_expiry_timestamp_seconds",
    "When the certificate each TLS listener presents expires (https, sip), in seconds since the epoch; read again on SIGHUP",
    ["listener"],
  );
  readonly #ready = this.#gauge(
    "bridgeline_ready",
    "The readiness checks of /health/ready at the scrape, by check: 1 passing, 0 failing",
    ["check"],
  );
  /** One child per kind, made once: a statement's observation makes no labels object. */
  readonly #queryByKind = Object.fromEntries(
    QUERY_KINDS.map((kind) => [kind, this.#queries.labels({ kind })]),
  ) as Record<QueryKind, ReturnType<Histogram["labels"]>>;

  // Read at each scrape.
  readonly #conferences = this.#gauge("bridgeline_conferences", "Conferences in the database, by state", [
    "state",
  ]);
  readonly #liveAttendees = this.#gauge(
    "bridgeline_live_attendees",
    "Attendees of started conferences in the database, by attendee state",
    ["state"],
  );
  readonly #notifications = this.#gauge(
    "bridgeline_notifications",
    "Notification e-mails in the outbox, by state (queued and sending: the queue; failed, refused: given up)",
    ["state"],
  );
  readonly #webhookDeliveries = this.#gauge(
    "bridgeline_webhook_deliveries",
    "Webhook deliveries in the outbox, by state (pending and sending: the queue; failed: given up)",
    ["state"],
  );
  readonly #webhookAttempts = new Counter({
    name: "bridgeline_webhook_attempts_total",
    help: "Webhook delivery attempts by this instance, by result (delivered, failed, gone: 410)",
    labelNames: ["result"],
    registers: [this.registry],
  });
  readonly #webhookSeconds = new Histogram({
    name: "bridgeline_webhook_attempt_duration_seconds",
    help: "How long a webhook receiver took to answer an attempt",
    buckets: REQUEST_BUCKETS,
    registers: [this.registry],
  });
  readonly #rooms = this.#gauge("bridgeline_rooms", "Conferences this instance runs");
  readonly #legs = this.#gauge("bridgeline_room_legs", "Calls in this instance's rooms, by state", ["state"]);
  readonly #dialIns = this.#counter(
    "bridgeline_dial_ins_total",
    "Calls taken on an access number by this instance",
  );
  readonly #wrongPins = this.#counter(
    "bridgeline_wrong_pins_total",
    "Wrong PINs typed by callers to this instance",
  );
  readonly #dialInsRefused = this.#counter(
    "bridgeline_dial_ins_refused_total",
    "Calls to an access number refused before the PIN prompt, by reason (prompt-full, source-full: 503; caller-wrong-pins: 403; service-wrong-pins: 503)",
    ["reason"],
  );
  readonly #atPinPrompt = this.#gauge(
    "bridgeline_pin_prompt_callers",
    "Callers at the PIN prompt now, by state (answering: answered, not yet ACKed; answered)",
    ["state"],
  );
  readonly #takeOvers = this.#counter(
    "bridgeline_conference_take_overs_total",
    "Conferences this instance took over from another, by cause (runner-silent: it fell silent past its lease; handed-over: it stopped and handed them over)",
    ["cause"],
  );
  readonly #takeOverSilence = new Histogram({
    name: "bridgeline_take_over_silence_seconds",
    help: "For each conference taken over here: from its old runner's last heartbeat to the first attendee joined in the new room (the time nobody could talk in it)",
    buckets: SETUP_BUCKETS,
    registers: [this.registry],
  });
  readonly #eventStreams = this.#gauge("bridgeline_event_streams", "Open event streams (SSE clients)");
  readonly #pool = this.#gauge(
    "bridgeline_database_pool_connections",
    "PostgreSQL pool connections: total, idle, and requests waiting for one",
    ["state"],
  );
  readonly #skippedTicks = this.#counter(
    "bridgeline_media_skipped_ticks_total",
    "Media ticks skipped after a stall, by media thread",
    ["thread"],
  );
  readonly #packetsReceived = this.#counter("bridgeline_rtp_packets_received_total", "RTP packets received", [
    "thread",
  ]);
  readonly #packetsLost = this.#counter(
    "bridgeline_rtp_packets_lost_total",
    "RTP packets lost (expected less received)",
    ["thread"],
  );
  readonly #packetsLate = this.#counter(
    "bridgeline_rtp_packets_late_total",
    "RTP packets that came too late for their playout tick",
    ["thread"],
  );
  readonly #framesConcealed = this.#counter(
    "bridgeline_rtp_frames_concealed_total",
    "20 ms frames with nothing received, filled by concealment",
    ["thread"],
  );
  readonly #packetsDropped = this.#counter(
    "bridgeline_rtp_packets_dropped_total",
    "RTP/RTCP packets received and dropped unheard, by media thread and reason (jitter_buffer_overflow counts 20 ms frames)",
    ["thread", "reason"],
  );
  readonly #jitter = this.#gauge(
    "bridgeline_rtp_jitter_seconds",
    "Interarrival jitter of the streams on a media thread now: their mean and the worst",
    ["thread", "stat"],
  );
  readonly #sipLimited = this.#counter(
    "bridgeline_sip_requests_limited_total",
    "SIP requests past their source's rate: refused 503, or dropped unanswered",
    ["outcome"],
  );
  readonly #sipTransactions = this.#gauge(
    "bridgeline_sip_server_transactions",
    "SIP server transactions kept",
  );
  readonly #sipConnectionsRefused = this.#counter(
    "bridgeline_sip_connections_refused_total",
    "SIP connections closed as accepted: as many open as allowed, from their source or in all",
  );
  readonly #sipConnectionsClosed = this.#counter(
    "bridgeline_sip_connections_closed_total",
    "SIP connections the service closed: from an untrusted source as accepted, idle, or a message left unfinished",
    ["reason"],
  );
  readonly #sipTlsFailures = this.#counter(
    "bridgeline_sip_tls_failures_total",
    "SIP over TLS handshakes that failed or timed out, and trunk certificates refused",
  );
  /** The media threads' lateness, kept between scrapes for the exposition prom-client cannot make. */
  #lateness: MediaPlaneStats["threads"] = [];

  constructor(logger: MetricsLogger) {
    this.#logger = logger;
    collectDefaultMetrics({ register: this.registry, prefix: "bridgeline_" });
    for (const name of GAUGES_NAMED_TOTAL) this.registry.removeSingleMetric(name);
    const build = readBuildInfo();
    this.#buildInfo.set({ version: build.version, commit: build.commit }, 1);
    // Every series from the start, so that rate() and increase() see the first ones.
    for (const reason of REFUSAL_REASONS) this.#callsRefused.inc({ reason }, 0);
    for (const kind of QUERY_KINDS)
      for (const cause of QUERY_FAILURES) this.#queryErrors.inc({ kind, cause }, 0);
  }

  /** Told of every call's course: give it to the telephony. */
  readonly calls: CallObserver = {
    placed: () => this.#placed.inc(),
    answered: (setupSeconds) => {
      this.#answered.inc();
      this.#setup.observe(setupSeconds);
    },
    failed: (status) => this.#failed.inc({ status_class: `${Math.floor(status / 100)}xx` }),
    received: () => this.#received.inc(),
    refusedAtLimit: () => this.#callsRefused.inc({ reason: "max-calls" }),
  };

  /** Told of each attendee call a room did not place: give it to the conferences. */
  readonly callNotPlaced = (reason: CallNotPlaced): void => {
    this.#callsRefused.inc({ reason });
  };

  /** Told of each conference this instance claims: give it to the scheduler. */
  readonly conferenceStarted = (lateSeconds: number): void => {
    this.#startLag.observe(lateSeconds);
  };

  /** Told of each due conference marked delayed here: give it to the scheduler. */
  readonly conferenceDelayed = (): void => {
    this.#delayed.inc();
  };

  /** Told of every database statement: give it to the store. */
  readonly query: QueryObserver = (kind, seconds, failure) => {
    this.#queryByKind[kind].observe(seconds);
    if (failure !== undefined) this.#queryErrors.inc({ kind, cause: failure });
  };

  /** Told of every webhook delivery that got through: give it to the webhook worker. */
  readonly webhookDelivered = (sinceQueuedSeconds: number): void => {
    this.#deliveryLag.observe(sinceQueuedSeconds);
  };

  /**
   * The certificates the TLS listeners present, by listener, as PEM: at start and after each reload.
   * One that cannot be read leaves its listener's series out.
   */
  certificates(byListener: Readonly<Record<string, string>>): void {
    this.#certificateExpiry.reset();
    for (const [listener, pem] of Object.entries(byListener)) {
      const expiry = certificateExpiry(pem);
      if (expiry !== undefined) this.#certificateExpiry.set({ listener }, expiry);
    }
  }

  /** Told of every API request answered: give it to the API. */
  readonly requestDone = (route: string, method: string, status: number, seconds: number): void => {
    this.#requests.inc({ route, method, status: String(status) });
    this.#requestSeconds.observe({ route, method }, seconds);
  };

  /** Told once per conference taken over here, when it is first heard again. */
  readonly takeOverHeard = (silentSeconds: number): void => {
    this.#takeOverSilence.observe(silentSeconds);
  };

  /** Told of every webhook attempt: give it to the webhook worker. */
  readonly webhookAttempt = (result: string, seconds: number): void => {
    this.#webhookAttempts.inc({ result });
    this.#webhookSeconds.observe(seconds);
  };

  // Trunk health (OPTIONS probing, src/telephony/trunk-probe.ts): set as each probe ends.
  readonly #trunkUp = this.#gauge(
    "bridgeline_trunk_up",
    "Whether a trunk server answers OPTIONS (1) or is down (0), by trunk URI and server; absent until known",
    ["trunk", "server"],
  );
  readonly #trunkRtt = this.#gauge(
    "bridgeline_trunk_options_rtt_seconds",
    "The round trip of the last OPTIONS a trunk server answered, while it is up",
    ["trunk", "server"],
  );
  readonly #trunkProbes = this.#counter(
    "bridgeline_trunk_probes_total",
    "OPTIONS sent to trunk servers, by outcome: ok (a final response but 408/503), unavailable (408/503), timeout, error",
    ["trunk", "server", "result"],
  );

  /** Told of every trunk probe and move: give it to the telephony. */
  readonly trunkProbes: TrunkProbeObserver = {
    probed: (trunk, server, result, rttSeconds) => {
      this.#trunkProbes.inc({ trunk, server, result });
      if (rttSeconds !== undefined) this.#trunkRtt.set({ trunk, server }, rttSeconds);
    },
    moved: (trunk, server, health) => {
      this.#trunkUp.set({ trunk, server }, health === "up" ? 1 : 0);
      // A server down has no round trip: its last one would read as current.
      if (health === "down") this.#trunkRtt.remove({ trunk, server });
    },
  };

  // Trunk pacing (src/telephony/trunk-pacing.ts): read at each scrape.
  readonly #trunkQueued = this.#gauge(
    "bridgeline_trunk_queued_calls",
    "Calls waiting their turn at a trunk (its calls-per-second or max-channels), by trunk URI",
    ["trunk"],
  );
  readonly #trunkChannels = this.#gauge(
    "bridgeline_trunk_channels",
    "Calls through a trunk now, from the INVITE sent until failed or ended, by trunk URI",
    ["trunk"],
  );

  /** Every trunk's figures; two profiles of one URI are added together, as the carrier counts them. */
  #refreshTrunkPacing(stats: readonly TrunkPacingStats[]): void {
    this.#trunkQueued.reset();
    this.#trunkChannels.reset();
    for (const { trunk, queued, channels } of stats) {
      this.#trunkQueued.inc({ trunk }, queued);
      this.#trunkChannels.inc({ trunk }, channels);
    }
  }

  /** The parts read at each scrape, once they exist. */
  connect(sources: MetricSources): void {
    this.#sources = sources;
  }

  /** The text exposition, after reading what is kept elsewhere. */
  async exposition(): Promise<string> {
    await this.#refresh();
    return `${await this.registry.metrics()}${this.#latenessExposition()}`;
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  async #refresh(): Promise<void> {
    const sources = this.#sources;
    if (sources === undefined) return;
    const { conferences } = sources;
    this.#rooms.set(conferences.runningRooms);
    const legs = conferences.legs;
    this.#legs.set({ state: "greeting" }, legs.greeting);
    this.#legs.set({ state: "joined" }, legs.joined);
    setCounter(this.#dialIns, {}, conferences.dialIns);
    setCounter(this.#wrongPins, {}, conferences.wrongPins);
    for (const [reason, count] of Object.entries(conferences.dialInsRefused))
      setCounter(this.#dialInsRefused, { reason }, count);
    for (const [cause, count] of Object.entries(conferences.takeOvers))
      setCounter(this.#takeOvers, { cause }, count);
    const atPinPrompt = conferences.atPinPrompt;
    this.#atPinPrompt.set({ state: "answering" }, atPinPrompt.held - atPinPrompt.answered);
    this.#atPinPrompt.set({ state: "answered" }, atPinPrompt.answered);
    this.#eventStreams.set(sources.eventFeed.subscribers);
    const sip = sources.sipStats();
    setCounter(this.#sipLimited, { outcome: "refused" }, sip.requestRate?.refused ?? 0);
    setCounter(this.#sipLimited, { outcome: "dropped" }, sip.requestRate?.dropped ?? 0);
    this.#sipTransactions.set(sip.serverTransactions);
    setCounter(this.#sipConnectionsRefused, {}, sip.transport.connectionsRefused);
    setCounter(this.#sipConnectionsClosed, { reason: "untrusted" }, sip.transport.connectionsUntrusted);
    setCounter(this.#sipConnectionsClosed, { reason: "idle" }, sip.transport.connectionsClosedForIdle);
    setCounter(this.#sipConnectionsClosed, { reason: "stalled" }, sip.transport.connectionsClosedForStall);
    setCounter(this.#sipTlsFailures, {}, sip.transport.tlsFailures);
    this.#refreshTrunkPacing(sources.trunkPacing());
    const pool = sources.store.pool?.();
    if (pool !== undefined) {
      this.#pool.set({ state: "total" }, pool.total);
      this.#pool.set({ state: "idle" }, pool.idle);
      this.#pool.set({ state: "waiting" }, pool.waiting);
    }
    await Promise.all([
      this.#refreshStore(sources.store),
      this.#refreshMedia(sources.mediaStats),
      this.#refreshReadiness(sources.readiness),
    ]);
  }

  async #refreshReadiness(read: MetricSources["readiness"]): Promise<void> {
    for (const [check, result] of await read()) this.#ready.set({ check }, result.passes ? 1 : 0);
  }

  async #refreshStore(store: Store): Promise<void> {
    const gauges = [this.#conferences, this.#liveAttendees, this.#notifications, this.#webhookDeliveries];
    for (const gauge of gauges) gauge.reset();
    try {
      const counts = await readStoreCounts(store);
      // States with no rows are 0, not absent, so that a query over them finds every series.
      for (const state of CONFERENCE_STATES) this.#conferences.set({ state }, 0);
      for (const state of ATTENDEE_STATES) this.#liveAttendees.set({ state }, 0);
      for (const [state, count] of counts.conferencesByState) this.#conferences.set({ state }, count);
      for (const [state, count] of counts.liveAttendeesByState) this.#liveAttendees.set({ state }, count);
      for (const [state, count] of counts.notificationsByState) this.#notifications.set({ state }, count);
      for (const [state, count] of counts.webhookDeliveriesByState)
        this.#webhookDeliveries.set({ state }, count);
    } catch (error) {
      // The database is away: those figures are left out rather than shown stale.
      this.#logger.warn({ err: error }, "metrics: the database counts could not be read");
    }
  }

  async #refreshMedia(read: () => Promise<MediaPlaneStats>): Promise<void> {
    const { threads, portPairs } = await read();
    this.#lateness = threads;
    threads.forEach((stats, index) => {
      const thread = { thread: String(index) };
      this.#rtpPortsInUse.set(thread, 2 * stats.portPairsInUse);
      this.#rtpPorts.set(thread, 2 * (portPairs[index] ?? 0));
      setCounter(this.#skippedTicks, thread, stats.skippedTicks);
      setCounter(this.#packetsReceived, thread, stats.rtpTotals.packetsReceived);
      setCounter(this.#packetsLost, thread, Math.max(0, stats.rtpTotals.packetsLost));
      setCounter(this.#packetsLate, thread, stats.rtpTotals.packetsLate);
      setCounter(this.#framesConcealed, thread, stats.rtpTotals.framesConcealed);
      const dropped = stats.rtpTotals.dropped;
      for (const [reason, count] of [
        ["unknown_payload_type", dropped.unknownPayloadType],
        ["unknown_source", dropped.unknownSource],
        ["srtp_authentication", dropped.srtpAuthentication],
        ["srtp_replay", dropped.srtpReplay],
        ["malformed", dropped.malformed],
        ["jitter_buffer_overflow", dropped.jitterBufferOverflow],
      ] as const)
        setCounter(this.#packetsDropped, { ...thread, reason }, count);
      const jitters = stats.streams.map((stream) => stream.jitterMs / 1000);
      const mean =
        jitters.length === 0 ? 0 : jitters.reduce((sum, jitter) => sum + jitter, 0) / jitters.length;
      this.#jitter.set({ ...thread, stat: "mean" }, mean);
      this.#jitter.set({ ...thread, stat: "max" }, jitters.length === 0 ? 0 : Math.max(...jitters));
    });
  }

  /**
   * The media threads count tick lateness into fixed buckets themselves (a tick may not wait for
   * the main thread); prom-client's Histogram only takes single observations, so the already
   * bucketed counts are written in the text format here.
   */
  #latenessExposition(): string {
    if (this.#lateness.length === 0) return "";
    const lines = [
      `# HELP ${LATENESS_METRIC} How late each media tick ran after its due time, by media thread`,
      `# TYPE ${LATENESS_METRIC} histogram`,
    ];
    this.#lateness.forEach(({ latenessHistogram: histogram }, index) => {
      let cumulative = 0;
      LATENESS_BUCKETS_MS.forEach((bound, bucket) => {
        cumulative += histogram.counts[bucket] ?? 0;
        lines.push(`${LATENESS_METRIC}_bucket{thread="${index}",le="${bound / 1000}"} ${cumulative}`);
      });
      lines.push(`${LATENESS_METRIC}_bucket{thread="${index}",le="+Inf"} ${histogram.count}`);
      lines.push(`${LATENESS_METRIC}_sum{thread="${index}"} ${histogram.sumMs / 1000}`);
      lines.push(`${LATENESS_METRIC}_count{thread="${index}"} ${histogram.count}`);
    });
    return `${lines.join("\n")}\n`;
  }

  #counter(name: string, help: string, labelNames: string[] = []): Counter {
    return new Counter({ name, help, labelNames, registers: [this.registry] });
  }

  #gauge(name: string, help: string, labelNames: string[] = []): Gauge {
    return new Gauge({ name, help, labelNames, registers: [this.registry] });
  }
}

/** A counter kept elsewhere (a running total that only a restart of its keeper resets), copied in. */
function setCounter(counter: Counter, labels: Record<string, string>, total: number): void {
  counter.remove(labels);
  counter.inc(labels, total);
}

/**
 * The metrics listener: plain HTTP on a port of its own, never the public HTTPS one, for a
 * Prometheus that scrapes from the private network.
 */
export async function listenForScrapes(
  metrics: ServiceMetrics,
  host: string,
  port: number,
  logger: MetricsLogger,
): Promise<{ port: number; close(): Promise<void> }> {
  const server = http.createServer((request, response) => {
    if (request.method !== "GET" || request.url?.split("?")[0] !== "/metrics") {
      response.writeHead(404, { "content-type": "text/plain" }).end("only GET /metrics here\n");
      return;
    }
    metrics.exposition().then(
      (body) => response.writeHead(200, { "content-type": metrics.contentType }).end(body),
      (error: unknown) => {
        logger.warn({ err: error }, "metrics could not be gathered");
        response.writeHead(500, { "content-type": "text/plain" }).end("metrics could not be gathered\n");
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
