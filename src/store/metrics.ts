/** Counts for the service's metrics, read at each scrape: whole-database figures, the same from every instance. */
import type { Store } from "./database.js";

export interface StoreCounts {
  readonly conferencesByState: ReadonlyMap<string, number>;
  /** Attendees of started conferences, by attendee state. */
  readonly liveAttendeesByState: ReadonlyMap<string, number>;
  readonly notificationsByState: ReadonlyMap<string, number>;
  readonly webhookDeliveriesByState: ReadonlyMap<string, number>;
}

export async function readStoreCounts(store: Store): Promise<StoreCounts> {
  const [conferences, attendees, notifications, deliveries] = await Promise.all([
    store.db
      .selectFrom("conferences")
      .select(["state", (eb) => eb.fn.countAll<number>().as("count")])
      .groupBy("state")
      .execute(),
    store.db
      .selectFrom("attendees")
      .innerJoin("conferences", "conferences.id", "attendees.conference_id")
      .where("conferences.state", "=", "started")
      .select(["attendees.state as state", (eb) => eb.fn.countAll<number>().as("count")])
      .groupBy("attendees.state")
      .execute(),
    store.db
      .selectFrom("notifications")
      .select(["state", (eb) => eb.fn.countAll<number>().as("count")])
      .groupBy("state")
      .execute(),
    store.db
      .selectFrom("webhook_deliveries")
      .select(["state", (eb) => eb.fn.countAll<number>().as("count")])
      .groupBy("state")
      .execute(),
  ]);
  const byState = (rows: { state: string; count: number }[]) =>
    new Map(rows.map((row) => [row.state, Number(row.count)]));
  return {
    conferencesByState: byState(conferences),
    liveAttendeesByState: byState(attendees),
    notificationsByState: byState(notifications),
    webhookDeliveriesByState: byState(deliveries),
  };
}
