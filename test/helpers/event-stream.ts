/** Reads a Server-Sent Events stream of the service as a test client (an EventSource would). */
import { Agent, request } from "undici";

export interface StreamEvent {
  id: number;
  type: string;
  data: { conferenceId: number; attendeeId: number | null; at: string; reason?: string; encryption?: string };
}

const insecureAgent = new Agent({ connect: { rejectUnauthorized: false } });

export class EventStream {
  readonly events: StreamEvent[] = [];
  /** Every line received, comments included. */
  readonly lines: string[] = [];
  private readonly waiters = new Set<() => void>();
  private closed = false;

  private constructor(
    readonly status: number,
    readonly headers: Record<string, string | string[] | undefined>,
    private readonly body: AsyncIterable<Buffer> & { destroy(): void },
  ) {
    void this.read();
  }

  /** Opens `url` with Basic credentials or a cookie, and Last-Event-ID when given. */
  static async open(
    url: string,
    options: { auth?: [string, string]; cookie?: string; lastEventId?: number } = {},
  ): Promise<EventStream> {
    const headers: Record<string, string> = { accept: "text/event-stream" };
    if (options.auth)
      headers.authorization = `Basic ${Buffer.from(`${options.auth[0]}:${options.auth[1]}`).toString("base64")}`;
    if (options.cookie) headers.cookie = options.cookie;
    if (options.lastEventId !== undefined) headers["last-event-id"] = String(options.lastEventId);
    const response = await request(url, {
      headers,
      dispatcher: url.startsWith("https:") ? insecureAgent : undefined,
    });
    return new EventStream(
      response.statusCode,
      response.headers,
      response.body as unknown as AsyncIterable<Buffer> & { destroy(): void },
    );
  }

  /** The first event (from the start of the stream) that matches, waiting for it if need be. */
  async waitFor(
    what: string,
    match: (event: StreamEvent) => boolean,
    timeoutMs = 15_000,
  ): Promise<StreamEvent> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.events.find(match);
      if (found) return found;
      if (this.closed) throw new Error(`stream closed before ${what}: ${this.types().join(", ")}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting for ${what}; got: ${this.types().join(", ")}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.add(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  types(): string[] {
    return this.events.map((event) => event.type);
  }

  get ended(): boolean {
    return this.closed;
  }

  close(): void {
    this.body.destroy();
  }

  private async read(): Promise<void> {
    let buffer = "";
    let current: { id?: string; type?: string; data?: string } = {};
    try {
      for await (const chunk of this.body) {
        buffer += chunk.toString("utf8");
        let newline = buffer.indexOf("\n");
        while (newline >= 0) {
          const line = buffer.slice(0, newline);
          buffer = buffer.slice(newline + 1);
          this.lines.push(line);
          if (line === "") {
            if (current.data !== undefined)
              this.events.push({
                id: Number(current.id),
                type: current.type ?? "message",
                data: JSON.parse(current.data),
              });
            current = {};
          } else if (line.startsWith("id: ")) current.id = line.slice(4);
          else if (line.startsWith("event: ")) current.type = line.slice(7);
          else if (line.startsWith("data: ")) current.data = line.slice(6);
          newline = buffer.indexOf("\n");
        }
        this.wake();
      }
    } catch {
      // Destroyed by close(), or the service went away.
    }
    this.closed = true;
    this.wake();
  }

  private wake(): void {
    for (const waiter of this.waiters) waiter();
    this.waiters.clear();
  }
}
