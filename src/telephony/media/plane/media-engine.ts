// Long because it is one concern: the media thread's side of every command in protocol.ts, on one clock.
/**
 * The media of one thread: the RTP streams and mixes placed on it, on a drift-free 20 ms clock of its
 * own. It carries out the main thread's commands (protocol.ts) and reports digits, talking, media
 * timeouts and its figures. A mix or a stream whose tick throws is taken out alone and reported, so
 * that the others keep their pace; anything else that throws ends the thread, which the main thread
 * replaces.
 */
import { mkdir } from "node:fs/promises";
import path from "node:path";
import { PROMPT_NAMES } from "../../../domain/prompt.js";
import {
  type AudioEncoder,
  type AudioRate,
  createEncoder,
  encoderKey,
  MAX_ENCODED_FRAME_BYTES,
} from "../codec/audio-codec.js";
import { DigitMerger } from "../dtmf/digit-merger.js";
import { InbandDtmfDetector } from "../dtmf/inband-detector.js";
import type { PlayoutKind } from "../jitter-buffer.js";
import { MediaClock } from "../media-clock.js";
import { MediaError, mediaErrorCode } from "../media-error.js";
import { frameSamples, Mixer, type MixerSlot } from "../mixer.js";
import { concatPrompts, prompt } from "../prompts.js";
import { convertSampleRate, createResampler, FrameConverter, type Resampler } from "../resampler.js";
import { RtpPortAllocator } from "../rtp/port-allocator.js";
import { RtpSession } from "../rtp/rtp-session.js";
import { type MediaDirection, NO_DROPS, type RtpDrops } from "../rtp/rtp-stream.js";
import { TalkDetector } from "../talk-detector.js";
import { entryTone, exitTone, holdMusic, LoopingPlayer } from "../tones.js";
import { WavRecorder } from "../wav-recorder.js";
import { checkOffer, WebRtcPeer } from "../webrtc/webrtc-peer.js";
import type {
  MediaCommand,
  MediaDown,
  MediaReplies,
  MediaRequest,
  MediaSound,
  MediaThreadOptions,
  MediaThreadStats,
  MediaUp,
  RtpTotals,
  StreamStats,
} from "./protocol.js";
import { monotonicMs, SOUND_SAMPLE_RATE } from "./protocol.js";

/** Media timeouts are looked for once a second. */
const TIMEOUT_CHECK_TICKS = 50;

export type PostUp = (message: MediaUp, transfer?: ArrayBuffer[]) => void;

/**
 * A sound as a stream or a room plays it: at the rate it is wanted at, 16 or 8 kHz, each made once
 * (prompts and tones are kept at both rates by their modules; samples from elsewhere are converted
 * on first need), so a stream or a room whose rate changes mid-sound goes on with the same sound.
 */
class RatedSound {
  readonly #made = new Map<AudioRate, Int16Array>();

  constructor(private readonly make: (rate: AudioRate) => Int16Array) {}

  at(rate: AudioRate): Int16Array {
    let samples = this.#made.get(rate);
    if (samples === undefined) {
      samples = this.make(rate);
      this.#made.set(rate, samples);
    }
    return samples;
  }
}

function ratedSound(sound: MediaSound): RatedSound {
  if ("prompts" in sound) return new RatedSound((rate) => concatPrompts([...sound.prompts], rate));
  if ("tone" in sound)
    return new RatedSound((rate) => (sound.tone === "entry" ? entryTone(rate) : exitTone(rate)));
  return new RatedSound((rate) => convertSampleRate(sound.samples, SOUND_SAMPLE_RATE, rate));
}

function closeSocket(socket: { close(closed: () => void): void }): Promise<void> {
  return new Promise((closed) => socket.close(closed));
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

interface Playing {
  readonly sound: RatedSound;
  /** 20 ms frames played so far: the place in the sound whatever the rate it is played at. */
  frames: number;
  readonly done: () => void;
}

/** What the caller says, kept for `record-voice`, at the stream's rate when it started. */
interface VoiceRecording {
  readonly samples: Int16Array;
  readonly rate: AudioRate;
  length: number;
  readonly done: (samples: Int16Array) => void;
}

class Stream {
  /**
   * Ticked by the engine (prompts or silence out, audio in) once something played to it, recorded
   * it or joined it to a mix; before that its frames are its owner's (media on the owner's thread).
   */
  driven = false;
  mix: Mix | null = null;
  slot: MixerSlot | null = null;
  /** The stream this one's packets are relayed with (both ways), when it is; it is then not ticked. */
  relay: Stream | null = null;
  readonly talk = new TalkDetector();
  /** Sounds for this caller alone, outside a mix, one after another. */
  readonly queue: Playing[] = [];
  /** Sounds for this caller alone inside a mix, with the mix tick at which each has been heard. */
  readonly mixPlays: { endsAt: number; done: () => void }[] = [];
  voice: VoiceRecording | null = null;
  direction: MediaDirection | null = null;
  /** performance.now() when configured, the start of the media timeout before any packet. */
  configuredAt = 0;
  timedOut = false;
  /** The session's audio rate the buffers below are sized for (sync() follows the session). */
  rate: AudioRate = 8000;
  /** The session's encoder key, for the room's shared encodings; null before it is configured. */
  encoderKey: string | null = null;
  out = new Int16Array(frameSamples(8000));
  in = new Int16Array(frameSamples(8000));
  /**
   * In a room at a higher rate than ours: what we say taken up to its rate, and what we alone hear
   * taken down to ours. null when the rates agree.
   */
  #toRoom: FrameConverter | null = null;
  #fromRoom: FrameConverter | null = null;
  /** The room rate and our rate the converters were made for. */
  #roomRate: AudioRate = 8000;
  #fittedRate: AudioRate = 8000;
  /** The mixer's view of this stream, frames at the room's rate. */
  readonly port = {
    read: (out: Int16Array): boolean => {
      const toRoom = this.#toRoom;
      if (toRoom === null) return this.hear(out) !== "silence";
      const heard = this.hear(this.in) !== "silence";
      if (heard) toRoom.process(this.in, out, this.#tick);
      return heard;
    },
    write: (frame: Int16Array, shared: boolean): void => {
      if (shared && this.mix !== null) this.mix.sendShared(this, frame);
      else if (this.#fromRoom === null) this.session.sendFrame(frame);
      else {
        this.#fromRoom.process(frame, this.out, this.#tick);
        this.session.sendFrame(this.out);
      }
    },
  };

  /** The tick of the room the mixer is running (ports are read and written only then). */
  get #tick(): number {
    return this.mix?.ticks ?? 0;
  }

  constructor(
    readonly id: number,
    readonly session: RtpSession,
  ) {}

  /**
   * Follows the session's negotiation: frames of its rate, and its encoder. A voice being recorded
   * ends here (it is kept at one rate). Returns whether the rate changed.
   */
  sync(): boolean {
    const spec = this.session.encoderSpec;
    this.encoderKey = spec === null ? null : encoderKey(spec);
    const rate = this.session.audioRate;
    if (rate === this.rate) return false;
    this.finishVoice();
    this.rate = rate;
    this.out = new Int16Array(frameSamples(rate));
    this.in = new Int16Array(frameSamples(rate));
    return true;
  }

  /**
   * Sets the converters for a room at `roomRate` (a room is never narrower than its members); those
   * in place are kept (and their filters' history) while the two rates stay what they were.
   */
  fitRoom(roomRate: AudioRate): void {
    if (roomRate === this.#roomRate && this.rate === this.#fittedRate) return;
    this.#roomRate = roomRate;
    this.#fittedRate = this.rate;
    const converts = roomRate !== this.rate;
    this.#toRoom = converts ? new FrameConverter(this.rate, roomRate) : null;
    this.#fromRoom = converts ? new FrameConverter(roomRate, this.rate) : null;
  }

  /** Reads the caller's next frame at the stream's rate, keeping it when their voice is being recorded. */
  hear(out: Int16Array): PlayoutKind {
    const kind = this.session.readFrame(out);
    const voice = this.voice;
    if (voice !== null) {
      if (kind === "frame") voice.samples.set(out, voice.length);
      voice.length += out.length;
      if (voice.length === voice.samples.length) this.finishVoice();
    }
    return kind;
  }

  /** One tick outside a mix: the next frame of what is queued (silence when nothing), the caller's frame in. */
  tickAlone(): void {
    const out = this.out;
    const playing = this.queue[0];
    if (playing === undefined) {
      out.fill(0);
    } else {
      const samples = playing.sound.at(this.rate);
      const start = playing.frames * out.length;
      const take = Math.max(0, Math.min(out.length, samples.length - start));
      out.set(samples.subarray(start, start + take));
      out.fill(0, take);
      playing.frames++;
      if (start + take >= samples.length) {
        this.queue.shift();
        playing.done();
      }
    }
    this.session.sendFrame(out);
    this.hear(this.in);
  }

  /** Ends the voice being recorded, answering it at the rate sounds cross the threads at. */
  finishVoice(): void {
    const voice = this.voice;
    if (voice === null) return;
    this.voice = null;
    const heard = voice.samples.subarray(0, voice.length);
    voice.done(
      voice.rate === SOUND_SAMPLE_RATE
        ? heard.slice()
        : convertSampleRate(heard, voice.rate, SOUND_SAMPLE_RATE),
    );
  }

  stopPlaying(): void {
    for (const playing of this.queue.splice(0)) playing.done();
    for (const play of this.mixPlays.splice(0)) play.done();
  }
}

/** The shared frame of a room in one encoding, made once a tick for every listener who hears it. */
interface SharedEncoding {
  readonly encoder: AudioEncoder;
  /** The payload of the tick `tick`: its first `length` bytes. */
  readonly payload: Uint8Array;
  length: number;
  tick: number;
}

/** A room's shared encoding nobody has heard for this many ticks (10 s) is let go, its encoder with it. */
const SHARED_ENCODING_IDLE_TICKS = 500;

class Mix {
  readonly members = new Set<Stream>();
  hold: LoopingPlayer | null = null;
  /** Mixer ticks run: personal sounds end by this count. */
  mixerTicks = 0;
  /** Every tick, held or mixing: what a shared encoding was made for. */
  ticks = 0;
  recorder: WavRecorder | undefined;
  opening: Promise<WavRecorder> | undefined;
  recording = false;
  faultInjected = false;
  /** monotonicMs() past which the members send no RTP (each session holds it, see `send-until`). */
  sendUntil = Number.POSITIVE_INFINITY;
  readonly mixer: Mixer;
  #holdFrame = new Int16Array(frameSamples(8000));
  /** The shared frame at 8 kHz for narrowband listeners of a 16 kHz room, made once a tick. */
  #narrowShared = new Int16Array(frameSamples(8000));
  #narrowSharedTick = -1;
  #toNarrow: FrameConverter | null = null;
  /** The recording's file keeps the rate the room had when it opened; later frames are converted. */
  #toRecording: Resampler | null = null;
  #recordingFrame: Int16Array | null = null;
  readonly #sharedEncodings = new Map<string, SharedEncoding>();

  constructor(
    readonly id: number,
    private readonly onTalking: (stream: Stream) => void,
    talkers: number | undefined,
  ) {
    this.mixer = new Mixer({
      talkers,
      onMix: (mix) => {
        if (this.recording) this.#record(mix);
      },
    });
  }

  get rate(): AudioRate {
    return this.mixer.sampleRate;
  }

  /**
   * Mixes at 16 kHz while any member is wideband, at 8 kHz otherwise; each member's converters
   * follow (a no-op for those already fitted).
   */
  fitMembers(): void {
    let rate: AudioRate = 8000;
    for (const member of this.members) if (member.rate === 16000) rate = 16000;
    const previous = this.rate;
    if (rate !== previous) {
      this.mixer.setSampleRate(rate);
      this.#holdFrame = new Int16Array(frameSamples(rate));
      this.#toNarrow = rate === 8000 ? null : new FrameConverter(16000, 8000);
      if (this.hold !== null)
        this.hold = new LoopingPlayer(holdMusic(rate), (this.hold.position * rate) / previous);
      this.#fitRecording();
    }
    for (const member of this.members) member.fitRoom(rate);
  }

  /** Starts recording into a file at the room's rate now. */
  startRecording(recorder: WavRecorder): void {
    this.recorder = recorder;
    this.#fitRecording();
  }

  /** Sends a listener the room's shared frame (`frame`, at the room's rate) in its encoding, encoded once a tick. */
  sendShared(stream: Stream, frame: Int16Array): void {
    const spec = stream.session.encoderSpec;
    const key = stream.encoderKey;
    if (spec === null || key === null) return;
    let shared = this.#sharedEncodings.get(key);
    if (shared === undefined) {
      const payload = new Uint8Array(MAX_ENCODED_FRAME_BYTES);
      shared = { encoder: createEncoder(spec), payload, length: 0, tick: -1 };
      this.#sharedEncodings.set(key, shared);
    }
    if (shared.tick !== this.ticks) {
      const input = shared.encoder.sampleRate === this.rate ? frame : this.#narrow(frame);
      shared.length = shared.encoder.encode(input, shared.payload);
      shared.tick = this.ticks;
    }
    stream.session.sendEncoded(shared.payload, shared.length);
  }

  tick(): void {
    if (this.faultInjected) throw new Error("fault injected into the mix");
    this.ticks++;
    if (this.ticks % SHARED_ENCODING_IDLE_TICKS === 0) this.#dropIdleEncodings();
    if (this.hold !== null) {
      // Everyone hears the music; what they say goes nowhere, but is read to keep jitter buffers drained.
      this.hold.next(this.#holdFrame);
      for (const member of this.members) {
        member.hear(member.in);
        this.sendShared(member, this.#holdFrame);
      }
      return;
    }
    this.mixer.tick();
    const ticks = ++this.mixerTicks;
    for (const member of this.members) {
      const slot = member.slot as MixerSlot;
      if (member.talk.update(slot.level, slot.muted)) this.onTalking(member);
      const plays = member.mixPlays;
      while (plays.length > 0 && (plays[0] as { endsAt: number }).endsAt <= ticks) plays.shift()?.done();
    }
  }

  /** Encodings no listener has had for a while (its members changed codec, or left): their encoders go. */
  #dropIdleEncodings(): void {
    for (const [key, shared] of this.#sharedEncodings) {
      if (this.ticks - shared.tick < SHARED_ENCODING_IDLE_TICKS) continue;
      shared.encoder.dispose();
      this.#sharedEncodings.delete(key);
    }
  }

  /** The encoders' state goes with the room. */
  close(): void {
    for (const shared of this.#sharedEncodings.values()) shared.encoder.dispose();
    this.#sharedEncodings.clear();
  }

  #narrow(frame: Int16Array): Int16Array {
    if (this.#narrowSharedTick !== this.ticks) {
      (this.#toNarrow as FrameConverter).process(frame, this.#narrowShared, this.ticks);
      this.#narrowSharedTick = this.ticks;
    }
    return this.#narrowShared;
  }

  #fitRecording(): void {
    const recorder = this.recorder;
    if (recorder === undefined || recorder.sampleRate === this.rate) {
      this.#toRecording = null;
      this.#recordingFrame = null;
      return;
    }
    this.#toRecording = createResampler(this.rate, recorder.sampleRate as AudioRate);
    this.#recordingFrame = new Int16Array(frameSamples(recorder.sampleRate as AudioRate));
  }

  #record(mix: Int16Array): void {
    const converter = this.#toRecording;
    if (converter === null) this.recorder?.write(mix);
    else {
      const frame = this.#recordingFrame as Int16Array;
      converter.process(mix, frame);
      this.recorder?.write(frame);
    }
  }
}

export class MediaEngine {
  readonly #options: MediaThreadOptions;
  readonly #post: PostUp;
  readonly #allocator: RtpPortAllocator;
  readonly #streams = new Map<number, Stream>();
  readonly #mixes = new Map<number, Mix>();
  readonly #clock: MediaClock;
  /** The packet counts of the streams closed so far. */
  #closedTotals: RtpTotals = {
    packetsReceived: 0,
    packetsLost: 0,
    packetsLate: 0,
    framesConcealed: 0,
    dropped: NO_DROPS,
  };
  #ticksToTimeoutCheck = TIMEOUT_CHECK_TICKS;

  constructor(options: MediaThreadOptions, post: PostUp) {
    this.#options = options;
    this.#post = post;
    this.#allocator = new RtpPortAllocator(options.rtpPorts.min, options.rtpPorts.max);
    this.#clock = new MediaClock({ onTick: () => this.#tick() });
    // Read and made before any tick needs them: the prompt files and the hold music at both rates
    // (the music takes tens of ms to make). The prompts' 8 kHz versions are made on first use (about
    // a millisecond each): all of them here would hold up a new thread's first call.
    for (const name of PROMPT_NAMES) prompt(name, 16000);
    holdMusic(16000);
    holdMusic(8000);
  }

  /** The RTP session of a stream, for an owner on this same thread that reads and writes frames itself. */
  session(streamId: number): RtpSession | undefined {
    return this.#streams.get(streamId)?.session;
  }

  receive(message: MediaDown): void {
    if ("requestId" in message) {
      const { requestId } = message;
      this.#handle(message).then(
        (value) => {
          const transfer = value instanceof Int16Array ? [value.buffer as ArrayBuffer] : undefined;
          this.#post({ type: "reply", requestId, ok: true, value }, transfer);
        },
        (error: unknown) =>
          this.#post({
            type: "reply",
            requestId,
            ok: false,
            code: mediaErrorCode(error),
            message: errorText(error),
          }),
      );
      return;
    }
    this.#command(message);
  }

  /** Closes every stream and mix (the thread is stopping). */
  async close(): Promise<void> {
    this.#clock.stop();
    await Promise.all([
      ...[...this.#mixes.values()].map((mix) => this.#closeMix(mix)),
      ...[...this.#streams.values()].map((stream) => this.#closeStream(stream)),
    ]);
  }

  async #handle(request: MediaRequest): Promise<MediaReplies[keyof MediaReplies]> {
    switch (request.type) {
      case "open-stream": {
        const session = await RtpSession.open({
          allocator: this.#allocator,
          bindAddress: this.#options.bindAddress,
          port: request.port,
          handover: request.handover,
        });
        const stream = new Stream(request.streamId, session);
        stream.sync();
        if (request.handover !== undefined)
          this.#configured(stream, request.handover.config?.direction ?? null);
        this.#listen(stream);
        this.#streams.set(stream.id, stream);
        this.#clock.start();
        return { port: session.localPort };
      }
      case "open-webrtc-stream": {
        // An offer that cannot be answered takes no port.
        checkOffer(request.offer);
        // The port is the allocator's like any stream's: werift binds it, and it comes back once
        // werift's socket has closed.
        const pair = await this.#allocator.bindPair(this.#options.bindAddress);
        await Promise.all([closeSocket(pair.rtp), closeSocket(pair.rtcp)]);
        let peer: WebRtcPeer;
        try {
          peer = await WebRtcPeer.answer({
            offer: request.offer,
            bindAddress: this.#options.bindAddress,
            port: pair.port,
            candidateAddresses: request.candidateAddresses,
            released: () => this.#allocator.release(pair.port),
          });
        } catch (error) {
          this.#allocator.release(pair.port);
          throw error;
        }
        const session = await RtpSession.open({
          allocator: this.#allocator,
          bindAddress: this.#options.bindAddress,
          carried: peer.ports,
        });
        const stream = new Stream(request.streamId, session);
        session.configure(peer.configuration);
        stream.sync();
        this.#configured(stream, peer.configuration.direction);
        this.#listen(stream);
        peer.on("closed", (reason) => {
          if (this.#streams.get(stream.id) !== stream) return;
          const stats = this.#streamStats(stream);
          void this.#closeStream(stream);
          this.#post({ type: "peer-closed", streamId: stream.id, reason, stats });
        });
        this.#streams.set(stream.id, stream);
        this.#clock.start();
        return { port: pair.port, answer: peer.answer };
      }
      case "close-stream": {
        const stream = this.#streams.get(request.streamId);
        return stream === undefined ? null : this.#closeStream(stream);
      }
      case "detach-stream": {
        const stream = this.#stream(request.streamId);
        // Refused before anything is undone: the stream goes on here.
        if (!stream.session.movable)
          throw new MediaError(
            "MEDIA_ERR_NOT_MOVABLE",
            `stream ${stream.id} is a WebRTC peer's: it stays here`,
          );
        this.#unrelay(stream);
        this.#leave(stream);
        stream.stopPlaying();
        stream.finishVoice();
        this.#streams.delete(stream.id);
        const handover = await stream.session.handOver();
        this.#stopClockWhenIdle();
        return { port: stream.session.localPort, handover };
      }
      case "send-digits": {
        const session = this.#streams.get(request.streamId)?.session;
        return session === undefined ? false : session.sendDigits(request.keys);
      }
      case "play": {
        const stream = this.#streams.get(request.streamId);
        if (stream === undefined) return undefined;
        const sound = ratedSound(request.sound);
        stream.driven = true;
        await new Promise<void>((done) => {
          const mix = stream.mix;
          if (stream.slot !== null && mix !== null) {
            const samples = sound.at(mix.rate);
            if (samples.length === 0) return done();
            mix.mixer.play(samples, { to: stream.slot });
            const endsAt = mix.mixerTicks + Math.ceil(samples.length / frameSamples(mix.rate));
            stream.mixPlays.push({ endsAt, done });
          } else if (sound.at(stream.rate).length === 0) done();
          else stream.queue.push({ sound, frames: 0, done });
        });
        return undefined;
      }
      case "record-voice": {
        const stream = this.#streams.get(request.streamId);
        const frames = Math.ceil(request.maxMs / 20);
        if (stream === undefined || frames <= 0) return new Int16Array(0);
        stream.finishVoice();
        stream.driven = true;
        return new Promise<Int16Array>((done) => {
          const rate = stream.rate;
          stream.voice = { samples: new Int16Array(frames * frameSamples(rate)), rate, length: 0, done };
        });
      }
      case "close-mix": {
        const mix = this.#mixes.get(request.mixId);
        if (mix !== undefined) await this.#closeMix(mix);
        return undefined;
      }
      case "start-recording": {
        const mix = this.#mix(request.mixId);
        // The file stays as the failure left it: opening it again would truncate what it holds.
        const failure = mix.recorder?.failure;
        if (failure !== undefined)
          throw new MediaError("MEDIA_ERR_RECORDING", `the recording failed earlier: ${failure.message}`);
        if (mix.recorder === undefined) {
          mix.opening ??= mkdir(path.dirname(request.file), { recursive: true }).then(() =>
            WavRecorder.open(request.file, (error) => this.#recordingFailed(mix, error), mix.rate),
          );
          let recorder: WavRecorder;
          try {
            recorder = await mix.opening;
          } catch (error) {
            mix.opening = undefined;
            throw new MediaError("MEDIA_ERR_RECORDING", errorText(error), { cause: error });
          }
          mix.startRecording(recorder);
          if (!this.#mixes.has(mix.id)) {
            await recorder.close();
            throw new MediaError("MEDIA_ERR_MIX_CLOSED", "the mix was closed");
          }
        }
        mix.recording = true;
        return undefined;
      }
      case "pause-recording": {
        const mix = this.#mix(request.mixId);
        mix.recording = false;
        await mix.recorder?.flush().catch((error: unknown) => {
          throw new MediaError("MEDIA_ERR_RECORDING", errorText(error), { cause: error });
        });
        return undefined;
      }
      case "stats":
        return this.#stats(request.resetLateness);
    }
  }

  #command(command: MediaCommand): void {
    switch (command.type) {
      case "configure-stream": {
        const stream = this.#streams.get(command.streamId);
        if (stream === undefined) return;
        stream.session.configure(command.config);
        this.#configured(stream, command.config.direction);
        if (stream.sync()) stream.mix?.fitMembers();
        return;
      }
      case "stop-playing":
        this.#streams.get(command.streamId)?.stopPlaying();
        return;
      case "stop-recording-voice":
        this.#streams.get(command.streamId)?.finishVoice();
        return;
      case "open-mix":
        this.#mixes.set(command.mixId, new Mix(command.mixId, this.#talking, this.#options.mixTalkers));
        this.#clock.start();
        return;
      case "join": {
        const stream = this.#streams.get(command.streamId);
        const mix = this.#mixes.get(command.mixId);
        if (stream === undefined || mix === undefined) return;
        this.#unrelay(stream);
        this.#leave(stream);
        stream.driven = true;
        // Whatever was queued for the caller alone is heard no more; its plays are over.
        for (const playing of stream.queue.splice(0)) playing.done();
        stream.mix = mix;
        mix.members.add(stream);
        stream.session.sendFor(mix.sendUntil - monotonicMs());
        mix.fitMembers();
        stream.slot = mix.mixer.addParticipant(stream.port, { muted: command.muted });
        return;
      }
      case "leave": {
        const stream = this.#streams.get(command.streamId);
        if (stream !== undefined) this.#leave(stream);
        return;
      }
      case "mute": {
        const slot = this.#streams.get(command.streamId)?.slot;
        if (slot !== undefined && slot !== null) slot.muted = command.muted;
        return;
      }
      case "play-mix": {
        const mix = this.#mixes.get(command.mixId);
        if (mix !== undefined) mix.mixer.play(ratedSound(command.sound).at(mix.rate));
        return;
      }
      case "hold": {
        const mix = this.#mixes.get(command.mixId);
        if (mix !== undefined && command.onHold !== (mix.hold !== null))
          mix.hold = command.onHold ? new LoopingPlayer(holdMusic(mix.rate)) : null;
        return;
      }
      case "send-until": {
        const mix = this.#mixes.get(command.mixId);
        if (mix === undefined) return;
        mix.sendUntil = command.until;
        const left = command.until - monotonicMs();
        for (const member of mix.members) member.session.sendFor(left);
        return;
      }
      case "relay": {
        const stream = this.#streams.get(command.streamId);
        const peer = this.#streams.get(command.peerStreamId);
        if (stream === undefined || peer === undefined || stream === peer) return;
        for (const each of [stream, peer]) {
          this.#unrelay(each);
          this.#leave(each);
          each.stopPlaying();
          each.finishVoice();
        }
        stream.relay = peer;
        peer.relay = stream;
        stream.session.relayTo(peer.session);
        peer.session.relayTo(stream.session);
        return;
      }
      case "inject-fault": {
        const mix = this.#mixes.get(command.mixId);
        if (mix !== undefined && this.#options.allowFaultInjection) mix.faultInjected = true;
        return;
      }
    }
  }

  #tick(): void {
    for (const mix of this.#mixes.values()) {
      try {
        mix.tick();
      } catch (error) {
        this.#failMix(mix, error);
      }
    }
    for (const stream of this.#streams.values()) {
      if (!stream.driven || stream.mix !== null || stream.relay !== null) continue;
      try {
        stream.tickAlone();
      } catch (error) {
        this.#streams.delete(stream.id);
        void stream.session.close();
        this.#post({ type: "stream-failed", streamId: stream.id, reason: errorText(error) });
      }
    }
    if (--this.#ticksToTimeoutCheck === 0) {
      this.#ticksToTimeoutCheck = TIMEOUT_CHECK_TICKS;
      this.#checkMediaTimeouts();
    }
  }

  /** A mix whose tick threw: gone, its members out of it (hearing silence), reported. */
  #failMix(mix: Mix, error: unknown): void {
    this.#mixes.delete(mix.id);
    for (const member of mix.members) this.#leave(member, true);
    mix.close();
    void this.#closeRecording(mix);
    this.#post({ type: "mix-failed", mixId: mix.id, reason: errorText(error) });
  }

  /** The recording's file could not be written (the disk full, say): it stops, the mix goes on. */
  #recordingFailed(mix: Mix, error: Error): void {
    if (!this.#mixes.has(mix.id)) return;
    mix.recording = false;
    this.#post({ type: "recording-failed", mixId: mix.id, reason: errorText(error) });
  }

  readonly #talking = (stream: Stream): void => {
    this.#post({ type: "talking", streamId: stream.id, talking: stream.talk.talking });
  };

  #listen(stream: Stream): void {
    // A key counts once whether it came as an RFC 4733 event, as tones in the audio, or both.
    const merger = new DigitMerger((key) => this.#post({ type: "digit", streamId: stream.id, key }));
    const detector = new InbandDtmfDetector((key) => merger.fromInband(key));
    stream.session.on("digit", (digit) => merger.fromTelephoneEvent(digit.key));
    stream.session.onDecodedAudio = (samples, count, rate) => detector.process(samples, count, rate);
    stream.session.on("srtpAuthenticationFailed", ({ address, port, count }) =>
      this.#post({ type: "srtp-authentication-failed", streamId: stream.id, address, port, count }),
    );
  }

  #configured(stream: Stream, direction: MediaDirection | null): void {
    if (stream.direction === null) stream.configuredAt = performance.now();
    stream.direction = direction;
  }

  /** An answered stream whose far end should be sending and has sent nothing for the timeout. */
  #checkMediaTimeouts(): void {
    const limit = this.#options.mediaTimeoutMs;
    if (limit <= 0) return;
    const now = performance.now();
    for (const stream of this.#streams.values()) {
      const direction = stream.direction;
      // Held by the far end (we only receive, or nothing at all): silence is expected.
      if (direction === null || direction === "recvonly" || direction === "inactive" || stream.timedOut)
        continue;
      const last = stream.session.lastPacketAt ?? stream.configuredAt;
      if (now - last > limit) {
        stream.timedOut = true;
        this.#post({ type: "media-timeout", streamId: stream.id });
      }
    }
  }

  /** Takes the stream out of its mix; the mix's rate follows those left unless it is going (`closing`). */
  #leave(stream: Stream, closing = false): void {
    const mix = stream.mix;
    if (mix === null) return;
    mix.members.delete(stream);
    stream.slot?.remove();
    stream.slot = null;
    stream.mix = null;
    stream.session.sendFor(Number.POSITIVE_INFINITY);
    stream.fitRoom(stream.rate);
    if (!closing) mix.fitMembers();
    for (const play of stream.mixPlays.splice(0)) play.done();
    if (stream.talk.talking && stream.talk.update(Number.NEGATIVE_INFINITY, true)) this.#talking(stream);
  }

  /** Ends the relay the stream is in, if any: its peer plays out what it receives again. */
  #unrelay(stream: Stream): void {
    const peer = stream.relay;
    if (peer === null) return;
    stream.relay = null;
    peer.relay = null;
    stream.session.relayTo(null);
    peer.session.relayTo(null);
  }

  /** Closes the stream; resolves once closed, with its final counts taken just before. */
  async #closeStream(stream: Stream): Promise<StreamStats> {
    this.#streams.delete(stream.id);
    const stats = this.#streamStats(stream);
    this.#closedTotals = addTotals(this.#closedTotals, stats);
    this.#unrelay(stream);
    this.#leave(stream);
    stream.stopPlaying();
    stream.finishVoice();
    await stream.session.close();
    this.#stopClockWhenIdle();
    return stats;
  }

  async #closeMix(mix: Mix): Promise<void> {
    this.#mixes.delete(mix.id);
    for (const member of mix.members) this.#leave(member, true);
    mix.close();
    await this.#closeRecording(mix);
    this.#stopClockWhenIdle();
  }

  async #closeRecording(mix: Mix): Promise<void> {
    mix.recording = false;
    const recorder = mix.recorder ?? (await mix.opening?.catch(() => undefined));
    mix.recorder = undefined;
    // A failed recording's error was reported when it happened; its file is closed all the same.
    await recorder?.close().catch((error: unknown) => {
      if (recorder.failure === undefined) throw error;
    });
  }

  #stopClockWhenIdle(): void {
    if (this.#streams.size === 0 && this.#mixes.size === 0) this.#clock.stop();
  }

  #stream(streamId: number): Stream {
    const stream = this.#streams.get(streamId);
    if (stream === undefined)
      throw new MediaError("MEDIA_ERR_NO_STREAM", `no stream ${streamId} on this thread`);
    return stream;
  }

  #mix(mixId: number): Mix {
    const mix = this.#mixes.get(mixId);
    if (mix === undefined) throw new MediaError("MEDIA_ERR_NO_MIX", `no mix ${mixId} on this thread`);
    return mix;
  }

  /** A stream's figures now: its session's counts, what it sends, its rates. */
  #streamStats(stream: Stream): StreamStats {
    return {
      streamId: stream.id,
      ...stream.session.stats(),
      codec: stream.session.encoderSpec?.codec ?? null,
      audioRate: stream.rate,
      roomRate: stream.mix?.rate ?? null,
    };
  }

  #stats(resetLateness: boolean): MediaThreadStats {
    const streams: StreamStats[] = [];
    let legs = 0;
    let rtpTotals = this.#closedTotals;
    for (const stream of this.#streams.values()) {
      if (stream.mix !== null) legs++;
      const stats = this.#streamStats(stream);
      streams.push(stats);
      rtpTotals = addTotals(rtpTotals, stats);
    }
    const lateness = this.#clock.latenessPercentiles();
    if (resetLateness) this.#clock.resetLateness();
    return {
      ticks: this.#clock.ticks,
      skippedTicks: this.#clock.skipped,
      lateness,
      latenessHistogram: this.#clock.latenessHistogram(),
      rtpTotals,
      mixes: this.#mixes.size,
      legs,
      streams,
      portPairsInUse: this.#allocator.allocated,
    };
  }
}

function addTotals(totals: RtpTotals, stream: RtpTotals): RtpTotals {
  return {
    packetsReceived: totals.packetsReceived + stream.packetsReceived,
    packetsLost: totals.packetsLost + stream.packetsLost,
    packetsLate: totals.packetsLate + stream.packetsLate,
    framesConcealed: totals.framesConcealed + stream.framesConcealed,
    dropped: addDrops(totals.dropped, stream.dropped),
  };
}

function addDrops(a: RtpDrops, b: RtpDrops): RtpDrops {
  return {
    unknownPayloadType: a.unknownPayloadType + b.unknownPayloadType,
    unknownSource: a.unknownSource + b.unknownSource,
    srtpAuthentication: a.srtpAuthentication + b.srtpAuthentication,
    srtpReplay: a.srtpReplay + b.srtpReplay,
    malformed: a.malformed + b.malformed,
    jitterBufferOverflow: a.jitterBufferOverflow + b.jitterBufferOverflow,
  };
}
