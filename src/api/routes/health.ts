import type { FastifyInstance } from "fastify";
import { resource } from "../server.js";

/**
 * What readiness depends on, each checked when asked: a problem's description, undefined when the
 * part works, or Degraded when it works in part (named in the body, still ready). Checks run
 * together and each is given `READINESS_TIMEOUT_MS`.
 */
export type ReadinessChecks = Readonly<Record<string, () => Promise<string | Degraded | undefined>>>;

/** A part that works in part: its text is shown, and readiness does not fail for it. */
export interface Degraded {
  readonly degraded: string;
}

/** A check that has not answered by then counts as failed: a load balancer's probe will not wait. */
const READINESS_TIMEOUT_MS = 2000;

/**
 * Probes for load balancers and orchestrators, without credentials: `/health/live` says the process
 * answers; `/health/ready` says whether it can serve (200) or not (503), naming each check.
 */
export async function healthRoutes(
  app: FastifyInstance,
  { checks }: { checks: ReadinessChecks },
): Promise<void> {
  const json = { produces: ["application/json"] };
  resource(
    app,
    "/health/live",
    {
      GET: async (_request, reply) => {
        reply.header("cache-control", "no-store").type("application/json");
        return { status: "live" };
      },
    },
    {
      GET: {
        summary: "Liveness: the process answers",
        access: "public",
        media: { type: "application/json", description: '{"status": "ok"}' },
      },
    },
    json,
  );
  resource(
    app,
    "/health/ready",
    {
      GET: async (_request, reply) => {
        const results = await runReadinessChecks(checks);
        const ready = results.every(([, result]) => result.passes);
        reply
          .status(ready ? 200 : 503)
          .header("cache-control", "no-store")
          .type("application/json");
        const said = results.map(([name, result]) => [name, result.said]);
        return { status: ready ? "ready" : "not ready", checks: Object.fromEntries(said) };
      },
    },
    {
      GET: {
        summary: "Readiness: the database, SIP sockets, media threads and trunks (503 when not ready)",
        access: "public",
        media: { type: "application/json", description: "Each check's state" },
        otherAnswers: {
          503: { type: "application/json", description: "Not ready: the same body, each check's state" },
        },
      },
    },
    json,
  );
}

/** A check's outcome: whether readiness holds for it, and what the body says ("ok", the problem, the part that fails). */
export interface CheckResult {
  readonly passes: boolean;
  readonly said: string;
}

/**
 * Every check, at once, each given READINESS_TIMEOUT_MS. Only a problem fails readiness: a part that
 * works, in whole or in part (Degraded), does not.
 */
export function runReadinessChecks(checks: ReadinessChecks): Promise<(readonly [string, CheckResult])[]> {
  return Promise.all(
    Object.entries(checks).map(async ([name, check]) => {
      const result = await withTimeout(check);
      const outcome: CheckResult =
        result === undefined
          ? { passes: true, said: "ok" }
          : typeof result === "string"
            ? { passes: false, said: result }
            : { passes: true, said: result.degraded };
      return [name, outcome] as const;
    }),
  );
}

async function withTimeout(
  check: () => Promise<string | Degraded | undefined>,
): Promise<string | Degraded | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<string>((resolve) => {
    timer = setTimeout(() => resolve(`no answer in ${READINESS_TIMEOUT_MS / 1000} s`), READINESS_TIMEOUT_MS);
  });
  try {
    return await Promise.race([
      check().catch((error: unknown) => (error instanceof Error ? error.message : String(error))),
      late,
    ]);
  } finally {
    clearTimeout(timer);
  }
}
