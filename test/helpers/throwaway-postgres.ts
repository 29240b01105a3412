/**
 * A PostgreSQL cluster of a test's own (initdb and pg_ctl on a free loopback port in a temporary
 * directory), to stop and start while a service uses it without touching the machine's shared
 * server, which other tests use. As root the server runs as the postgres user (it refuses root).
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { freePorts } from "./sipp.js";

/** The newest installed PostgreSQL's programs, e.g. /usr/lib/postgresql/15/bin; null without one. */
export function postgresBinaries(): string | null {
  const root = "/usr/lib/postgresql";
  if (!fs.existsSync(root)) return null;
  const versions = fs
    .readdirSync(root)
    .filter((version) => fs.existsSync(path.join(root, version, "bin", "pg_ctl")))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] === undefined ? null : path.join(root, versions[0], "bin");
}

export class ThrowawayPostgres {
  private constructor(
    private readonly bin: string,
    private readonly dir: string,
    readonly port: number,
  ) {}

  /** The connection URL of its `postgres` database (trust authentication on loopback). */
  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  /** Makes a cluster and starts it. */
  static async create(): Promise<ThrowawayPostgres> {
    const bin = postgresBinaries();
    if (bin === null) throw new Error("PostgreSQL is not installed (Debian: apt-get install postgresql)");
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "bridgeline-pg-"));
    if (process.getuid?.() === 0) execFileSync("chown", ["postgres:postgres", dir]);
    const cluster = new ThrowawayPostgres(bin, dir, await freePorts());
    try {
      cluster.run("initdb", ["-D", cluster.dataDir, "-U", "postgres", "--auth=trust", "--no-sync"]);
      cluster.start();
    } catch (error) {
      cluster.remove();
      throw error;
    }
    return cluster;
  }

  private get dataDir(): string {
    return path.join(this.dir, "data");
  }

  /** Starts the server and waits until it takes connections. */
  start(): void {
    this.run("pg_ctl", [
      "-D",
      this.dataDir,
      "-l",
      path.join(this.dir, "server.log"),
      "-o",
      `-p ${this.port} -c listen_addresses=127.0.0.1 -k ${this.dir} -c fsync=off`,
      "-w",
      "start",
    ]);
  }

  /** Stops the server the way a restart does: open connections are ended ("fast" shutdown). */
  stop(): void {
    this.run("pg_ctl", ["-D", this.dataDir, "-m", "fast", "-w", "stop"]);
  }

  /** Stops the server if it runs and removes the cluster. */
  async destroy(): Promise<void> {
    try {
      this.run("pg_ctl", ["-D", this.dataDir, "-m", "immediate", "-w", "stop"]);
    } catch {
      // Not running.
    }
    this.remove();
  }

  private remove(): void {
    fs.rmSync(this.dir, { recursive: true, force: true });
  }

  private run(program: string, args: string[]): void {
    const command = path.join(this.bin, program);
    const [file, argv] =
      process.getuid?.() === 0 ? ["runuser", ["-u", "postgres", "--", command, ...args]] : [command, args];
    execFileSync(file, argv, { stdio: "pipe", cwd: this.dir });
  }
}
