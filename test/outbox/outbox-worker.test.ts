/**
 * The outbox worker over a real store's notification outbox (SQLite and PostgreSQL, one loop), with
 * a deliverer scripted by each test in place of the mail server: which message was attempted how
 * often, what each settlement wrote, and what a restart, a silent instance, a stop in the middle of
 * an attempt and a second worker on the same database leave behind.
 */
import assert from "node:assert/strict";
import { it } from "node:test";
import { pino } from "pino";
import { OutboxWorker } from "../../src/outbox/outbox-worker.js";
import type { Deliverer, QueuedNotification, Verdict } from "../../src/outbox/ports.js";
import { notificationOutbox } from "../../src/store/notification-outbox.js";
import { timestamp } from "../../src/store/values.js";
import { forEachStore, storeForTests } from "../helpers/databases.js";
import { until } from "../helpers/until.js";

const WORDS = {
  restartReleased: "restart released",
  staleReleased: "stale released",
  pollFailed: "poll failed",
};

forEachStore("the outbox worker", (kind) => {
  const held = storeForTests("outbox", kind);

  /** Queues `count` messages due now; returns their ids. */
  async function queue(count: number, createdAt = new Date()): Promise<number[]> {
    const at = timestamp(createdAt);
    const rows = await held.store.db
      .insertInto("notifications")
      .values(
        Array.from({ length: count }, (_, index) => ({
          created_at: at,
          conference_id: null,
          kind: "webhook-disabled",
          recipient: `owner${index}@example.com`,
          facts: JSON.stringify({
            kind: "webhook-disabled",
            recipient: { email: `owner${index}@example.com` },
          }),
          state: "queued",
          attempts: 0,
          next_attempt_at: at,
        })),
      )
      .returning("id")
      .execute();
    return rows.map((row) => row.id);
  }

  async function rows(ids: readonly number[]) {
    return held.store.db
      .selectFrom("notifications")
      .selectAll()
      .where("id", "in", ids)
      .orderBy("id")
      .execute();
  }

  /** A deliverer whose verdict on each message the test decides; it counts the attempts it makes. */
  function scripted(
    verdict: (message: QueuedNotification) => Verdict,
    options: { delayMs?: number; retryInMs?: number | undefined; gate?: Promise<void> } = {},
  ) {
    const attempted: number[] = [];
    const reported: string[] = [];
    const deliverer: Deliverer<QueuedNotification, Verdict, never> = {
      async deliver(message) {
        attempted.push(message.id);
        await options.gate;
        if (options.delayMs) await new Promise((resolve) => setTimeout(resolve, options.delayMs));
        return verdict(message);
      },
      judge: (outcome) => outcome,
      nextAttemptAt: (_message, now) =>
        options.retryInMs === undefined ? undefined : now + options.retryInMs,
      report: ({ message, settlement }) => void reported.push(`${message.id}:${settlement.state}`),
    };
    return { deliverer, attempted, reported };
  }

  function worker(
    name: string,
    deliverer: Deliverer<QueuedNotification, Verdict, never>,
    logs: string[] = [],
  ) {
    return new OutboxWorker({
      queue: notificationOutbox(held.store),
      deliverer,
      worker: name,
      batch: 4,
      logger: pino({ level: "debug" }, { write: (line: string) => void logs.push(line) }),
      words: WORDS,
      pollMs: 20,
    });
  }

  it("attempts each due message once and settles it sent, with no claim left", async () => {
    const ids = await queue(6);
    const { deliverer, attempted } = scripted(() => ({ kind: "delivered" }));
    const running = worker("one", deliverer);
    await running.start();
    try {
      const sent = await until("all sent", async () => {
        const found = await rows(ids);
        return found.every((row) => row.state === "sent") ? found : undefined;
      });
      assert.deepEqual(
        attempted.filter((id) => ids.includes(id)).sort((a, b) => a - b),
        ids,
      );
      assert.ok(sent.every((row) => row.attempts === 1 && row.claimed_by === null && row.sent_at !== null));
    } finally {
      await running.stop();
    }
  });

  it("queues a failed message again at the deliverer's time, refuses one for good, gives up an expired one", async () => {
    const [retried, refused, expired] = (await queue(3)) as [number, number, number];
    const verdicts = new Map<number, Verdict>([
      [retried, { kind: "failed", reason: "451 try later" }],
      [refused, { kind: "refused", reason: "550 no such user" }],
    ]);
    const hour = 3_600_000;
    const { deliverer, reported } = scripted(
      (message) => verdicts.get(message.id) ?? { kind: "failed", reason: "timed out" },
      { retryInMs: hour },
    );
    // The expired one: no time left to try it again.
    const schedule = deliverer.nextAttemptAt;
    deliverer.nextAttemptAt = (message, now, after) =>
      message.id === expired ? undefined : schedule(message, now, after);
    const running = worker("one", deliverer);
    const before = Date.now();
    await running.start();
    try {
      await until("three settled", async () => (reported.length >= 3 ? true : undefined));
    } finally {
      await running.stop();
    }
    const [again, no, gone] = await rows([retried, refused, expired]);
    assert.deepEqual([again?.state, again?.attempts, again?.last_error], ["queued", 1, "451 try later"]);
    const due = Date.parse(again?.next_attempt_at ?? "");
    // Written to the second: an hour after the attempt ended.
    assert.ok(due >= before + hour - 1000 && due <= Date.now() + hour, `due in an hour, not at ${due}`);
    assert.deepEqual([no?.state, no?.attempts, no?.last_error], ["refused", 1, "550 no such user"]);
    assert.deepEqual([gone?.state, gone?.attempts, gone?.last_error], ["failed", 1, "timed out"]);
    assert.ok([again, no, gone].every((row) => row?.claimed_by === null));
    assert.deepEqual(
      reported.sort(),
      [`${retried}:retry`, `${refused}:refused`, `${expired}:expired`].sort(),
    );
  });

  it("puts back at start what it had claimed before a restart, and what a silent instance claimed", async () => {
    const [mine, silent, busy] = (await queue(3)) as [number, number, number];
    const recent = new Date().toISOString();
    const claim = (id: number, by: string, at: string) =>
      held.store.db
        .updateTable("notifications")
        .set({ state: "sending", claimed_by: by, claimed_at: at, attempts: 1 })
        .where("id", "=", id)
        .execute();
    await claim(mine, "restarted", recent);
    await claim(silent, "dead", timestamp(new Date(Date.now() - 10 * 60_000)));
    // Another live instance in the middle of its attempt: not taken from it.
    await claim(busy, "alive", recent);
    const logs: string[] = [];
    const { deliverer, attempted } = scripted(() => ({ kind: "delivered" }));
    const running = worker("restarted", deliverer, logs);
    await running.start();
    try {
      await until("both sent", async () => {
        const [a, b] = await rows([mine, silent]);
        return a?.state === "sent" && b?.state === "sent" ? true : undefined;
      });
      await new Promise((resolve) => setTimeout(resolve, 200));
    } finally {
      await running.stop();
    }
    assert.equal(attempted.filter((id) => id === mine).length, 1);
    assert.equal(attempted.filter((id) => id === silent).length, 1);
    assert.ok(!attempted.includes(busy), "a live instance's claim is left to it");
    const [, , left] = await rows([mine, silent, busy]);
    assert.deepEqual([left?.state, left?.claimed_by], ["sending", "alive"]);
    const [twice] = await rows([mine]);
    assert.equal(twice?.attempts, 2, "the attempt cut short counts");
    assert.ok(logs.some((line) => line.includes(WORDS.restartReleased)));
    assert.ok(logs.some((line) => line.includes(WORDS.staleReleased)));
  });

  it("stops only once the attempts in flight are settled, leaving nothing claimed", async () => {
    const ids = await queue(3);
    let open: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    const { deliverer, attempted } = scripted(() => ({ kind: "delivered" }), { gate });
    const running = worker("stopping", deliverer);
    await running.start();
    await until("attempts in flight", async () =>
      ids.every((id) => attempted.includes(id)) ? true : undefined,
    );
    let stopped = false;
    const stopping = running.stop().then(() => {
      stopped = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(stopped, false, "stop waits for the attempts in flight");
    open();
    await stopping;
    const settled = await rows(ids);
    assert.ok(settled.every((row) => row.state === "sent" && row.claimed_by === null));
  });

  it("shares the queue between two workers on one database: each message attempted once", async () => {
    const ids = await queue(40);
    const { deliverer, attempted } = scripted(() => ({ kind: "delivered" }), { delayMs: 5 });
    const workers = [worker("first", deliverer), worker("second", deliverer)];
    await Promise.all(workers.map((each) => each.start()));
    try {
      await until("all sent", async () => {
        const found = await rows(ids);
        return found.every((row) => row.state === "sent") ? true : undefined;
      });
    } finally {
      await Promise.all(workers.map((each) => each.stop()));
    }
    const mine = attempted.filter((id) => ids.includes(id));
    assert.equal(mine.length, ids.length, "no message attempted twice");
    assert.equal(new Set(mine).size, ids.length);
    assert.ok((await rows(ids)).every((row) => row.attempts === 1));
  });
});
