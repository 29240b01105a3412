/**
 * The monitoring shipped in deploy/ (issue 30): the Prometheus alert rules and sample configuration
 * (deploy/prometheus) and the Grafana dashboard (deploy/grafana), checked by promtool (Debian's
 * `prometheus` package) against the metrics the compiled service really exports: its scrape must
 * pass `promtool check metrics` without a warning, and every metric a rule or a panel names must be
 * in it, so that renaming a metric fails here until the rules and the dashboard follow.
 *
 * Runs `bin/bridgeline.js start`, the compiled service: `npm run build:service` first.
 */
import assert from "node:assert/strict";
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import dgram from "node:dgram";
import fs from "node:fs";
import http from "node:http";
import https from "node:https";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import YAML from "yaml";
import { until } from "../helpers/until.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const PROMETHEUS = path.join(ROOT, "deploy/prometheus");
const RULES = path.join(PROMETHEUS, "rules");
const DASHBOARD = path.join(ROOT, "deploy/grafana/bridgeline.json");

/** promtool is a checker, not a peer: missing, the file is skipped, except under CI. */
function skipWithoutPromtool(): string | false {
  if (spawnSync("promtool", ["--version"]).status === 0) return false;
  if (process.env.CI === "true") throw new Error("promtool is not installed, and CI=true requires it");
  return "promtool is not installed (Debian: apt-get install --no-install-recommends prometheus)";
}

function promtool(args: string[], input?: string): { status: number | null; output: string } {
  const run = spawnSync("promtool", args, { cwd: ROOT, input, encoding: "utf8" });
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}

function ruleFiles(): string[] {
  return fs
    .readdirSync(RULES)
    .filter((file) => file.endsWith(".yml"))
    .map((file) => path.join(RULES, file));
}

interface Rule {
  alert?: string;
  record?: string;
  expr: string;
}

function rules(): Rule[] {
  return ruleFiles().flatMap((file) =>
    (YAML.parse(fs.readFileSync(file, "utf8")) as { groups: { rules: Rule[] }[] }).groups.flatMap(
      (group) => group.rules,
    ),
  );
}

interface Panel {
  id: number;
  type: string;
  title: string;
  datasource?: { type: string; uid: string };
  targets?: { expr: string; refId: string; datasource?: { uid: string } }[];
}

interface Dashboard {
  panels: Panel[];
  templating: { list: { name: string; type: string; query: unknown }[] };
}

function dashboard(): Dashboard {
  return JSON.parse(fs.readFileSync(DASHBOARD, "utf8")) as Dashboard;
}

/** A panel's query as Prometheus gets it, once Grafana has put its variables in. */
function asSent(expr: string): string {
  return expr.replaceAll("$__rate_interval", "1m").replaceAll("$instance", ".*");
}

/** Every query of the dashboard: its panel and query. */
function panelQueries(): { where: string; expr: string }[] {
  return dashboard().panels.flatMap((panel) =>
    (panel.targets ?? []).map((target) => ({
      where: `panel ${panel.id} "${panel.title}" query ${target.refId}`,
      expr: target.expr,
    })),
  );
}

/** The bridgeline_* metric names an expression reads. */
function metricNames(expr: string): string[] {
  return [...expr.matchAll(/\bbridgeline_[a-z0-9_]+/g)].map((match) => match[0]);
}

/** The series names a scrape can hold: each family's name, and a histogram's or summary's parts. */
function exportedNames(scrape: string): Set<string> {
  const names = new Set<string>();
  for (const [, name, type] of scrape.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    names.add(name as string);
    if (type === "histogram") for (const part of ["_bucket", "_sum", "_count"]) names.add(`${name}${part}`);
    if (type === "summary") for (const part of ["_sum", "_count"]) names.add(`${name}${part}`);
  }
  return names;
}

function get(
  client: typeof http | typeof https,
  port: number,
  route: string,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    client
      .get({ host: "127.0.0.1", port, path: route, rejectUnauthorized: false }, (response) => {
        let body = "";
        response.setEncoding("utf8");
        response.on("data", (chunk) => {
          body += chunk;
        });
        response.once("end", () => resolve({ status: response.statusCode ?? 0, body }));
      })
      .once("error", reject);
  });
}

describe("the Prometheus rules and the Grafana dashboard (deploy/)", { skip: skipWithoutPromtool() }, () => {
  it("promtool finds the alert rules well-formed", () => {
    const files = ruleFiles();
    assert.ok(files.length > 0);
    const run = promtool(["check", "rules", ...files]);
    assert.equal(run.status, 0, run.output);
  });

  it("promtool finds the sample prometheus.yml valid, with the rule files it loads", () => {
    const run = promtool(["check", "config", path.join(PROMETHEUS, "prometheus.yml")]);
    assert.equal(run.status, 0, run.output);
    assert.match(run.output, /SUCCESS: 1 rule files found/);
  });

  it("the sample configuration scrapes the job the instance-down alert looks for", () => {
    const config = YAML.parse(fs.readFileSync(path.join(PROMETHEUS, "prometheus.yml"), "utf8")) as {
      scrape_configs: { job_name: string }[];
    };
    const down = rules().find((rule) => rule.alert === "BridgelineInstanceDown");
    const job = /up\{job="([^"]+)"\}/.exec(down?.expr ?? "")?.[1];
    assert.ok(job, down?.expr);
    assert.ok(config.scrape_configs.some((scrape) => scrape.job_name === job));
  });

  it("the rules' unit tests pass: the alerts tested fire once their `for` has passed, not before", () => {
    const run = promtool(["test", "rules", path.join(PROMETHEUS, "tests/bridgeline.test.yml")]);
    assert.equal(run.status, 0, run.output);
    assert.match(run.output, /SUCCESS/);
  });

  it("the dashboard takes its Prometheus from a data source variable, in every panel and query", () => {
    const { panels, templating } = dashboard();
    const variable = templating.list.find((entry) => entry.type === "datasource");
    assert.equal(variable?.query, "prometheus");
    const uid = `\${${variable?.name}}`;
    for (const panel of panels.filter((entry) => entry.type !== "row")) {
      assert.equal(panel.datasource?.uid, uid, `panel ${panel.id} "${panel.title}"`);
      assert.ok((panel.targets ?? []).length > 0, `panel ${panel.id} "${panel.title}" has no query`);
      for (const target of panel.targets ?? []) assert.equal(target.datasource?.uid, uid);
    }
  });

  it("every query of the dashboard parses as PromQL (promtool checks it as a recording rule)", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "bridgeline-dashboard-"));
    try {
      const queries = panelQueries();
      assert.ok(queries.length > 0);
      // One file per query, so that a failure names it.
      const files = queries.map(({ expr }, index) => {
        const file = path.join(dir, `query-${index}.yml`);
        const group = {
          name: "dashboard",
          rules: [{ record: `dashboard:query_${index}`, expr: asSent(expr) }],
        };
        fs.writeFileSync(file, YAML.stringify({ groups: [group] }));
        return file;
      });
      const run = promtool(["check", "rules", ...files]);
      const failed = queries
        .filter((_query, index) => !run.output.includes(`Checking ${files[index]}\n  SUCCESS`))
        .map(({ where, expr }) => `${where}: ${expr}`);
      assert.deepEqual(failed, [], run.output);
      assert.equal(run.status, 0, run.output);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  describe("against a scrape of the compiled service", () => {
    let dir: string;
    let child: ChildProcess;
    let output = "";
    let scrape: string;

    let silent: dgram.Socket;

    before(async () => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), "bridgeline-monitoring-"));
      silent = dgram.createSocket("udp4");
      await new Promise<void>((resolve) => silent.bind(0, "127.0.0.1", resolve));
      const silentPort = silent.address().port;
      child = spawn(process.execPath, [path.join(ROOT, "bin/bridgeline.js"), "start"], {
        cwd: ROOT,
        env: {
          PATH: process.env.PATH,
          BRIDGELINE_DATA_DIR: path.join(dir, "data"),
          BRIDGELINE_HOST: "127.0.0.1",
          BRIDGELINE_HTTPS_PORT: "0",
          BRIDGELINE_METRICS_PORT: "0",
          BRIDGELINE_SIP_ADDRESS: "127.0.0.1",
          BRIDGELINE_SIP_PORT: "0",
          BRIDGELINE_MEDIA_THREADS: "1",
          // A trunk whose server never answers, probed: its state is in the scrape (absent until known).
          BRIDGELINE_SIP_TRUNK: `sip:127.0.0.1:${silentPort}`,
          BRIDGELINE_TRUNK_PROBE_SECONDS: "0.2",
        },
        stdio: ["ignore", "pipe", "pipe"],
      });
      child.stdout?.on("data", (chunk) => {
        output += String(chunk);
      });
      child.stderr?.on("data", (chunk) => {
        output += String(chunk);
      });
      const started = await until(
        "the compiled service to start",
        async () => {
          if (child.exitCode !== null) throw new Error(`exited with ${child.exitCode}\n${output}`);
          return output.split("\n").find((line) => line.includes('"bridgeline started"'));
        },
        { timeoutMs: 60_000, detail: () => output },
      );
      const ports = JSON.parse(started) as { httpsPort: number; metricsPort: number };
      // A request answered, so that the API's labelled series are in the scrape too.
      assert.equal((await get(https, ports.httpsPort, "/billing-packages")).status, 200);
      scrape = await until(
        "the trunk's state in the scrape",
        async () => {
          const metrics = await get(http, ports.metricsPort, "/metrics");
          assert.equal(metrics.status, 200, metrics.body);
          return metrics.body.includes("bridgeline_trunk_up{") ? metrics.body : undefined;
        },
        { timeoutMs: 20_000, detail: () => output },
      );
    });
    after(async () => {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once("exit", resolve));
        child.kill("SIGTERM");
        await exited;
      }
      fs.rmSync(dir, { recursive: true, force: true });
      silent.close();
    });

    it("passes `promtool check metrics` without a warning", () => {
      const run = promtool(["check", "metrics"], scrape);
      assert.equal(run.output, "");
      assert.equal(run.status, 0);
    });

    it("exports every metric the alert rules use", () => {
      const exported = exportedNames(scrape);
      const missing = rules().flatMap((rule) =>
        metricNames(rule.expr)
          .filter((name) => !exported.has(name))
          .map((name) => `${rule.alert ?? rule.record}: ${name}`),
      );
      assert.deepEqual(missing, []);
    });

    it("exports every metric the dashboard's panels use", () => {
      const exported = exportedNames(scrape);
      const queries = panelQueries();
      const missing = queries.flatMap(({ where, expr }) =>
        metricNames(expr)
          .filter((name) => !exported.has(name))
          .map((name) => `${where}: ${name}`),
      );
      assert.deepEqual(missing, []);
      // The instance variable is made from a metric every instance exports.
      assert.match(scrape, /^bridgeline_build_info\{/m);
    });

    it("says which build runs: package.json's version and the commit the build stamped", () => {
      const { version } = JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8")) as {
        version: string;
      };
      const { commit } = JSON.parse(fs.readFileSync(path.join(ROOT, "dist/build-info.json"), "utf8")) as {
        commit: string;
      };
      assert.match(commit, /^([0-9a-f]{40}|unknown)$/);
      const line = scrape.split("\n").find((entry) => entry.startsWith("bridgeline_build_info{"));
      assert.equal(line, `bridgeline_build_info{version="${version}",commit="${commit}"} 1`);
    });

    it("times the database's statements by kind, none of them failed", () => {
      const count = (kind: string) =>
        Number(
          new RegExp(`^bridgeline_db_query_seconds_count\\{kind="${kind}"\\} (\\d+)$`, "m").exec(scrape)?.[1],
        );
      // Start-up wrote (the instance's heartbeat) and the scrape and the request read.
      for (const kind of ["select", "insert", "update"]) assert.ok(count(kind) > 0, kind);
      assert.doesNotMatch(scrape, /^bridgeline_db_errors_total\{[^}]*\} [1-9]/m);
    });

    it("exports the readiness checks, the RTP ports against their range and the certificates' expiry", () => {
      for (const check of ["database", "migrations", "sip", "media"])
        assert.match(scrape, new RegExp(`^bridgeline_ready\\{check="${check}"\\} 1$`, "m"));
      assert.match(scrape, /^bridgeline_rtp_ports_in_use\{thread="0"\} 0$/m);
      // The default range 10000-20000: 5000 pairs, 10000 ports.
      assert.match(scrape, /^bridgeline_rtp_ports\{thread="0"\} 10000$/m);
      // The self-signed pair made at first start: valid for years.
      for (const listener of ["https", "sip"]) {
        const expiry = new RegExp(
          `^bridgeline_certificate_expiry_timestamp_seconds\\{listener="${listener}"\\} (\\d+)$`,
          "m",
        ).exec(scrape)?.[1];
        assert.ok(expiry, listener);
        assert.ok(Number(expiry) > Date.now() / 1000 + 300 * 86400, expiry);
      }
    });
  });
});
