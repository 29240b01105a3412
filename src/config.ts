import path from "node:path";

/** Every setting of the service, read and validated here and nowhere else. */
export interface Config {
  dataDir: string;
  /** PostgreSQL connection URL; null selects the embedded SQLite store in dataDir. */
  databaseUrl: string | null;
  host: string;
  httpsPort: number;
  /** Plain-HTTP listener, only when BRIDGELINE_HTTP_PORT is set (behind a TLS proxy, or in tests). */
  httpPort: number | null;
  /** Proxy addresses (comma-separated IPs/CIDRs) whose X-Forwarded-For names the client. */
  trustedProxies: string | null;
  tlsCertFile: string | null;
  tlsKeyFile: string | null;
  logLevel: LogLevel;
  /** Failed logins per client address within the window before 429. */
  failedLoginLimit: number;
  /** Sign-up attempts per client address within the window before 429. */
  signupLimit: number;
  throttleWindowSeconds: number;
}

export type LogLevel = "fatal" | "error" | "warn" | "info" | "debug" | "trace" | "silent";
const LOG_LEVELS: readonly LogLevel[] = ["fatal", "error", "warn", "info", "debug", "trace", "silent"];

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(`${variable}: ${message}`);
    this.name = "ConfigError";
  }
}

type Env = Record<string, string | undefined>;

function readPort(env: Env, name: string, fallback: number | null): number | null {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const port = Number(raw);
  if (!/^\d+$/.test(raw) || port > 65535) {
    throw new ConfigError(name, `must be a port number from 0 to 65535, got "${raw}"`);
  }
  return port;
}

function readPositiveInteger(env: Env, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < 1) {
    throw new ConfigError(name, `must be a whole number of at least 1, got "${raw}"`);
  }
  return Number(raw);
}

function readFile(env: Env, name: string): string | null {
  const raw = env[name];
  return raw === undefined || raw === "" ? null : path.resolve(raw);
}

export function loadConfig(env: Env = process.env): Config {
  const logLevel = (env.BRIDGELINE_LOG_LEVEL || "info") as LogLevel;
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError(
      "BRIDGELINE_LOG_LEVEL",
      `must be one of ${LOG_LEVELS.join(", ")}, got "${logLevel}"`,
    );
  }
  const tlsCertFile = readFile(env, "BRIDGELINE_TLS_CERT");
  const tlsKeyFile = readFile(env, "BRIDGELINE_TLS_KEY");
  if ((tlsCertFile === null) !== (tlsKeyFile === null)) {
    throw new ConfigError(
      tlsCertFile === null ? "BRIDGELINE_TLS_CERT" : "BRIDGELINE_TLS_KEY",
      "BRIDGELINE_TLS_CERT and BRIDGELINE_TLS_KEY must be set together",
    );
  }
  const databaseUrl = env.BRIDGELINE_DATABASE_URL || null;
  if (databaseUrl !== null && !/^postgres(ql)?:\/\/\S+$/.test(databaseUrl)) {
    throw new ConfigError("BRIDGELINE_DATABASE_URL", "must be a postgres:// or postgresql:// URL");
  }
  return {
    dataDir: path.resolve(env.BRIDGELINE_DATA_DIR || "./data"),
    databaseUrl,
    host: env.BRIDGELINE_HOST || "0.0.0.0",
    httpsPort: readPort(env, "BRIDGELINE_HTTPS_PORT", 8443) as number,
    httpPort: readPort(env, "BRIDGELINE_HTTP_PORT", null),
    trustedProxies: env.BRIDGELINE_TRUSTED_PROXIES || null,
    tlsCertFile,
    tlsKeyFile,
    logLevel,
    failedLoginLimit: readPositiveInteger(env, "BRIDGELINE_FAILED_LOGIN_LIMIT", 10),
    signupLimit: readPositiveInteger(env, "BRIDGELINE_SIGNUP_LIMIT", 20),
    throttleWindowSeconds: readPositiveInteger(env, "BRIDGELINE_THROTTLE_WINDOW_SECONDS", 900),
  };
}
