// Long because it is one concern: the main thread's side of every media command and report (protocol.ts).
/**
 * The media plane as the main thread sees it: N media threads (worker threads, or this thread when
 * N is 0), each running a MediaEngine over its share of the RTP port range. Mixes are placed on the
 * least loaded thread and a call's stream next to the mix it will join; a stream that must join a mix
 * on another thread moves there, keeping its port and its RTP stream. A thread that dies is
 * replaced, and its mixes and streams report the failure so that their owners end alone.
 */
import { EventEmitter } from "node:events";
import { Worker } from "node:worker_threads";
import { LATENESS_BUCKETS_MS } from "../media-clock.js";
import { MediaError } from "../media-error.js";
import { checkTalkers } from "../mixer.js";
import { portPairCount } from "../rtp/port-allocator.js";
import type { RtpSession } from "../rtp/rtp-session.js";
import { NO_DROPS, type RtpSessionConfiguration } from "../rtp/rtp-stream.js";
import { MediaEngine } from "./media-engine.js";
import type {
  MediaCommand,
  MediaDown,
  MediaReplies,
  MediaRequest,
  MediaSound,
  MediaThreadOptions,
  MediaThreadStats,
  MediaUp,
  StreamStats,
} from "./protocol.js";
import { monotonicMs } from "./protocol.js";

export interface MediaPlaneLogger {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

export interface MediaPlaneOptions {
  /** Media threads; 0 runs the media on this thread. */
  readonly threads: number;
  readonly bindAddress: string;
  readonly rtpPorts: { readonly min: number; readonly max: number };
  /** An answered stream with no packets for this long reports a timeout (0: never). */
  readonly mediaTimeoutMs: number;
  /** The loudest talkers each room mixes at once; default the mixer's (3). */
  readonly mixTalkers?: number;
  /** Lets `MediaMix.injectFault` make a mix throw (tests of fault isolation). */
  readonly allowFaultInjection?: boolean;
  readonly logger?: MediaPlaneLogger;
}

export interface MediaPlaneStats {
  readonly threads: readonly MediaThreadStats[];
  /** The RTP/RTCP port pairs of each thread's share of the range (by thread, as `threads`). */
  readonly portPairs: readonly number[];
}

/** The figures of a thread not started yet. */
const IDLE_THREAD: MediaThreadStats = {
  ticks: 0,
  skippedTicks: 0,
  lateness: { p50: 0, p99: 0, max: 0 },
  latenessHistogram: { counts: LATENESS_BUCKETS_MS.map(() => 0).concat(0), sumMs: 0, count: 0 },
  rtpTotals: { packetsReceived: 0, packetsLost: 0, packetsLate: 0, framesConcealed: 0, dropped: NO_DROPS },
  mixes: 0,
  legs: 0,
  streams: [],
  portPairsInUse: 0,
};

type Pending = { resolve: (value: unknown) => void; reject: (error: Error) => void };

/** The channel to one engine: a worker thread, or an engine on this thread. */
interface EngineChannel {
  post(message: MediaDown | { type: "shutdown" }): void;
  /** Stops the engine; resolves once it is gone. */
  stop(): Promise<void>;
  /** Ends the thread at once, as a crash would. */
  kill(): void;
  /** The engine itself when it runs on this thread. */
  readonly local: MediaEngine | undefined;
}

const WORKER_ENTRY = new URL(
  import.meta.url.endsWith(".ts") ? "./media-worker.ts" : "./media-worker.js",
  import.meta.url,
);

function workerChannel(
  options: MediaThreadOptions,
  onUp: (message: MediaUp) => void,
  onExit: (reason: string) => void,
): EngineChannel {
  // TypeScript sources need the tsx loader in the worker too.
  const viaLoader = WORKER_ENTRY.pathname.endsWith(".ts");
  const worker = new Worker(viaLoader ? new URL("./worker-loader.mjs", import.meta.url) : WORKER_ENTRY, {
    workerData: { ...options, entry: WORKER_ENTRY.href },
    name: "bridgeline-media",
  });
  let stopping = false;
  let failure = "";
  worker.on("message", onUp);
  worker.on("error", (error) => {
    failure = error.stack ?? error.message;
  });
  // Made once: a thread that already ended (a crash during shutdown) must not be waited for again.
  const exited = new Promise<void>((resolve) =>
    worker.once("exit", (code) => {
      if (!stopping) onExit(failure || `exited with code ${code}`);
      resolve();
    }),
  );
  return {
    post: (message) => worker.postMessage(message),
    stop: async () => {
      stopping = true;
      worker.postMessage({ type: "shutdown" });
      const timer = setTimeout(() => void worker.terminate(), 2000);
      await exited;
      clearTimeout(timer);
    },
    kill: () => void worker.terminate(),
    local: undefined,
  };
}

function localChannel(options: MediaThreadOptions, onUp: (message: MediaUp) => void): EngineChannel {
  // Messages go both ways asynchronously, as they would between threads.
  const engine = new MediaEngine(options, (message) => queueMicrotask(() => onUp(message)));
  return {
    post: (message) =>
      queueMicrotask(() => {
        if (message.type !== "shutdown") engine.receive(message);
      }),
    stop: () => engine.close(),
    kill: () => {
      throw new Error("media on the main thread cannot be killed apart from it");
    },
    local: engine,
  };
}

/** One media thread: its channel, what runs on it, and the requests waiting for an answer. */
export class MediaThread {
  readonly streams = new Map<number, MediaStream>();
  readonly mixes = new Map<number, MediaMix>();
  readonly #pending = new Map<number, Pending>();
  #nextRequestId = 1;
  /** Started on first use: a service that never carries a call starts no thread. */
  #channel: EngineChannel | undefined;
  readonly #open: () => EngineChannel;
  #failed = false;

  constructor(
    readonly index: number,
    private readonly plane: MediaPlane,
    open: () => EngineChannel,
  ) {
    this.#open = open;
  }

  /** Streams and mixes on the thread: where a new mix goes. */
  get load(): number {
    return this.streams.size + this.mixes.size;
  }

  get failed(): boolean {
    return this.#failed;
  }

  /** The engine, when the media runs on this thread. */
  get localEngine(): MediaEngine | undefined {
    return this.#channel?.local;
  }

  /** Whether the thread has been needed yet. */
  get started(): boolean {
    return this.#channel !== undefined;
  }

  get #engine(): EngineChannel {
    this.#channel ??= this.#open();
    return this.#channel;
  }

  command(command: MediaCommand): void {
    if (!this.#failed) this.#engine.post(command);
  }

  request<T extends MediaRequest["type"]>(
    request: Extract<MediaRequest, { type: T }>,
  ): Promise<MediaReplies[T]> {
    if (this.#failed)
      return Promise.reject(new MediaError("MEDIA_ERR_THREAD_FAILED", "the media thread failed"));
    const requestId = this.#nextRequestId++;
    return new Promise((resolve, reject) => {
      this.#pending.set(requestId, { resolve: resolve as (value: unknown) => void, reject });
      this.#engine.post({ ...request, requestId } as MediaDown);
    });
  }

  receive(message: MediaUp): void {
    if (message.type !== "reply") {
      this.plane.deliver(message);
      return;
    }
    const pending = this.#pending.get(message.requestId);
    if (pending === undefined) return;
    this.#pending.delete(message.requestId);
    if (message.ok) pending.resolve(message.value);
    else pending.reject(new MediaError(message.code, message.message));
  }

  /** The thread is gone: every request fails, every mix and stream on it reports it. */
  fail(reason: string): void {
    this.#failed = true;
    for (const pending of this.#pending.values())
      pending.reject(new MediaError("MEDIA_ERR_THREAD_FAILED", `the media thread failed: ${reason}`));
    this.#pending.clear();
    for (const mix of this.mixes.values()) mix.failed(`the media thread failed: ${reason}`);
    for (const stream of this.streams.values()) stream.failed(`the media thread failed: ${reason}`);
  }

  /** Stops the thread; a request it did not answer by then is refused. */
  async stop(): Promise<void> {
    this.#failed = true;
    await this.#channel?.stop();
    for (const pending of this.#pending.values())
      pending.reject(new MediaError("MEDIA_ERR_THREAD_FAILED", "the media thread stopped"));
    this.#pending.clear();
  }

  /** Ends the thread as a crash would (tests of fault isolation, an operator's last resort). */
  kill(): void {
    this.#engine.kill();
  }
}

export class MediaPlane {
  readonly #options: MediaPlaneOptions;
  readonly #threads: MediaThread[] = [];
  /** Every stream and mix by id, wherever it runs, for the events coming up. */
  readonly #streams = new Map<number, MediaStream>();
  readonly #mixes = new Map<number, MediaMix>();
  #nextId = 1;
  #closing = false;

  constructor(options: MediaPlaneOptions) {
    if (!Number.isInteger(options.threads) || options.threads < 0)
      throw new RangeError(`media threads must be a whole number, not ${options.threads}`);
    // Here, not in each thread's first mix: a bad count would end every media thread in turn.
    if (options.mixTalkers !== undefined) checkTalkers(options.mixTalkers);
    this.#options = options;
    const count = Math.max(1, options.threads);
    for (let index = 0; index < count; index++) {
      this.#threads.push(this.#newThread(index));
    }
  }

  /** The media threads, in order (a replaced thread takes its predecessor's place). */
  get threads(): readonly MediaThread[] {
    return this.#threads;
  }

  /**
   * Opens an RTP stream on the thread of what it will work with when known (the mix it will join, the
   * stream it will be relayed with), else on the least loaded.
   */
  async openStream(near?: MediaMix | MediaStream): Promise<MediaStream> {
    const thread = near !== undefined && !near.thread.failed ? near.thread : this.#leastLoaded();
    const stream = new MediaStream(this.#nextId++, thread, this);
    thread.streams.set(stream.id, stream);
    this.#streams.set(stream.id, stream);
    try {
      const { port } = await thread.request({ type: "open-stream", streamId: stream.id });
      stream.opened(port);
      return stream;
    } catch (error) {
      this.forget(stream);
      throw error;
    }
  }

  /**
   * Answers a browser's WebRTC offer with a stream on the thread of what it will work with (it cannot
   * move later: its peer's transport stays where it began).
   */
  async openWebRtcStream(
    offer: string,
    candidateAddresses: readonly string[],
    near?: MediaMix | MediaStream,
  ): Promise<{ stream: MediaStream; answer: string }> {
    const thread = near !== undefined && !near.thread.failed ? near.thread : this.#leastLoaded();
    const stream = new MediaStream(this.#nextId++, thread, this);
    thread.streams.set(stream.id, stream);
    this.#streams.set(stream.id, stream);
    try {
      const { port, answer } = await thread.request({
        type: "open-webrtc-stream",
        streamId: stream.id,
        offer,
        candidateAddresses,
      });
      stream.opened(port);
      return { stream, answer };
    } catch (error) {
      this.forget(stream);
      throw error;
    }
  }

  /** A new mix on the least loaded thread. */
  openMix(): MediaMix {
    const thread = this.#leastLoaded();
    const mix = new MediaMix(this.#nextId++, thread, this);
    thread.mixes.set(mix.id, mix);
    this.#mixes.set(mix.id, mix);
    thread.command({ type: "open-mix", mixId: mix.id });
    return mix;
  }

  /** Every thread's figures; with `resetLateness` each starts a new lateness record after answering. */
  async stats(options: { resetLateness?: boolean } = {}): Promise<MediaPlaneStats> {
    const threads = await Promise.all(
      this.#threads.map((thread) =>
        thread.started
          ? thread.request({ type: "stats", resetLateness: options.resetLateness ?? false })
          : IDLE_THREAD,
      ),
    );
    const portPairs = this.#threads.map((_thread, index) => {
      const { min, max } = this.#threadOptions(index).rtpPorts;
      return portPairCount(min, max);
    });
    return { threads, portPairs };
  }

  async close(): Promise<void> {
    this.#closing = true;
    await Promise.all(this.#threads.map((thread) => thread.stop()));
  }

  deliver(message: Exclude<MediaUp, { type: "reply" }>): void {
    switch (message.type) {
      case "digit":
        this.#streams.get(message.streamId)?.emit("digit", message.key);
        return;
      case "talking":
        this.#streams.get(message.streamId)?.emit("talking", message.talking);
        return;
      case "media-timeout":
        this.#streams.get(message.streamId)?.emit("timeout");
        return;
      case "stream-failed":
        this.#streams.get(message.streamId)?.failed(message.reason);
        return;
      case "peer-closed":
        this.#streams.get(message.streamId)?.peerClosed(message.reason, message.stats);
        return;
      case "mix-failed":
        this.#options.logger?.error({ mixId: message.mixId, reason: message.reason }, "a mix failed");
        this.#mixes.get(message.mixId)?.failed(message.reason);
        return;
      case "srtp-authentication-failed":
        // Someone sends on the stream's port without its key: a misconfigured peer, or an attack.
        this.#options.logger?.warn(
          {
            streamId: message.streamId,
            address: message.address,
            port: message.port,
            packets: message.count,
          },
          "SRTP packets failed authentication and were dropped",
        );
        return;
      case "recording-failed":
        this.#mixes.get(message.mixId)?.emit("recording-failed", message.reason);
        return;
    }
  }

  forget(item: MediaStream | MediaMix): void {
    if (item instanceof MediaStream) {
      this.#streams.delete(item.id);
      item.thread.streams.delete(item.id);
    } else {
      this.#mixes.delete(item.id);
      item.thread.mixes.delete(item.id);
    }
  }

  #leastLoaded(): MediaThread {
    let best: MediaThread | undefined;
    for (const thread of this.#threads) if (best === undefined || thread.load < best.load) best = thread;
    return best as MediaThread;
  }

  /** The thread's share of the port range: threads never contend for a port. */
  #threadOptions(index: number): MediaThreadOptions {
    const { min, max } = this.#options.rtpPorts;
    const count = Math.max(1, this.#options.threads);
    const pairs = Math.floor((max - min + 1) / 2);
    const share = Math.floor(pairs / count);
    const first = min + 2 * share * index;
    return {
      bindAddress: this.#options.bindAddress,
      rtpPorts: { min: first, max: index === count - 1 ? max : first + 2 * share - 1 },
      mediaTimeoutMs: this.#options.mediaTimeoutMs,
      mixTalkers: this.#options.mixTalkers,
      allowFaultInjection: this.#options.allowFaultInjection ?? false,
    };
  }

  #newThread(index: number): MediaThread {
    const options = this.#threadOptions(index);
    const thread: MediaThread = new MediaThread(index, this, () => {
      const onUp = (message: MediaUp) => thread.receive(message);
      return this.#options.threads === 0
        ? localChannel(options, onUp)
        : workerChannel(options, onUp, (reason) => this.#replace(thread, reason));
    });
    return thread;
  }

  /** A dead thread's place goes to a new one; what ran on it is told, and ends. */
  #replace(dead: MediaThread, reason: string): void {
    if (this.#closing) return;
    this.#options.logger?.error(
      { thread: dead.index, reason, mixes: dead.mixes.size, streams: dead.streams.size },
      "a media thread died: its rooms end, a new thread takes its place",
    );
    this.#threads[dead.index] = this.#newThread(dead.index);
    dead.fail(reason);
  }
}

export interface MediaStreamEvents {
  /** A key pressed at the far end, once per press. */
  digit: [key: string];
  /** While in a mix: started (true) or stopped (false) talking. */
  talking: [talking: boolean];
  /** The far end has sent nothing for the media timeout. */
  timeout: [];
  /** The stream's media broke (its thread died): it carries nothing more. */
  failed: [reason: string];
  /** The far end closed the stream's transport (a browser that left): it carries nothing more. */
  closed: [reason: string];
}

/** One call's RTP stream on a media thread. */
export class MediaStream extends EventEmitter<MediaStreamEvents> {
  #port = 0;
  #mix: MediaMix | null = null;
  /** Commands wait for a move to another thread to finish. */
  #moving: Promise<void> | null = null;
  #closed = false;
  /** Once closed: its final counts, null when they were lost (its thread died). */
  #final: Promise<StreamStats | null> | null = null;

  constructor(
    readonly id: number,
    public thread: MediaThread,
    private readonly plane: MediaPlane,
  ) {
    super();
  }

  /** The local RTP port (RTCP above it). */
  get localPort(): number {
    return this.#port;
  }

  /** The RTP session itself when media runs on this thread: its frames are read and written directly. */
  get localSession(): RtpSession | undefined {
    return this.thread.localEngine?.session(this.id);
  }

  opened(port: number): void {
    this.#port = port;
  }

  configure(config: RtpSessionConfiguration): void {
    this.#command({ type: "configure-stream", streamId: this.id, config });
  }

  sendDigits(keys: string): Promise<boolean> {
    return this.#request({ type: "send-digits", streamId: this.id, keys }).catch(() => false);
  }

  play(sound: MediaSound): Promise<void> {
    return this.#request({ type: "play", streamId: this.id, sound }).catch(() => undefined);
  }

  stopPlaying(): void {
    this.#command({ type: "stop-playing", streamId: this.id });
  }

  recordVoice(maxMs: number): Promise<Int16Array> {
    return this.#request({ type: "record-voice", streamId: this.id, maxMs }).catch(() => new Int16Array(0));
  }

  stopRecordingVoice(): void {
    this.#command({ type: "stop-recording-voice", streamId: this.id });
  }

  /** Into `mix`, moving to its thread first when the stream runs on another. */
  join(mix: MediaMix, muted: boolean): void {
    if (this.#closed) return;
    if (mix.thread !== this.thread && this.#moving === null) this.#moving = this.#moveTo(mix.thread);
    this.#mix = mix;
    this.#command({ type: "join", streamId: this.id, mixId: mix.id, muted });
  }

  setMuted(muted: boolean): void {
    if (this.#mix !== null) this.#command({ type: "mute", streamId: this.id, muted });
  }

  /**
   * Relays this stream and `peer` to each other, packet for packet, until either closes; `peer` moves
   * to this stream's thread first when it runs on another.
   */
  relayWith(peer: MediaStream): void {
    if (this.#closed || peer === this) return;
    this.leave();
    peer.leave();
    peer.#whenOn(this.thread, () =>
      this.#command({ type: "relay", streamId: this.id, peerStreamId: peer.id }),
    );
  }

  leave(): void {
    if (this.#mix === null) return;
    this.#mix = null;
    this.#command({ type: "leave", streamId: this.id });
  }

  /**
   * Closes the stream (after a move under way); resolves once it is closed, with its final counts
   * taken just before its session closed (of the whole stream, on every thread it ran on). Null when
   * they were lost: its thread died or stopped first. Called again, or after the stream closed by
   * itself (its peer left, its thread died), it resolves with the same; it never rejects.
   */
  close(): Promise<StreamStats | null> {
    if (this.#final !== null) return this.#final;
    this.#closed = true;
    this.#final = this.#request({ type: "close-stream", streamId: this.id })
      .catch(() => null)
      .finally(() => this.plane.forget(this));
    return this.#final;
  }

  peerClosed(reason: string, stats: StreamStats): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#final = Promise.resolve(stats);
    this.plane.forget(this);
    this.emit("closed", reason);
  }

  failed(reason: string): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#final = Promise.resolve(null);
    this.plane.forget(this);
    this.emit("failed", reason);
  }

  /** Runs `then` once this stream is on `target`, moving it there first when it is elsewhere. */
  #whenOn(target: MediaThread, then: () => void): void {
    if (this.#closed) return;
    if (target !== this.thread && this.#moving === null) this.#moving = this.#moveTo(target);
    if (this.#moving === null) then();
    else
      void this.#moving.then(() => {
        if (!this.#closed && this.thread === target) then();
      });
  }

  async #moveTo(target: MediaThread): Promise<void> {
    const source = this.thread;
    try {
      const { port, handover } = await source.request({ type: "detach-stream", streamId: this.id });
      source.streams.delete(this.id);
      this.thread = target;
      target.streams.set(this.id, this);
      await target.request({ type: "open-stream", streamId: this.id, port, handover });
    } catch (error) {
      this.failed(`the stream could not move to media thread ${target.index}: ${(error as Error).message}`);
    } finally {
      this.#moving = null;
    }
  }

  #command(command: MediaCommand): void {
    if (this.#moving === null) this.thread.command(command);
    else void this.#moving.then(() => this.thread.command(command));
  }

  async #request<T extends MediaRequest["type"]>(
    request: Extract<MediaRequest, { type: T }>,
  ): Promise<MediaReplies[T]> {
    if (this.#moving !== null) await this.#moving;
    return this.thread.request(request);
  }
}

export interface MediaMixEvents {
  /** The mix broke (its tick threw, or its thread died): its streams hear nothing more. */
  failed: [reason: string];
  /** Its recording could not be written (the disk full, say) and stopped; the mix goes on. */
  "recording-failed": [reason: string];
}

/** One room's mix on a media thread. */
export class MediaMix extends EventEmitter<MediaMixEvents> {
  #closed = false;

  constructor(
    readonly id: number,
    readonly thread: MediaThread,
    private readonly plane: MediaPlane,
  ) {
    super();
  }

  play(sound: MediaSound): void {
    if (!this.#closed) this.thread.command({ type: "play-mix", mixId: this.id, sound });
  }

  setHold(onHold: boolean): void {
    if (!this.#closed) this.thread.command({ type: "hold", mixId: this.id, onHold });
  }

  /**
   * The room's calls send audio for at most `ms` from now, then nothing (no RTP at all for the
   * room's streams: the mix, hold music, prompts, DTMF) until told again. Never called: no limit.
   * Infinity lifts the limit. The room goes on meanwhile (it mixes, records, hears, plays its sounds
   * to their end), it only sends nothing; a stream that joins later obeys the limit, one that leaves
   * is free of it.
   */
  sendFor(ms: number): void {
    if (Number.isNaN(ms)) throw new RangeError("sendFor takes milliseconds, not NaN");
    // Made absolute here, at the call: the command may reach a thread that was stopped meanwhile.
    if (!this.#closed) this.thread.command({ type: "send-until", mixId: this.id, until: monotonicMs() + ms });
  }

  startRecording(file: string): Promise<void> {
    return this.thread.request({ type: "start-recording", mixId: this.id, file });
  }

  pauseRecording(): Promise<void> {
    return this.thread.request({ type: "pause-recording", mixId: this.id });
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.plane.forget(this);
    await this.thread.request({ type: "close-mix", mixId: this.id }).catch(() => undefined);
  }

  /** Makes the mix's next tick throw, when the plane allows it (tests of fault isolation). */
  injectFault(): void {
    this.thread.command({ type: "inject-fault", mixId: this.id });
  }

  failed(reason: string): void {
    if (this.#closed) return;
    this.#closed = true;
    this.plane.forget(this);
    this.emit("failed", reason);
  }
}
