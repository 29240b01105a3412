/**
 * A call from this browser into a conference: the microphone, the WebRTC peer connection, and the
 * service's join requests (/join/...). The keypad commands go over the call itself as RFC 4733 DTMF,
 * the keys a phone would press, so that the room treats the browser like any phone.
 */
import { KEYPAD, type KeypadCommand } from "../../src/domain/keypad.js";

/** How long the page gathers ICE candidates before it sends the offer with those it has. */
const GATHERING_MS = 2000;
/** DTMF tones as a phone keys them: 100 ms each, 70 ms apart. */
const TONE_MS = 100;
const TONE_GAP_MS = 70;
const KEYS = new Map(KEYPAD.map((entry) => [entry.command, entry.keys]));

export interface RoomAttendee {
  id: number;
  name: string | null;
  moderator: boolean;
  state: string;
  muted: boolean;
  handUp: boolean;
  talking: boolean;
}

export interface RoomControls {
  dialInLocked: boolean;
  lectureMode: boolean;
  recording: boolean;
  encryptedOnly: boolean;
}

/** GET /join/calls/{token}: the room as the page first draws it. */
export interface RoomState {
  conferenceId: number;
  conferenceName: string;
  state: string;
  attendeeId: number;
  moderator: boolean;
  attendees: RoomAttendee[];
  controls: RoomControls;
}

/** A join the service refused: the JSON error's name and words, and the wait it asked for. */
export interface Refusal {
  status: number;
  error: string;
  message: string;
  retryAfterSeconds: number | null;
}

export type JoinOutcome = { joined: true; call: BrowserCall } | { joined: false; refusal: Refusal };

/** A call in progress: what the room view needs of it, and its teardown. */
export class BrowserCall {
  readonly #pc: RTCPeerConnection;
  readonly #microphone: MediaStream;
  readonly #audioContext: AudioContext;
  readonly #analyser: AnalyserNode;
  readonly #samples: Float32Array<ArrayBuffer>;
  readonly #remoteAudio: HTMLAudioElement;
  #closed = false;

  constructor(
    readonly token: string,
    readonly attendeeId: number,
    readonly moderator: boolean,
    parts: {
      pc: RTCPeerConnection;
      microphone: MediaStream;
      audioContext: AudioContext;
      analyser: AnalyserNode;
      remoteAudio: HTMLAudioElement;
    },
  ) {
    this.#pc = parts.pc;
    this.#microphone = parts.microphone;
    this.#audioContext = parts.audioContext;
    this.#analyser = parts.analyser;
    this.#samples = new Float32Array(parts.analyser.fftSize);
    this.#remoteAudio = parts.remoteAudio;
  }

  get path(): string {
    return `/join/calls/${encodeURIComponent(this.token)}`;
  }

  /** Calls `listener` with each change of the connection's state, until the call is closed. */
  onConnectionState(listener: (state: RTCPeerConnectionState) => void): void {
    this.#pc.onconnectionstatechange = () => listener(this.#pc.connectionState);
  }

  get connectionState(): RTCPeerConnectionState {
    return this.#pc.connectionState;
  }

  /** Sends a keypad command's keys as DTMF; false when the call cannot send tones (yet). */
  press(command: KeypadCommand): boolean {
    const keys = KEYS.get(command);
    const senders = this.#pc.getSenders();
    const dtmf = (senders.find((sender) => sender.track?.kind === "audio") ?? senders[0])?.dtmf;
    if (this.#closed || keys === undefined || !dtmf?.canInsertDTMF) return false;
    // Appended: a new insertDTMF replaces the tones not yet sent, which would lose a quick second press.
    dtmf.insertDTMF(dtmf.toneBuffer + keys, TONE_MS, TONE_GAP_MS);
    return true;
  }

  /** The microphone's level now, 0 (silence, -60 dBFS or less) to 1 (full scale). */
  level(): number {
    if (this.#closed) return 0;
    this.#analyser.getFloatTimeDomainData(this.#samples);
    let sum = 0;
    for (const sample of this.#samples) sum += sample * sample;
    const rms = Math.sqrt(sum / this.#samples.length);
    const dbfs = 20 * Math.log10(Math.max(rms, 1e-6));
    return Math.min(1, Math.max(0, (dbfs + 60) / 60));
  }

  /** Hangs up: tells the service (which ends the call at once), then closes the connection. */
  async leave(): Promise<void> {
    if (this.#closed) return;
    try {
      await fetch(this.path, { method: "DELETE", headers: { Accept: "application/json" } });
    } catch {
      // The service also ends the call when the connection closes.
    }
    this.close();
  }

  /** For a page being closed: the request outlives the page (keepalive). */
  leaveAsThePageCloses(): void {
    if (this.#closed) return;
    void fetch(this.path, { method: "DELETE", keepalive: true }).catch(() => undefined);
    this.close();
  }

  /** Gives back the microphone, the connection and the audio graph; the service's side is not told. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#pc.onconnectionstatechange = null;
    this.#pc.close();
    for (const track of this.#microphone.getTracks()) track.stop();
    void this.#audioContext.close().catch(() => undefined);
    this.#remoteAudio.srcObject = null;
  }
}

/** The STUN/TURN servers the service gives this page. */
async function iceServers(): Promise<RTCIceServer[]> {
  const response = await fetch("/join/ice-servers", { headers: { Accept: "application/json" } });
  if (!response.ok) throw new Error(`The service could not be reached (${response.status}).`);
  const body = (await response.json()) as { iceServers?: RTCIceServer[] };
  return body.iceServers ?? [];
}

/** Resolves when ICE gathering is complete, or after `ms` with the candidates found by then. */
function gathered(pc: RTCPeerConnection, ms: number): Promise<void> {
  if (pc.iceGatheringState === "complete") return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      pc.removeEventListener("icegatheringstatechange", check);
      resolve();
    };
    const check = () => {
      if (pc.iceGatheringState === "complete") done();
    };
    const timer = setTimeout(done, ms);
    pc.addEventListener("icegatheringstatechange", check);
  });
}

function microphoneProblem(error: unknown): string {
  const name = (error as { name?: string }).name;
  if (name === "NotAllowedError" || name === "SecurityError")
    return "The microphone was not allowed. Allow it for this site (the icon in the address bar), then join again.";
  if (name === "NotFoundError") return "No microphone was found. Connect one, then join again.";
  if (name === "NotReadableError")
    return "The microphone is in use by another program, or could not be opened.";
  return `The microphone could not be opened: ${(error as Error).message}`;
}

/**
 * Joins the conference whose PIN this is: microphone, offer with its ICE candidates, the service's
 * answer. Resolves with the call, or with the service's refusal; throws with words for the person
 * when the browser cannot take part (no microphone, no WebRTC, no network). `audioContext` is made
 * by the caller in the click itself, where the browser lets audio start.
 */
export async function joinCall(
  pin: string,
  remoteAudio: HTMLAudioElement,
  audioContext: AudioContext,
  progress: (step: string) => void,
): Promise<JoinOutcome> {
  if (typeof RTCPeerConnection === "undefined" || navigator.mediaDevices === undefined)
    throw new Error("This browser cannot make calls (WebRTC), or the page is not on HTTPS.");
  let microphone: MediaStream | undefined;
  let pc: RTCPeerConnection | undefined;
  let kept = false;
  try {
    progress("Getting the connection details…");
    const servers = await iceServers();
    progress("Asking for the microphone…");
    try {
      microphone = await navigator.mediaDevices.getUserMedia({ audio: true });
    } catch (error) {
      throw new Error(microphoneProblem(error));
    }
    const opened = new RTCPeerConnection({ iceServers: servers });
    pc = opened;
    for (const track of microphone.getAudioTracks()) opened.addTrack(track, microphone);
    opened.ontrack = (event) => {
      remoteAudio.srcObject = event.streams[0] ?? new MediaStream([event.track]);
      void remoteAudio.play().catch(() => undefined);
    };
    progress("Connecting…");
    await opened.setLocalDescription(await opened.createOffer());
    await gathered(opened, GATHERING_MS);
    const offer = opened.localDescription?.sdp;
    if (offer === undefined) throw new Error("The browser made no offer to send.");
    const response = await fetch("/join/calls", {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json" },
      body: JSON.stringify({ pin, offer }),
    });
    const body = (await response.json().catch(() => ({}))) as Record<string, unknown>;
    if (response.status !== 201) {
      const wait = Number(response.headers.get("Retry-After"));
      return {
        joined: false,
        refusal: {
          status: response.status,
          error: typeof body.error === "string" ? body.error : "",
          message:
            typeof body.message === "string" ? body.message : `The service answered ${response.status}.`,
          retryAfterSeconds: Number.isFinite(wait) && wait > 0 ? wait : null,
        },
      };
    }
    const token = String(body.token);
    const call = () => {
      const source = audioContext.createMediaStreamSource(microphone as MediaStream);
      const analyser = audioContext.createAnalyser();
      analyser.fftSize = 1024;
      source.connect(analyser);
      return new BrowserCall(token, Number(body.attendeeId), body.moderator === true, {
        pc: opened,
        microphone: microphone as MediaStream,
        audioContext,
        analyser,
        remoteAudio,
      });
    };
    const joined = call();
    kept = true;
    try {
      await opened.setRemoteDescription({ type: "answer", sdp: String(body.answer) });
    } catch (error) {
      await joined.leave();
      throw new Error(`The service's answer could not be used: ${(error as Error).message}`);
    }
    return { joined: true, call: joined };
  } finally {
    if (!kept) {
      pc?.close();
      for (const track of microphone?.getTracks() ?? []) track.stop();
      void audioContext.close().catch(() => undefined);
    }
  }
}

/** The room of a call; null when the call is over (the service no longer knows its token). */
export async function roomState(call: BrowserCall): Promise<RoomState | null> {
  const response = await fetch(call.path, { headers: { Accept: "application/json" } });
  if (response.status === 404) return null;
  if (!response.ok) throw new Error(`The room could not be read (${response.status}).`);
  return (await response.json()) as RoomState;
}
