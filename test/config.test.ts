import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { configTable, README, withTable } from "../scripts/config-table.js";
import { ConfigError, loadConfig, unknownVariables } from "../src/config.js";

const PROJECT_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

describe("loadConfig", () => {
  it("has defaults for every setting", () => {
    assert.deepEqual(loadConfig({}), {
      dataDir: path.resolve("./data"),
      databaseUrl: null,
      databaseWaitSeconds: 60,
      databaseTimeoutSeconds: 5,
      host: "0.0.0.0",
      httpsPort: 8443,
      httpPort: null,
      metricsPort: null,
      trustedProxies: null,
      tlsCertFile: null,
      tlsKeyFile: null,
      logLevel: "info",
      failedLoginLimit: 10,
      signupLimit: 20,
      throttleWindowSeconds: 900,
      maxConnections: 10_000,
      maxEventStreams: 5_000,
      publicUrl: new URL(`https://${os.hostname()}:8443`).origin,
      browserJoin: true,
      turn: { urls: [], secret: null, ttlSeconds: 3600 },
      instanceId: `${os.hostname()}:${path.resolve("./data")}`,
      sip: {
        bindAddress: "0.0.0.0",
        port: 5060,
        publicAddress: null,
        trunk: null,
        callerId: "bridgeline",
        routes: [],
        rtpPorts: { min: 10000, max: 20000 },
        ringTimeoutSeconds: 45,
        mediaTimeoutSeconds: 30,
        mediaThreads: os.availableParallelism(),
        mixTalkers: 3,
        accessNumbers: [],
        tlsPort: null,
        tlsCertFile: null,
        tlsKeyFile: null,
        tlsCaFile: null,
        stirCaFile: null,
        trusted: null,
        untrusted: "refuse",
        srtp: "optional",
        dialInSrtp: "optional",
        srtpKeysOverPlainSip: false,
        srtpSuites: ["AES_CM_128_HMAC_SHA1_80", "AES_CM_128_HMAC_SHA1_32"],
        codecs: ["opus", "G722", "PCMU", "PCMA"],
        requestRatePerSource: 50,
        maxCalls: 2000,
        connections: { perSource: 16, total: 2048, idleSeconds: 60, tlsHandshakeSeconds: 10 },
        dnsServers: null,
        serverTimeoutSeconds: 4,
        trunkProbeSeconds: 0,
        readyTrunks: "any",
      },
      mail: {
        smtpUrl: null,
        from: "Bridgeline <bridgeline@localhost>",
        supportEmail: "bridgeline@localhost",
        supportPhone: null,
        retrySeconds: 30,
      },
      conferences: {
        deniedNumberPrefixes: [],
        maxCallsInProgressPerUser: 250,
        maxCallsPerHourPerUser: 1000,
        emptyGraceSeconds: 120,
        noShowMinutes: 60,
        maxParticipants: null,
        leaseSeconds: 3,
        takeOverWithinMinutes: 5,
        handOverOnStop: null,
        wrongPinLimit: 10,
        wrongPinWindowMinutes: 15,
        wrongPinsPerMinute: 60,
        pinPromptPlaces: 100,
        pinPromptPlacesPerSource: 10,
      },
      webhooks: { allowPrivate: false, timeoutSeconds: 15, retrySeconds: 5 },
    });
  });

  it("treats empty variables as unset", () => {
    const empty = Object.fromEntries(
      [
        "BRIDGELINE_DATA_DIR",
        "BRIDGELINE_DATABASE_URL",
        "BRIDGELINE_HOST",
        "BRIDGELINE_HTTPS_PORT",
        "BRIDGELINE_HTTP_PORT",
        "BRIDGELINE_PUBLIC_URL",
        "BRIDGELINE_BROWSER_JOIN",
        "BRIDGELINE_TURN_URLS",
        "BRIDGELINE_TURN_SECRET",
        "BRIDGELINE_TURN_TTL_SECONDS",
        "BRIDGELINE_TRUSTED_PROXIES",
        "BRIDGELINE_TLS_CERT",
        "BRIDGELINE_TLS_KEY",
        "BRIDGELINE_LOG_LEVEL",
        "BRIDGELINE_FAILED_LOGIN_LIMIT",
        "BRIDGELINE_SIGNUP_LIMIT",
        "BRIDGELINE_THROTTLE_WINDOW_SECONDS",
        "BRIDGELINE_INSTANCE_ID",
        "BRIDGELINE_SIP_ADDRESS",
        "BRIDGELINE_SIP_PORT",
        "BRIDGELINE_PUBLIC_ADDRESS",
        "BRIDGELINE_SIP_TRUNK",
        "BRIDGELINE_SIP_TRUNK_USER",
        "BRIDGELINE_SIP_TRUNK_PASSWORD",
        "BRIDGELINE_SIP_REGISTRAR",
        "BRIDGELINE_SIP_REGISTER_EXPIRES",
        "BRIDGELINE_CALLER_ID",
        "BRIDGELINE_SIP_ROUTES",
        "BRIDGELINE_RTP_PORTS",
        "BRIDGELINE_RING_TIMEOUT_SECONDS",
        "BRIDGELINE_MEDIA_TIMEOUT_SECONDS",
        "BRIDGELINE_ACCESS_NUMBERS",
        "BRIDGELINE_SIP_TLS_PORT",
        "BRIDGELINE_SIP_TLS_CERT",
        "BRIDGELINE_SIP_TLS_KEY",
        "BRIDGELINE_SIP_TLS_CA",
        "BRIDGELINE_STIR_CA_FILE",
        "BRIDGELINE_SIP_TRUSTED",
        "BRIDGELINE_SIP_UNTRUSTED",
        "BRIDGELINE_SRTP",
        "BRIDGELINE_DIAL_IN_SRTP",
        "BRIDGELINE_SRTP_KEYS_OVER_PLAIN_SIP",
        "BRIDGELINE_SRTP_SUITES",
        "BRIDGELINE_CODECS",
        "BRIDGELINE_DNS_SERVERS",
        "BRIDGELINE_SIP_SERVER_TIMEOUT_SECONDS",
        "BRIDGELINE_SIP_REQUEST_RATE",
        "BRIDGELINE_SIP_MAX_CALLS",
        "BRIDGELINE_SIP_CONNECTIONS_PER_SOURCE",
        "BRIDGELINE_SIP_MAX_CONNECTIONS",
        "BRIDGELINE_SIP_IDLE_SECONDS",
        "BRIDGELINE_SIP_TLS_HANDSHAKE_SECONDS",
        "BRIDGELINE_EMPTY_GRACE_SECONDS",
        "BRIDGELINE_MAX_CALLS_IN_PROGRESS_PER_USER",
        "BRIDGELINE_MAX_CALLS_PER_HOUR_PER_USER",
        "BRIDGELINE_NO_SHOW_MINUTES",
        "BRIDGELINE_MAX_PARTICIPANTS",
        "BRIDGELINE_CONFERENCE_LEASE_SECONDS",
        "BRIDGELINE_TAKE_OVER_WITHIN_MINUTES",
        "BRIDGELINE_HAND_OVER_ON_STOP",
        "BRIDGELINE_WRONG_PIN_LIMIT",
        "BRIDGELINE_WRONG_PIN_WINDOW_MINUTES",
        "BRIDGELINE_WRONG_PINS_PER_MINUTE",
        "BRIDGELINE_PIN_PROMPT_PLACES",
        "BRIDGELINE_PIN_PROMPT_PLACES_PER_SOURCE",
        "BRIDGELINE_WEBHOOK_ALLOW_PRIVATE",
        "BRIDGELINE_WEBHOOK_TIMEOUT_SECONDS",
        "BRIDGELINE_WEBHOOK_RETRY_SECONDS",
      ].map((name) => [name, ""]),
    );
    assert.deepEqual(loadConfig(empty), loadConfig({}));
  });

  it("reads every variable", () => {
    const config = loadConfig({
      BRIDGELINE_DATA_DIR: "/var/lib/bridgeline",
      BRIDGELINE_DATABASE_URL: "postgresql://bridgeline@db.internal:5432/bridgeline",
      BRIDGELINE_HOST: "127.0.0.1",
      BRIDGELINE_HTTPS_PORT: "443",
      BRIDGELINE_HTTP_PORT: "0",
      BRIDGELINE_TRUSTED_PROXIES: "10.0.0.0/8",
      BRIDGELINE_TLS_CERT: "/etc/bridgeline/cert.pem",
      BRIDGELINE_TLS_KEY: "/etc/bridgeline/key.pem",
      BRIDGELINE_LOG_LEVEL: "warn",
      BRIDGELINE_FAILED_LOGIN_LIMIT: "5",
      BRIDGELINE_SIGNUP_LIMIT: "7",
      BRIDGELINE_THROTTLE_WINDOW_SECONDS: "60",
      BRIDGELINE_MAX_CONNECTIONS: "500",
      BRIDGELINE_MAX_EVENT_STREAMS: "200",
      BRIDGELINE_INSTANCE_ID: "bridgeline-2",
      BRIDGELINE_DATABASE_WAIT_SECONDS: "90",
      BRIDGELINE_DATABASE_TIMEOUT_SECONDS: "3",
      BRIDGELINE_METRICS_PORT: "9464",
      BRIDGELINE_PUBLIC_URL: "https://Conference.Example.com/",
      BRIDGELINE_BROWSER_JOIN: "false",
      BRIDGELINE_TURN_URLS:
        "stun:turn.example.com, turn:turn.example.com:3478?transport=udp,turns:[2001:db8::3]:5349?transport=tcp",
      BRIDGELINE_TURN_SECRET: "coturn-shared-secret",
      BRIDGELINE_TURN_TTL_SECONDS: "600",
      BRIDGELINE_DENIED_NUMBERS: "+1876, +1 (809)",
      BRIDGELINE_SIP_ADDRESS: "10.0.0.5",
      BRIDGELINE_SIP_PORT: "5080",
      BRIDGELINE_PUBLIC_ADDRESS: "203.0.113.7",
      BRIDGELINE_SIP_TRUNK: "sip:trunk.example:5060;transport=tcp",
      BRIDGELINE_SIP_TRUNK_USER: "acct",
      BRIDGELINE_SIP_TRUNK_PASSWORD: "secret",
      BRIDGELINE_SIP_REGISTRAR: "sip:registrar.example",
      BRIDGELINE_SIP_REGISTER_EXPIRES: "600",
      BRIDGELINE_CALLER_ID: "+16045550100",
      BRIDGELINE_SIP_ROUTES: "+1778=sip:carrier-b.example:5060;transport=tcp;+1604555=sip:127.0.0.1:5071",
      BRIDGELINE_RTP_PORTS: "20000-20999",
      BRIDGELINE_RING_TIMEOUT_SECONDS: "30",
      BRIDGELINE_MEDIA_TIMEOUT_SECONDS: "10",
      BRIDGELINE_MEDIA_THREADS: "0",
      BRIDGELINE_MIX_TALKERS: "5",
      BRIDGELINE_ACCESS_NUMBERS: "+16045550199, (778) 555-0100",
      BRIDGELINE_SMTP_URL: "smtps://mailer:secret@mail.example.com:465",
      BRIDGELINE_MAIL_FROM: "Example Calls <calls@example.com>",
      BRIDGELINE_SUPPORT_EMAIL: "help@example.com",
      BRIDGELINE_SUPPORT_PHONE: "+1 604 555 0111",
      BRIDGELINE_MAIL_RETRY_SECONDS: "5",
      BRIDGELINE_SIP_TLS_PORT: "5071",
      BRIDGELINE_SIP_TLS_CERT: "/etc/bridgeline/sip-cert.pem",
      BRIDGELINE_SIP_TLS_KEY: "/etc/bridgeline/sip-key.pem",
      BRIDGELINE_SIP_TLS_CA: "/etc/bridgeline/carrier-ca.pem",
      BRIDGELINE_STIR_CA_FILE: "/etc/bridgeline/sti-ca.pem",
      BRIDGELINE_SIP_TRUSTED: "203.0.113.0/24, 198.51.100.7,2001:db8::/32",
      BRIDGELINE_SIP_UNTRUSTED: "drop",
      BRIDGELINE_SRTP: "required",
      BRIDGELINE_DIAL_IN_SRTP: "off",
      BRIDGELINE_SRTP_KEYS_OVER_PLAIN_SIP: "true",
      BRIDGELINE_SRTP_SUITES: "AEAD_AES_256_GCM, AES_CM_128_HMAC_SHA1_32, AES_256_CM_HMAC_SHA1_80",
      BRIDGELINE_CODECS: "g722, PCMU",
      BRIDGELINE_DNS_SERVERS: "10.0.0.53, 127.0.0.1:5353",
      BRIDGELINE_SIP_SERVER_TIMEOUT_SECONDS: "2",
      BRIDGELINE_TRUNK_PROBE_SECONDS: "0.5",
      BRIDGELINE_READY_TRUNKS: "all",
      BRIDGELINE_SIP_REQUEST_RATE: "200",
      BRIDGELINE_SIP_MAX_CALLS: "500",
      BRIDGELINE_SIP_CONNECTIONS_PER_SOURCE: "8",
      BRIDGELINE_SIP_MAX_CONNECTIONS: "1000",
      BRIDGELINE_SIP_IDLE_SECONDS: "120",
      BRIDGELINE_SIP_TLS_HANDSHAKE_SECONDS: "5",
      BRIDGELINE_EMPTY_GRACE_SECONDS: "30",
      BRIDGELINE_MAX_CALLS_IN_PROGRESS_PER_USER: "40",
      BRIDGELINE_MAX_CALLS_PER_HOUR_PER_USER: "200",
      BRIDGELINE_NO_SHOW_MINUTES: "15",
      BRIDGELINE_MAX_PARTICIPANTS: "200",
      BRIDGELINE_CONFERENCE_LEASE_SECONDS: "10",
      BRIDGELINE_TAKE_OVER_WITHIN_MINUTES: "2",
      BRIDGELINE_HAND_OVER_ON_STOP: "false",
      BRIDGELINE_WRONG_PIN_LIMIT: "5",
      BRIDGELINE_WRONG_PIN_WINDOW_MINUTES: "60",
      BRIDGELINE_WRONG_PINS_PER_MINUTE: "30",
      BRIDGELINE_PIN_PROMPT_PLACES: "50",
      BRIDGELINE_PIN_PROMPT_PLACES_PER_SOURCE: "5",
      BRIDGELINE_WEBHOOK_ALLOW_PRIVATE: "true",
      BRIDGELINE_WEBHOOK_TIMEOUT_SECONDS: "30",
      BRIDGELINE_WEBHOOK_RETRY_SECONDS: "10",
    });
    assert.deepEqual(config, {
      dataDir: "/var/lib/bridgeline",
      databaseUrl: "postgresql://bridgeline@db.internal:5432/bridgeline",
      databaseWaitSeconds: 90,
      databaseTimeoutSeconds: 3,
      host: "127.0.0.1",
      httpsPort: 443,
      httpPort: 0,
      metricsPort: 9464,
      trustedProxies: "10.0.0.0/8",
      tlsCertFile: "/etc/bridgeline/cert.pem",
      tlsKeyFile: "/etc/bridgeline/key.pem",
      logLevel: "warn",
      failedLoginLimit: 5,
      signupLimit: 7,
      throttleWindowSeconds: 60,
      maxConnections: 500,
      maxEventStreams: 200,
      publicUrl: "https://conference.example.com",
      browserJoin: false,
      turn: {
        urls: [
          "stun:turn.example.com",
          "turn:turn.example.com:3478?transport=udp",
          "turns:[2001:db8::3]:5349?transport=tcp",
        ],
        secret: "coturn-shared-secret",
        ttlSeconds: 600,
      },
      instanceId: "bridgeline-2",
      sip: {
        bindAddress: "10.0.0.5",
        port: 5080,
        publicAddress: "203.0.113.7",
        trunk: {
          uri: "sip:trunk.example:5060;transport=tcp",
          credentials: { username: "acct", password: "secret" },
          registration: { registrar: "sip:registrar.example", expires: 600 },
        },
        callerId: "+16045550100",
        // Longest prefix first, a URI's own ";transport=tcp" stays part of it, and routes take the
        // trunk's credentials.
        routes: [
          {
            prefix: "+1604555",
            trunk: { uri: "sip:127.0.0.1:5071", credentials: { username: "acct", password: "secret" } },
          },
          {
            prefix: "+1778",
            trunk: {
              uri: "sip:carrier-b.example:5060;transport=tcp",
              credentials: { username: "acct", password: "secret" },
            },
          },
        ],
        rtpPorts: { min: 20000, max: 20999 },
        ringTimeoutSeconds: 30,
        mediaTimeoutSeconds: 10,
        mediaThreads: 0,
        mixTalkers: 5,
        accessNumbers: ["+16045550199", "+17785550100"],
        tlsPort: 5071,
        tlsCertFile: "/etc/bridgeline/sip-cert.pem",
        tlsKeyFile: "/etc/bridgeline/sip-key.pem",
        tlsCaFile: "/etc/bridgeline/carrier-ca.pem",
        stirCaFile: "/etc/bridgeline/sti-ca.pem",
        trusted: ["203.0.113.0/24", "198.51.100.7", "2001:db8::/32"],
        untrusted: "drop",
        srtp: "required",
        dialInSrtp: "off",
        srtpKeysOverPlainSip: true,
        srtpSuites: ["AEAD_AES_256_GCM", "AES_CM_128_HMAC_SHA1_32", "AES_256_CM_HMAC_SHA1_80"],
        codecs: ["G722", "PCMU"],
        requestRatePerSource: 200,
        maxCalls: 500,
        connections: { perSource: 8, total: 1000, idleSeconds: 120, tlsHandshakeSeconds: 5 },
        dnsServers: ["10.0.0.53", "127.0.0.1:5353"],
        serverTimeoutSeconds: 2,
        trunkProbeSeconds: 0.5,
        readyTrunks: "all",
      },
      mail: {
        smtpUrl: "smtps://mailer:secret@mail.example.com:465",
        from: "Example Calls <calls@example.com>",
        supportEmail: "help@example.com",
        supportPhone: "+1 604 555 0111",
        retrySeconds: 5,
      },
      conferences: {
        deniedNumberPrefixes: ["+1876", "+1809"],
        maxCallsInProgressPerUser: 40,
        maxCallsPerHourPerUser: 200,
        emptyGraceSeconds: 30,
        noShowMinutes: 15,
        maxParticipants: 200,
        leaseSeconds: 10,
        takeOverWithinMinutes: 2,
        handOverOnStop: false,
        wrongPinLimit: 5,
        wrongPinWindowMinutes: 60,
        wrongPinsPerMinute: 30,
        pinPromptPlaces: 50,
        pinPromptPlacesPerSource: 5,
      },
      webhooks: { allowPrivate: true, timeoutSeconds: 30, retrySeconds: 10 },
    });
  });

  it("makes the public URL from the public address and the HTTPS port when it is unset", () => {
    const publicUrl = (env: Record<string, string>) => loadConfig(env).publicUrl;
    assert.equal(publicUrl({ BRIDGELINE_PUBLIC_ADDRESS: "203.0.113.7" }), "https://203.0.113.7:8443");
    assert.equal(
      publicUrl({ BRIDGELINE_PUBLIC_ADDRESS: "conference.example.com", BRIDGELINE_HTTPS_PORT: "443" }),
      "https://conference.example.com",
    );
    assert.equal(publicUrl({ BRIDGELINE_PUBLIC_ADDRESS: "2001:db8::7" }), "https://[2001:db8::7]:8443");
    assert.equal(
      publicUrl({ BRIDGELINE_PUBLIC_URL: "http://127.0.0.1:8080", BRIDGELINE_PUBLIC_ADDRESS: "203.0.113.7" }),
      "http://127.0.0.1:8080",
    );
  });

  it("takes stun: URLs without a secret, given without credentials", () => {
    assert.deepEqual(loadConfig({ BRIDGELINE_TURN_URLS: "stun:stun.example.com:3478" }).turn, {
      urls: ["stun:stun.example.com:3478"],
      secret: null,
      ttlSeconds: 3600,
    });
  });

  it("refuses turn: URLs without a secret at start, saying which setting is missing", () => {
    assert.throws(
      () => loadConfig({ BRIDGELINE_TURN_URLS: "stun:turn.example.com,turn:turn.example.com" }),
      (error: unknown) =>
        error instanceof ConfigError &&
        error.variable === "BRIDGELINE_TURN_URLS" &&
        error.message.includes("turn:turn.example.com needs credentials") &&
        error.message.includes("BRIDGELINE_TURN_SECRET"),
    );
  });

  const badValues: Array<[Record<string, string>, string]> = [
    [{ BRIDGELINE_PUBLIC_URL: "conference.example.com" }, "BRIDGELINE_PUBLIC_URL"],
    [{ BRIDGELINE_PUBLIC_URL: "ftp://conference.example.com" }, "BRIDGELINE_PUBLIC_URL"],
    [{ BRIDGELINE_PUBLIC_URL: "https://conference.example.com/bridgeline" }, "BRIDGELINE_PUBLIC_URL"],
    [{ BRIDGELINE_PUBLIC_URL: "https://conference.example.com/?a=b" }, "BRIDGELINE_PUBLIC_URL"],
    [{ BRIDGELINE_PUBLIC_URL: "https://user:pass@conference.example.com" }, "BRIDGELINE_PUBLIC_URL"],
    [{ BRIDGELINE_TURN_URLS: "turn.example.com:3478" }, "BRIDGELINE_TURN_URLS"],
    [{ BRIDGELINE_TURN_URLS: "https://turn.example.com" }, "BRIDGELINE_TURN_URLS"],
    [{ BRIDGELINE_TURN_URLS: "stun:stun.example.com?transport=udp" }, "BRIDGELINE_TURN_URLS"],
    [{ BRIDGELINE_TURN_URLS: "turn:turn.example.com:99999" }, "BRIDGELINE_TURN_URLS"],
    [{ BRIDGELINE_TURN_URLS: "turns:turn.example.com" }, "BRIDGELINE_TURN_URLS"],
    [{ BRIDGELINE_TURN_SECRET: "coturn-shared-secret" }, "BRIDGELINE_TURN_SECRET"],
    [
      { BRIDGELINE_TURN_SECRET: "coturn-shared-secret", BRIDGELINE_TURN_URLS: "stun:stun.example.com" },
      "BRIDGELINE_TURN_SECRET",
    ],
    [{ BRIDGELINE_TURN_TTL_SECONDS: "0" }, "BRIDGELINE_TURN_TTL_SECONDS"],
    [{ BRIDGELINE_HTTPS_PORT: "abc" }, "BRIDGELINE_HTTPS_PORT"],
    [{ BRIDGELINE_SMTP_URL: "mail.example.com" }, "BRIDGELINE_SMTP_URL"],
    [{ BRIDGELINE_SMTP_URL: "http://mail.example.com" }, "BRIDGELINE_SMTP_URL"],
    [{ BRIDGELINE_MAIL_FROM: "Bridgeline" }, "BRIDGELINE_MAIL_FROM"],
    [{ BRIDGELINE_SUPPORT_EMAIL: "help at example.com" }, "BRIDGELINE_SUPPORT_EMAIL"],
    [{ BRIDGELINE_MAIL_RETRY_SECONDS: "0" }, "BRIDGELINE_MAIL_RETRY_SECONDS"],
    [{ BRIDGELINE_WEBHOOK_ALLOW_PRIVATE: "yes" }, "BRIDGELINE_WEBHOOK_ALLOW_PRIVATE"],
    [{ BRIDGELINE_WEBHOOK_TIMEOUT_SECONDS: "0" }, "BRIDGELINE_WEBHOOK_TIMEOUT_SECONDS"],
    [{ BRIDGELINE_WEBHOOK_RETRY_SECONDS: "soon" }, "BRIDGELINE_WEBHOOK_RETRY_SECONDS"],
    [{ BRIDGELINE_HTTPS_PORT: "70000" }, "BRIDGELINE_HTTPS_PORT"],
    [{ BRIDGELINE_HTTPS_PORT: "-1" }, "BRIDGELINE_HTTPS_PORT"],
    [{ BRIDGELINE_HTTPS_PORT: "80.5" }, "BRIDGELINE_HTTPS_PORT"],
    [{ BRIDGELINE_HTTP_PORT: "http" }, "BRIDGELINE_HTTP_PORT"],
    [{ BRIDGELINE_METRICS_PORT: "metrics" }, "BRIDGELINE_METRICS_PORT"],
    [{ BRIDGELINE_LOG_LEVEL: "loud" }, "BRIDGELINE_LOG_LEVEL"],
    [{ BRIDGELINE_TLS_CERT: "/etc/bridgeline/cert.pem" }, "BRIDGELINE_TLS_KEY"],
    [{ BRIDGELINE_TLS_KEY: "/etc/bridgeline/key.pem" }, "BRIDGELINE_TLS_CERT"],
    [{ BRIDGELINE_FAILED_LOGIN_LIMIT: "0" }, "BRIDGELINE_FAILED_LOGIN_LIMIT"],
    [{ BRIDGELINE_SIGNUP_LIMIT: "many" }, "BRIDGELINE_SIGNUP_LIMIT"],
    [{ BRIDGELINE_THROTTLE_WINDOW_SECONDS: "1.5" }, "BRIDGELINE_THROTTLE_WINDOW_SECONDS"],
    [{ BRIDGELINE_DATABASE_URL: "mysql://db.internal/bridgeline" }, "BRIDGELINE_DATABASE_URL"],
    [{ BRIDGELINE_DATABASE_WAIT_SECONDS: "a minute" }, "BRIDGELINE_DATABASE_WAIT_SECONDS"],
    [{ BRIDGELINE_DATABASE_TIMEOUT_SECONDS: "0" }, "BRIDGELINE_DATABASE_TIMEOUT_SECONDS"],
    [{ BRIDGELINE_SIP_PORT: "sip" }, "BRIDGELINE_SIP_PORT"],
    [{ BRIDGELINE_SIP_TRUNK: "127.0.0.1:5070" }, "BRIDGELINE_SIP_TRUNK"],
    [{ BRIDGELINE_SIP_TRUNK_USER: "acct" }, "BRIDGELINE_SIP_TRUNK_PASSWORD"],
    [{ BRIDGELINE_SIP_REGISTRAR: "sip:registrar.example" }, "BRIDGELINE_SIP_REGISTRAR"],
    [{ BRIDGELINE_SIP_REGISTRAR: "registrar.example" }, "BRIDGELINE_SIP_REGISTRAR"],
    [{ BRIDGELINE_SIP_ROUTES: "+1604=127.0.0.1" }, "BRIDGELINE_SIP_ROUTES"],
    [{ BRIDGELINE_SIP_ROUTES: "abc=sip:127.0.0.1" }, "BRIDGELINE_SIP_ROUTES"],
    [{ BRIDGELINE_RTP_PORTS: "20000" }, "BRIDGELINE_RTP_PORTS"],
    [{ BRIDGELINE_RTP_PORTS: "30000-20000" }, "BRIDGELINE_RTP_PORTS"],
    [{ BRIDGELINE_CALLER_ID: "Bridgeline <sip:x>" }, "BRIDGELINE_CALLER_ID"],
    [{ BRIDGELINE_RING_TIMEOUT_SECONDS: "0" }, "BRIDGELINE_RING_TIMEOUT_SECONDS"],
    [{ BRIDGELINE_SIP_REQUEST_RATE: "0" }, "BRIDGELINE_SIP_REQUEST_RATE"],
    [{ BRIDGELINE_SIP_MAX_CALLS: "many" }, "BRIDGELINE_SIP_MAX_CALLS"],
    [{ BRIDGELINE_SIP_CONNECTIONS_PER_SOURCE: "0" }, "BRIDGELINE_SIP_CONNECTIONS_PER_SOURCE"],
    [
      { BRIDGELINE_SIP_CONNECTIONS_PER_SOURCE: "64", BRIDGELINE_SIP_MAX_CONNECTIONS: "32" },
      "BRIDGELINE_SIP_CONNECTIONS_PER_SOURCE",
    ],
    [{ BRIDGELINE_SIP_IDLE_SECONDS: "1.5" }, "BRIDGELINE_SIP_IDLE_SECONDS"],
    [{ BRIDGELINE_SIP_TLS_HANDSHAKE_SECONDS: "0" }, "BRIDGELINE_SIP_TLS_HANDSHAKE_SECONDS"],
    [{ BRIDGELINE_MEDIA_THREADS: "two" }, "BRIDGELINE_MEDIA_THREADS"],
    [{ BRIDGELINE_MEDIA_THREADS: "-1" }, "BRIDGELINE_MEDIA_THREADS"],
    [{ BRIDGELINE_MIX_TALKERS: "0" }, "BRIDGELINE_MIX_TALKERS"],
    [{ BRIDGELINE_ACCESS_NUMBERS: "+16045550199,911" }, "BRIDGELINE_ACCESS_NUMBERS"],
    [{ BRIDGELINE_SIP_TLS_PORT: "tls" }, "BRIDGELINE_SIP_TLS_PORT"],
    [{ BRIDGELINE_SIP_TRUSTED: "carrier.example" }, "BRIDGELINE_SIP_TRUSTED"],
    [{ BRIDGELINE_SIP_TRUSTED: "10.0.0.0/33" }, "BRIDGELINE_SIP_TRUSTED"],
    [{ BRIDGELINE_SIP_UNTRUSTED: "ignore" }, "BRIDGELINE_SIP_UNTRUSTED"],
    [{ BRIDGELINE_SRTP: "always" }, "BRIDGELINE_SRTP"],
    [{ BRIDGELINE_SIP_TRUNK: "sip:carrier.example;transport=tls;srtp=requird" }, "BRIDGELINE_SIP_TRUNK"],
    [{ BRIDGELINE_SIP_ROUTES: "+1604=sip:b.example;srtp=yes" }, "BRIDGELINE_SIP_ROUTES"],
    [{ BRIDGELINE_SRTP_KEYS_OVER_PLAIN_SIP: "yes" }, "BRIDGELINE_SRTP_KEYS_OVER_PLAIN_SIP"],
    [{ BRIDGELINE_SRTP_SUITES: "AES_192_CM_HMAC_SHA1_80" }, "BRIDGELINE_SRTP_SUITES"],
    [{ BRIDGELINE_CODECS: "G729" }, "BRIDGELINE_CODECS"],
    [{ BRIDGELINE_CODECS: "PCMU,pcmu" }, "BRIDGELINE_CODECS"],
    [{ BRIDGELINE_DNS_SERVERS: "dns.example" }, "BRIDGELINE_DNS_SERVERS"],
    [{ BRIDGELINE_DNS_SERVERS: "127.0.0.1:99999" }, "BRIDGELINE_DNS_SERVERS"],
    [{ BRIDGELINE_DNS_SERVERS: "2001:db8::53" }, "BRIDGELINE_DNS_SERVERS"],
    [{ BRIDGELINE_SIP_SERVER_TIMEOUT_SECONDS: "0" }, "BRIDGELINE_SIP_SERVER_TIMEOUT_SECONDS"],
    [{ BRIDGELINE_TRUNK_PROBE_SECONDS: "-1" }, "BRIDGELINE_TRUNK_PROBE_SECONDS"],
    [{ BRIDGELINE_TRUNK_PROBE_SECONDS: "30s" }, "BRIDGELINE_TRUNK_PROBE_SECONDS"],
    [{ BRIDGELINE_READY_TRUNKS: "some" }, "BRIDGELINE_READY_TRUNKS"],
    [{ BRIDGELINE_SRTP_SUITES: "AES_CM_128_HMAC_SHA1_32,AES_CM_128_HMAC_SHA1_32" }, "BRIDGELINE_SRTP_SUITES"],
    [{ BRIDGELINE_SIP_TLS_CERT: "/etc/cert.pem" }, "BRIDGELINE_SIP_TLS_KEY"],
    [{ BRIDGELINE_EMPTY_GRACE_SECONDS: "0" }, "BRIDGELINE_EMPTY_GRACE_SECONDS"],
    [{ BRIDGELINE_NO_SHOW_MINUTES: "an hour" }, "BRIDGELINE_NO_SHOW_MINUTES"],
    [{ BRIDGELINE_MAX_PARTICIPANTS: "0" }, "BRIDGELINE_MAX_PARTICIPANTS"],
    [{ BRIDGELINE_MAX_PARTICIPANTS: "lots" }, "BRIDGELINE_MAX_PARTICIPANTS"],
    [{ BRIDGELINE_CONFERENCE_LEASE_SECONDS: "0" }, "BRIDGELINE_CONFERENCE_LEASE_SECONDS"],
    [{ BRIDGELINE_CONFERENCE_LEASE_SECONDS: "2.5" }, "BRIDGELINE_CONFERENCE_LEASE_SECONDS"],
    [{ BRIDGELINE_HAND_OVER_ON_STOP: "yes" }, "BRIDGELINE_HAND_OVER_ON_STOP"],
    [{ BRIDGELINE_WRONG_PIN_LIMIT: "0" }, "BRIDGELINE_WRONG_PIN_LIMIT"],
    [{ BRIDGELINE_DENIED_NUMBERS: "+44" }, "BRIDGELINE_DENIED_NUMBERS"],
    [{ BRIDGELINE_MAX_CALLS_IN_PROGRESS_PER_USER: "0" }, "BRIDGELINE_MAX_CALLS_IN_PROGRESS_PER_USER"],
    [{ BRIDGELINE_MAX_CALLS_PER_HOUR_PER_USER: "unlimited" }, "BRIDGELINE_MAX_CALLS_PER_HOUR_PER_USER"],
  ];
  for (const [env, variable] of badValues) {
    it(`refuses ${JSON.stringify(env)}, naming ${variable}`, () => {
      assert.throws(
        () => loadConfig(env),
        (error: unknown) =>
          error instanceof ConfigError && error.variable === variable && error.message.includes(variable),
      );
    });
  }

  it("quotes the refused value", () => {
    assert.throws(() => loadConfig({ BRIDGELINE_LOG_LEVEL: "loud" }), /"loud"/);
  });
});

describe("the configuration table", () => {
  it("is the README's: npm run docs:config has been run since the table last changed", () => {
    const readme = fs.readFileSync(README, "utf8");
    assert.equal(withTable(readme, configTable()), readme);
  });

  it("shows each default as its value, or in words where it is computed", () => {
    const table = configTable();
    assert.match(table, /^\| `BRIDGELINE_SIP_PORT` +\| `5060` +\| SIP port, UDP and TCP +\|$/m);
    assert.match(table, /^\| `BRIDGELINE_MEDIA_THREADS` +\| the number of cores +\| Worker threads/m);
  });
});

describe("unknownVariables", () => {
  it("names each BRIDGELINE_* variable nothing reads, with the known name it most likely meant", () => {
    assert.deepEqual(
      unknownVariables({
        BRIDGELINE_SIP_TRUNKK: "sip:127.0.0.1:5070",
        BRIDGELINE_SIP_PORT: "5060",
        BRIDGELINE_HTTP_PROT: "8080",
        BRIDGELINE_COLOUR: "blue",
        PATH: "/usr/bin",
      }),
      [
        { name: "BRIDGELINE_SIP_TRUNKK", likely: "BRIDGELINE_SIP_TRUNK" },
        { name: "BRIDGELINE_HTTP_PROT", likely: "BRIDGELINE_HTTP_PORT" },
        { name: "BRIDGELINE_COLOUR", likely: undefined },
      ],
    );
  });

  it("finds none when every variable is known", () => {
    assert.deepEqual(unknownVariables({ BRIDGELINE_SIP_PORT: "5060", HOME: "/root" }), []);
  });
});

describe("npm start with a bad configuration", () => {
  let dataDir: string;
  before(() => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "bridgeline-config-"));
  });
  after(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  /** Runs `bridgeline start` with the given variables; stops it if it starts after all. */
  function start(env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
    return new Promise((resolve, reject) => {
      const child = spawn(process.execPath, ["bin/bridgeline.js", "start"], {
        cwd: PROJECT_ROOT,
        env: { PATH: process.env.PATH, BRIDGELINE_DATA_DIR: dataDir, BRIDGELINE_HOST: "127.0.0.1", ...env },
        stdio: ["ignore", "ignore", "pipe"],
      });
      let stderr = "";
      child.stderr.on("data", (chunk) => {
        stderr += String(chunk);
      });
      const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
      child.once("error", reject);
      child.once("close", (code) => {
        clearTimeout(timer);
        resolve({ code, stderr });
      });
    });
  }

  for (const [variable, value] of [
    ["BRIDGELINE_HTTPS_PORT", "abc"],
    ["BRIDGELINE_LOG_LEVEL", "loud"],
  ]) {
    it(`exits non-zero naming ${variable}=${value}`, async () => {
      const { code, stderr } = await start({ [variable as string]: value as string });
      assert.notEqual(code, 0);
      assert.notEqual(code, null, "the process had to be killed: it started despite the bad value");
      assert.match(stderr, new RegExp(`${variable}.*"${value}"`));
      assert.doesNotMatch(stderr, /\n\s+at\s/, "a configuration error is a message, not a stack trace");
    });
  }

  it("names a mistyped variable beside the error, with the name it likely meant", async () => {
    const { code, stderr } = await start({ BRIDGELINE_LOG_LEVEL: "loud", BRIDGELINE_SIP_PROT: "5070" });
    assert.equal(code, 1);
    assert.match(
      stderr,
      /BRIDGELINE_SIP_PROT is not a Bridgeline setting and is ignored: did you mean BRIDGELINE_SIP_PORT\?/,
    );
  });
});

describe("npm start with a mistyped variable", () => {
  let dataDir: string;
  before(() => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "bridgeline-config-"));
  });
  after(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  it("starts, and logs a warning naming the variable and the name it likely meant", async () => {
    const child = spawn(process.execPath, ["bin/bridgeline.js", "start"], {
      cwd: PROJECT_ROOT,
      env: {
        PATH: process.env.PATH,
        BRIDGELINE_DATA_DIR: dataDir,
        BRIDGELINE_HOST: "127.0.0.1",
        BRIDGELINE_HTTPS_PORT: "0",
        BRIDGELINE_SIP_ADDRESS: "127.0.0.1",
        BRIDGELINE_SIP_PORT: "0",
        BRIDGELINE_MEDIA_THREADS: "0",
        BRIDGELINE_RING_TIMEOUT_SECOND: "30",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const closed = new Promise((resolve) => child.once("close", resolve));
    const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
    try {
      const lines: { msg: string; variable?: string; likely?: string; level: number }[] = [];
      let pending = "";
      await new Promise<void>((resolve, reject) => {
        child.stdout.on("data", (chunk) => {
          pending += String(chunk);
          const complete = pending.split("\n");
          pending = complete.pop() ?? "";
          lines.push(...complete.filter(Boolean).map((line) => JSON.parse(line)));
          if (lines.some((line) => line.msg === "bridgeline started")) resolve();
        });
        child.once("close", (code) => reject(new Error(`the service exited (${code}) before it started`)));
      });
      const warning = lines.find((line) => line.variable === "BRIDGELINE_RING_TIMEOUT_SECOND");
      assert.equal(warning?.level, 40, "logged at warn");
      assert.equal(warning?.likely, "BRIDGELINE_RING_TIMEOUT_SECONDS");
      assert.match(warning?.msg ?? "", /BRIDGELINE_RING_TIMEOUT_SECOND is not a Bridgeline setting/);
    } finally {
      child.kill("SIGTERM");
      await closed;
      clearTimeout(timer);
    }
  });
});
