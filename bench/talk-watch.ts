/**
 * Who is talking, as the service tells its owner on the events stream (`GET .../events`:
 * talking-started and talking-stopped, the talk detector's verdict on each leg's decoded audio), read
 * from when it is opened on. For the benchmarks that check a leg was heard (room, browsers).
 */
export class TalkWatch {
  /** Attendees talking now. */
  readonly talking = new Set<number>();
  /** Attendees whose talking changed since `mark()`. */
  readonly changed = new Set<number>();
  /** When (Date.now()) each attendee was first told talking. */
  readonly firstTalking = new Map<number, number>();
  /** Why the stream ended before `close()`, once it has. */
  ended: string | null = null;
  readonly #abort = new AbortController();

  private constructor() {}

  static async open(baseUrl: string, ownerPath: string, authorization: string): Promise<TalkWatch> {
    const watch = new TalkWatch();
    const response = await fetch(`${baseUrl}${ownerPath}/events`, {
      headers: { accept: "text/event-stream", authorization },
      signal: watch.#abort.signal,
    });
    if (response.status !== 200 || response.body === null)
      throw new Error(`GET ${ownerPath}/events answered ${response.status}: ${await response.text()}`);
    void watch.#read(response.body).catch((error: unknown) => {
      if (!watch.#abort.signal.aborted) watch.ended = String(error);
    });
    return watch;
  }

  /** Starts a span: `changed` forgets what came before. */
  mark(): void {
    this.changed.clear();
  }

  close(): void {
    this.#abort.abort();
  }

  async #read(body: ReadableStream<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder();
    let text = "";
    for await (const chunk of body) {
      text += decoder.decode(chunk, { stream: true });
      for (let end = text.indexOf("\n\n"); end !== -1; end = text.indexOf("\n\n")) {
        this.#event(text.slice(0, end));
        text = text.slice(end + 2);
      }
    }
    if (!this.#abort.signal.aborted) this.ended = "the events stream ended";
  }

  /** One event of the stream (its `event:` and `data:` lines), if it is about talking. */
  #event(block: string): void {
    const field = (name: string) =>
      block
        .split("\n")
        .find((line) => line.startsWith(`${name}: `))
        ?.slice(name.length + 2);
    const type = field("event");
    if (type !== "talking-started" && type !== "talking-stopped") return;
    const { attendeeId } = JSON.parse(field("data") ?? "{}") as { attendeeId?: number };
    if (attendeeId === undefined) return;
    if (type === "talking-started") {
      this.talking.add(attendeeId);
      if (!this.firstTalking.has(attendeeId)) this.firstTalking.set(attendeeId, Date.now());
    } else this.talking.delete(attendeeId);
    this.changed.add(attendeeId);
  }
}
