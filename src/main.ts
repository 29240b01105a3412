// Long because it alone wires the service: every part is built, joined and stopped here (the guide says main.ts alone).
import http from "node:http";
import https from "node:https";
import type { AddressInfo } from "node:net";
import path from "node:path";
import type { DestinationStream } from "pino";
import { EventFeed } from "./api/event-feed.js";
import { browserIceServers } from "./api/ice-servers.js";
import { limitListener } from "./api/listener-limits.js";
import { type ReadinessChecks, runReadinessChecks } from "./api/routes/health.js";
import { buildApi } from "./api/server.js";
import { systemClock } from "./clock.js";
import { ConferenceRuntime } from "./conference/conference-runtime.js";
import { type Config, ConfigError, loadConfig, type UnknownVariable, unknownVariables } from "./config.js";
import type { Clock } from "./domain/clock.js";
import type { CallingPolicy } from "./domain/phone.js";
import { createLogger } from "./log.js";
import { listenForScrapes, ServiceMetrics } from "./metrics.js";
import { fileDelivery, smtpDelivery } from "./notify/delivery.js";
import { notificationWorker } from "./notify/mail-deliverer.js";
import { Scheduler } from "./scheduler/scheduler.js";
import { attemptCounts } from "./store/attempt-counts.js";
import { conferenceStore } from "./store/conference-store.js";
import {
  openStore,
  pendingMigrations,
  pingDatabase,
  type QueryObserver,
  type Store,
  unreachableReason,
} from "./store/database.js";
import { notificationOutbox } from "./store/notification-outbox.js";
import { schedulerStore } from "./store/scheduler-store.js";
import { webhookOutbox } from "./store/webhook-outbox.js";
import { speak } from "./telephony/media/speech.js";
import { Telephony } from "./telephony/telephony.js";
import { DEFAULT_PROBE_SETTINGS, trunksReadiness } from "./telephony/trunk-probe.js";
import {
  certificateProblem,
  loadSipTlsMaterial,
  loadStirTrustAnchors,
  loadTlsMaterial,
  type TlsMaterial,
} from "./tls.js";
import { webhookWorker } from "./webhooks/http-deliverer.js";

export interface RunningService {
  httpsPort: number;
  httpPort: number | null;
  /** The metrics listener's port; null without BRIDGELINE_METRICS_PORT. */
  metricsPort: number | null;
  /** The SIP port (UDP and TCP). */
  sipPort: number;
  telephony: Telephony;
  conferences: ConferenceRuntime;
  /**
   * Reads the certificate files again (SIGHUP): the HTTPS and SIP TLS listeners present the new pairs
   * to connections made after this. When a new pair cannot be used, nothing changes and the reason is
   * logged; resolves with whether the new pairs were taken.
   */
  reloadCertificates(): Promise<boolean>;
  close(): Promise<void>;
}

/** A start that cannot go on, for a reason the operator can act on: printed as it is, no stack. */
export class StartupError extends Error {
  override name = "StartupError";
}

export interface ServiceOptions {
  /** Lets a room's mix be made to fail on purpose (tests of fault isolation). */
  readonly allowMediaFaultInjection?: boolean;
  /** The clock that schedules webhook attempts (tests of the day-long retry schedule). */
  readonly webhookClock?: () => Date;
  /** What SIP's timers run on (tests of what happens after 64*T1). */
  readonly sipClock?: Clock;
  /** How often the instance renews its heartbeat (tests of instances learning of each other). */
  readonly heartbeatIntervalMs?: number;
  /** BRIDGELINE_* variables set that nothing reads: each is logged as a warning. */
  readonly unknownVariables?: readonly UnknownVariable[];
  /** scrypt's cost for new password hashes (tests lower it: hashing at a deployment's cost is slow). */
  readonly passwordCost?: number;
}

/**
 * Closes the plain-HTTP listener once the API has closed (its event streams ended with it): their
 * keep-alive connections are idle only then, and would otherwise hold the close until they time
 * out (Fastify closes its own listener's idle connections, not this one's).
 */
function closePlainListener(plain: http.Server): Promise<void> {
  return new Promise<void>((resolve) => {
    plain.close(() => resolve());
    plain.closeIdleConnections();
  });
}

/** Wires the store, the API and the listeners; the one place that knows them all. */
export async function startService(
  config: Config,
  logDestination?: DestinationStream,
  options: ServiceOptions = {},
): Promise<RunningService> {
  const logger = createLogger(config.logLevel, logDestination);
  for (const { name, likely } of options.unknownVariables ?? [])
    logger.warn({ variable: name, likely }, unknownVariableWarning(name, likely));
  const metrics = new ServiceMetrics(logger.child({ component: "metrics" }));
  const store = await openStoreWhenReachable(config, logger, metrics.query);
  let tls: TlsMaterial;
  let sipTls: ReturnType<typeof loadSipTlsMaterial>;
  let stirTrustAnchors: string | undefined;
  try {
    tls = await loadTlsMaterial(config);
    sipTls = loadSipTlsMaterial(config, tls);
    stirTrustAnchors = loadStirTrustAnchors(config);
  } catch (error) {
    await store.close();
    throw error;
  }
  metrics.certificates({ https: tls.cert, sip: sipTls.material.cert });
  const sip = config.sip;
  const sipTlsPort = sip.tlsPort ?? (sip.port === 0 ? 0 : sip.port + 1);
  let telephony: Telephony;
  try {
    telephony = await Telephony.start({
      bindAddress: sip.bindAddress,
      sipPort: sip.port,
      publicAddress: sip.publicAddress,
      trunk: sip.trunk,
      callerId: sip.callerId,
      routes: sip.routes,
      rtpPorts: sip.rtpPorts,
      ringTimeoutMs: sip.ringTimeoutSeconds * 1000,
      dnsServers: sip.dnsServers,
      serverTimeoutMs: sip.serverTimeoutSeconds * 1000,
      trunkProbe: { ...DEFAULT_PROBE_SETTINGS, intervalMs: Math.round(sip.trunkProbeSeconds * 1000) },
      probeObserver: metrics.trunkProbes,
      mediaTimeoutMs: sip.mediaTimeoutSeconds * 1000,
      mediaThreads: sip.mediaThreads,
      mixTalkers: sip.mixTalkers,
      requestRatePerSource: sip.requestRatePerSource,
      maxCalls: sip.maxCalls,
      connections: {
        perSource: sip.connections.perSource,
        total: sip.connections.total,
        idleTimeoutMs: sip.connections.idleSeconds * 1000,
        tlsHandshakeTimeoutMs: sip.connections.tlsHandshakeSeconds * 1000,
      },
      allowMediaFaultInjection: options.allowMediaFaultInjection,
      sipClock: options.sipClock,
      clock: systemClock,
      tls: { port: sipTlsPort, ...sipTls.material },
      tlsCa: sipTls.ca,
      trustedSources: sip.trusted,
      untrustedRequests: sip.untrusted,
      srtp: {
        placed: sip.srtp,
        dialIn: sip.dialInSrtp,
        keysOverPlainSignalling: sip.srtpKeysOverPlainSip,
        suites: sip.srtpSuites,
      },
      codecs: sip.codecs,
      stirShaken: stirTrustAnchors === undefined ? undefined : { trustAnchors: stirTrustAnchors },
      logger: logger.child({ component: "telephony" }),
      observer: metrics.calls,
    });
  } catch (error) {
    await store.close();
    throw (
      portInUse(
        error,
        { [sip.port]: "BRIDGELINE_SIP_PORT", [sipTlsPort]: "BRIDGELINE_SIP_TLS_PORT" },
        SIP_PORTS_ON_ONE_HOST,
      ) ?? error
    );
  }
  if (sip.trunk === null && sip.routes.length === 0) {
    logger.warn("no SIP trunk configured (BRIDGELINE_SIP_TRUNK): calls cannot be placed");
  }
  const callingPolicy: CallingPolicy = {
    deniedPrefixes: config.conferences.deniedNumberPrefixes,
    maxCallsInProgressPerUser: config.conferences.maxCallsInProgressPerUser,
    maxCallsPerHourPerUser: config.conferences.maxCallsPerHourPerUser,
  };
  const conferences = new ConferenceRuntime({
    telephone: telephony,
    store: conferenceStore(store),
    instance: config.instanceId,
    speak,
    dataDir: config.dataDir,
    accessNumbers: sip.accessNumbers,
    acceptsBrowsers: config.browserJoin,
    callingPolicy,
    emptyPeriods: {
      emptyGraceMs: config.conferences.emptyGraceSeconds * 1000,
      noShowMs: config.conferences.noShowMinutes * 60_000,
    },
    pinFailures: {
      limit: config.conferences.wrongPinLimit,
      windowMs: config.conferences.wrongPinWindowMinutes * 60_000,
    },
    serviceWrongPins: { limit: config.conferences.wrongPinsPerMinute, windowMs: 60_000 },
    pinPrompt: {
      total: config.conferences.pinPromptPlaces,
      perSource: config.conferences.pinPromptPlacesPerSource,
    },
    attempts: attemptCounts(store),
    // Where another instance may take a conference over, its room falls silent once its lease is
    // not renewed in time.
    fenceAudio:
      store.dialect === "postgres" ? { leaseMs: config.conferences.leaseSeconds * 1000 } : undefined,
    onTakeOverHeard: (seconds) => metrics.takeOverHeard(seconds),
    onCallNotPlaced: metrics.callNotPlaced,
    logger: logger.child({ component: "conferences" }),
    clock: systemClock,
  });
  const scheduler = new Scheduler({
    store: schedulerStore(store),
    runner: config.instanceId,
    logger: logger.child({ component: "scheduler" }),
    clock: systemClock,
    sipUri: telephony.sipUri,
    // A caller carried here from another instance comes from that instance's address.
    onOtherInstances: (sipUris) => telephony.trustInstances(sipUris),
    heartbeatIntervalMs: options.heartbeatIntervalMs,
    leaseMs: config.conferences.leaseSeconds * 1000,
    takeOverWithinMs: config.conferences.takeOverWithinMinutes * 60_000,
    room: () => {
      const limit = config.conferences.maxParticipants;
      return limit === null ? null : limit - conferences.participants;
    },
    startConference: (conference, attendees, lease, validForMs) =>
      conferences.run(conference, attendees, lease, validForMs),
    takeOverConference: ({ conference, attendees, lease, callBack, redial, recovery }, validForMs) =>
      conferences.takeOver(conference, attendees, lease, { callBack, redial, recovery, validForMs }),
    onLeases: (held, validForMs, askedAt) => conferences.leasesRenewed(held, validForMs, askedAt),
    onStarted: metrics.conferenceStarted,
    onDelayed: metrics.conferenceDelayed,
  });
  const mail = config.mail;
  const notifications = notificationWorker({
    queue: notificationOutbox(store),
    worker: config.instanceId,
    delivery:
      mail.smtpUrl === null ? fileDelivery(path.join(config.dataDir, "mail")) : smtpDelivery(mail.smtpUrl),
    settings: {
      from: mail.from,
      accessNumbers: sip.accessNumbers,
      publicUrl: config.publicUrl,
      supportEmail: mail.supportEmail,
      supportPhone: mail.supportPhone,
    },
    retrySeconds: mail.retrySeconds,
    logger: logger.child({ component: "notifications" }),
  });
  const webhookDestinations = { allowPrivate: config.webhooks.allowPrivate };
  const webhooks = webhookWorker({
    queue: webhookOutbox(store),
    worker: config.instanceId,
    destinations: webhookDestinations,
    timeoutMs: config.webhooks.timeoutSeconds * 1000,
    retryBaseMs: config.webhooks.retrySeconds * 1000,
    clock: options.webhookClock,
    logger: logger.child({ component: "webhooks" }),
    onAttempt: metrics.webhookAttempt,
    onDelivered: metrics.webhookDelivered,
  });
  const eventFeed = new EventFeed(store, logger, { maxStreams: config.maxEventStreams });
  const readiness: ReadinessChecks = {
    database: async () => {
      try {
        await pingDatabase(store);
        return undefined;
      } catch (error) {
        return databaseProblem(config, error);
      }
    },
    migrations: async () => {
      const pending = await pendingMigrations(store);
      return pending.length === 0 ? undefined : `not applied: ${pending.join(", ")}`;
    },
    sip: async () => (telephony.listening ? undefined : "SIP sockets closed"),
    // The probed trunks: a down one named while another can carry calls (BRIDGELINE_READY_TRUNKS).
    trunks: async () => {
      const { state, text } = trunksReadiness(telephony.trunkHealth(), sip.readyTrunks);
      return state === "ok" ? undefined : state === "degraded" ? { degraded: text } : text;
    },
    // Every media thread answers a round trip (a stuck or dead one does not, in time).
    media: async () => {
      await telephony.media.stats();
      return undefined;
    },
  };
  metrics.connect({
    store,
    conferences,
    mediaStats: () => telephony.media.stats(),
    eventFeed,
    sipStats: () => telephony.sipStats,
    trunkPacing: () => telephony.trunkPacing(),
    readiness: () => runReadinessChecks(readiness),
  });
  let plainServer: http.Server | null = null;
  let httpsServer: https.Server | undefined;
  const app = await buildApi({
    store,
    logger,
    failedLoginLimit: config.failedLoginLimit,
    signupLimit: config.signupLimit,
    throttleWindowSeconds: config.throttleWindowSeconds,
    trustedProxies: config.trustedProxies,
    dataDir: config.dataDir,
    accessNumbers: sip.accessNumbers,
    callingPolicy,
    eventFeed,
    onRequestDone: metrics.requestDone,
    passwordCost: options.passwordCost,
    webhookDestinations,
    browserJoins: config.browserJoin
      ? {
          join: (request) => conferences.joinFromBrowser(request),
          participant: (token) => conferences.browserParticipant(token),
          leave: (token) => conferences.leaveBrowser(token),
        }
      : undefined,
    // Fresh TURN credentials for each page.
    iceServers: () => browserIceServers(config.turn, new Date()),
    readiness,
    serverFactory: (handler) => {
      if (config.httpPort !== null)
        plainServer = limitListener(http.createServer(handler), config.maxConnections);
      // TLS 1.2 is the floor: SSL 3.0 and TLS 1.0/1.1 are broken (decisions.md, Transport).
      httpsServer = limitListener(
        https.createServer({ cert: tls.cert, key: tls.key, minVersion: "TLSv1.2" }, handler),
        config.maxConnections,
      );
      return httpsServer;
    },
  });
  /**
   * Ends the conferences running here, or, with another instance alive and hand-over on, hands them
   * over: the rooms given up first (hung up, nothing written), then their leases released in one
   * transaction, so that no other instance calls an attendee back while its call here is still up.
   * Were the release to fail, the others take the conferences over once the leases run out.
   */
  const stopConferences = async () => {
    const leases = conferences.leases;
    const handOver = config.conferences.handOverOnStop ?? store.dialect === "postgres";
    if (!handOver || scheduler.otherInstances === 0 || leases.length === 0) {
      await conferences.close();
      return;
    }
    await conferences.handOver();
    await scheduler.handOver(leases).catch((error: unknown) => {
      logger.warn(
        { err: error },
        "conferences not handed over: the other instances take them once their leases run out",
      );
    });
  };
  let metricsListener: Awaited<ReturnType<typeof listenForScrapes>> | undefined;
  try {
    await app.listen({ port: config.httpsPort, host: config.host });
    const httpsPort = (app.server.address() as AddressInfo).port;
    let httpPort: number | null = null;
    const plain = plainServer as http.Server | null;
    if (plain && config.httpPort !== null) {
      await new Promise<void>((resolve, reject) => {
        plain.once("error", reject);
        plain.listen(config.httpPort as number, config.host, () => resolve());
      });
      httpPort = (plain.address() as AddressInfo).port;
    }
    if (config.metricsPort !== null)
      metricsListener = await listenForScrapes(metrics, config.host, config.metricsPort, logger);
    await scheduler.start();
    await notifications.start();
    await webhooks.start();
    const sipPort = telephony.sipPort;
    logger.info(
      {
        httpsPort,
        httpPort,
        sipPort,
        sipTlsPort: telephony.sipTlsPort,
        metricsPort: metricsListener?.port ?? null,
        store: store.dialect,
        dataDir: config.dataDir,
      },
      "bridgeline started",
    );
    return {
      httpsPort,
      httpPort,
      metricsPort: metricsListener?.port ?? null,
      sipPort,
      telephony,
      conferences,
      async reloadCertificates() {
        let next: { https: TlsMaterial; sip: TlsMaterial };
        try {
          const reread = await loadTlsMaterial(config);
          next = { https: reread, sip: loadSipTlsMaterial(config, reread).material };
        } catch (error) {
          logger.error(`certificates not reloaded, the ones in use are kept: ${(error as Error).message}`);
          return false;
        }
        const httpsProblem = certificateProblem(next.https);
        const sipProblem = certificateProblem(next.sip);
        const problem =
          httpsProblem !== undefined
            ? `HTTPS: ${httpsProblem}`
            : sipProblem !== undefined
              ? `SIP TLS: ${sipProblem}`
              : undefined;
        const files = { certificate: config.tlsCertFile, sipCertificate: config.sip.tlsCertFile };
        if (problem !== undefined) {
          logger.error(files, `certificates not reloaded, the ones in use are kept: ${problem}`);
          return false;
        }
        try {
          telephony.setTlsCertificate(next.sip);
          httpsServer?.setSecureContext({
            cert: next.https.cert,
            key: next.https.key,
            minVersion: "TLSv1.2",
          });
        } catch (error) {
          logger.error(
            files,
            `certificates not reloaded, the ones in use are kept: ${(error as Error).message}`,
          );
          return false;
        }
        metrics.certificates({ https: next.https.cert, sip: next.sip.cert });
        logger.info(files, "certificates reloaded: new connections get them");
        return true;
      },
      async close() {
        // The leases are renewed until the scheduler stops: the conferences go first, not after
        // deliveries in flight (their timeouts are longer than a lease).
        await Promise.all([scheduler.stop().then(stopConferences), notifications.stop(), webhooks.stop()]);
        await Promise.all([
          telephony.close(),
          app.close().then(() => (plain ? closePlainListener(plain) : undefined)),
          metricsListener?.close(),
        ]);
        await store.close();
        logger.info("bridgeline stopped");
      },
    };
  } catch (error) {
    await Promise.all([scheduler.stop(), notifications.stop(), webhooks.stop()]);
    await conferences.close();
    await app.close();
    await metricsListener?.close();
    await telephony.close();
    await store.close();
    throw (
      portInUse(error, {
        [config.httpsPort]: "BRIDGELINE_HTTPS_PORT",
        ...(config.metricsPort === null ? {} : { [config.metricsPort]: "BRIDGELINE_METRICS_PORT" }),
        ...(config.httpPort === null ? {} : { [config.httpPort]: "BRIDGELINE_HTTP_PORT" }),
      }) ?? error
    );
  }
}

/**
 * Opens the store, waiting for PostgreSQL while it cannot be reached (usual when everything boots
 * together): a log line per attempt, 2 s apart and doubling to 15 s, for BRIDGELINE_DATABASE_WAIT_SECONDS.
 */
async function openStoreWhenReachable(
  config: Config,
  logger: ReturnType<typeof createLogger>,
  onQuery: QueryObserver,
): Promise<Store> {
  const giveUpAt = Date.now() + config.databaseWaitSeconds * 1000;
  let delayMs = 2000;
  for (;;) {
    try {
      // Two thirds of the lease: a paused instance's open transaction lets go of its conference's
      // row before another instance looks for it.
      const idleInTransactionMs = Math.ceil((config.conferences.leaseSeconds * 1000 * 2) / 3);
      return await openStore({ ...config, idleInTransactionMs, onQuery }, (error) =>
        logger.warn({ err: error }, "idle database connection failed; the pool replaces it"),
      );
    } catch (error) {
      const problem = databaseProblem(config, error);
      if (problem === undefined) throw error;
      const remainingMs = giveUpAt - Date.now();
      if (remainingMs <= 0)
        throw new StartupError(
          `${problem}; gave up after ${config.databaseWaitSeconds} s (BRIDGELINE_DATABASE_WAIT_SECONDS)`,
        );
      const waitMs = Math.min(delayMs, remainingMs);
      logger.warn(`${problem}; retrying in ${Math.ceil(waitMs / 100) / 10} s`);
      await new Promise((resolve) => setTimeout(resolve, waitMs));
      delayMs = Math.min(2 * delayMs, 15_000);
    }
  }
}

/** "PostgreSQL at host:port not reachable: connection refused", when `error` says so. */
function databaseProblem(config: Config, error: unknown): string | undefined {
  const reason = unreachableReason(error);
  if (reason === undefined || config.databaseUrl === null) return undefined;
  const url = new URL(config.databaseUrl);
  return `PostgreSQL at ${url.hostname}:${url.port || 5432} not reachable: ${reason}`;
}

/**
 * Why a SIP port is often taken: another instance on the host, whose SIP over TLS listener took the
 * port after its SIP port (the default), or whose SIP port is the one after ours.
 */
const SIP_PORTS_ON_ONE_HOST =
  "SIP over TLS listens on the SIP port + 1 unless BRIDGELINE_SIP_TLS_PORT is set, so instances on one host need SIP ports at least 2 apart, or a BRIDGELINE_SIP_TLS_PORT each";

/** A listener's EADDRINUSE as the setting to change, and why it may be taken (`note`). */
function portInUse(
  error: unknown,
  settings: Readonly<Record<number, string>>,
  note?: string,
): StartupError | undefined {
  const { code, port } = (error ?? {}) as { code?: unknown; port?: unknown };
  if (code !== "EADDRINUSE") return undefined;
  const setting = typeof port === "number" ? settings[port] : undefined;
  const change = setting === undefined ? "another process holds it" : `set ${setting} to a free port`;
  return new StartupError(
    `port ${typeof port === "number" ? port : "?"} is already in use: ${change}${note === undefined ? "" : ` (${note})`}`,
  );
}

function unknownVariableWarning(name: string, likely: string | undefined): string {
  return `${name} is not a Bridgeline setting and is ignored${likely === undefined ? "" : `: did you mean ${likely}?`}`;
}

/** `npm start`: configuration from the environment, graceful stop on SIGINT/SIGTERM. */
export async function runFromEnvironment(): Promise<void> {
  const unknown = unknownVariables();
  let config: Config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`bridgeline: configuration error: ${error.message}\n`);
      for (const { name, likely } of unknown)
        process.stderr.write(`bridgeline: ${unknownVariableWarning(name, likely)}\n`);
      process.exit(1);
    }
    throw error;
  }
  let service: RunningService;
  try {
    service = await startService(config, undefined, { unknownVariables: unknown });
  } catch (error) {
    if (error instanceof StartupError) {
      process.stderr.write(`bridgeline: ${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    process.stderr.write(`bridgeline: ${signal} received, shutting down\n`);
    service.close().then(
      () => process.exit(0),
      (error: unknown) => {
        process.stderr.write(`bridgeline: shutdown failed: ${String(error)}\n`);
        process.exit(1);
      },
    );
  };
  // certbot's deploy hook, or cert-manager's, sends SIGHUP once the new pair is written.
  process.on("SIGHUP", () => void service.reloadCertificates());
  process.on("SIGINT", () => stop("SIGINT"));
  process.on("SIGTERM", () => stop("SIGTERM"));
  // A promise nobody awaited that failed: the operation it belonged to is lost, the rest is sound.
  process.on("unhandledRejection", (reason) => {
    process.stderr.write(
      `bridgeline: an operation failed and nothing handled it (the service goes on): ${reason instanceof Error ? (reason.stack ?? reason.message) : String(reason)}\n`,
    );
  });
  // An exception thrown out of the main thread's own code leaves its state unknown: stop cleanly,
  // hanging up the calls, and exit non-zero so a supervisor restarts it. (Media faults never reach
  // here: a room's or a media thread's failure ends only what it ran.)
  process.on("uncaughtException", (error) => {
    process.stderr.write(`bridgeline: fatal error, stopping: ${error.stack ?? error.message}\n`);
    if (stopping) process.exit(1);
    stopping = true;
    const forced = setTimeout(() => process.exit(1), 10_000);
    forced.unref();
    service.close().finally(() => process.exit(1));
  });
}
