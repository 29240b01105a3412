/** The service's Server-Sent Events as a hook: every event, and how the connection stands. */
import { useEffect, useRef, useState } from "preact/hooks";
import { CONFERENCE_EVENT_TYPES, type RecoveryDetails } from "../../src/domain/event.js";

export type StreamStatus = "connecting" | "live" | "lost" | "reconnected";

export interface LiveEvent {
  type: string;
  conferenceId: number;
  attendeeId: number | null;
  at: string;
  reason?: string;
  /** On conference-recovered: the take-over. */
  recovery?: RecoveryDetails;
}

/** How long "Reconnected" shows before it reads "Live" again. */
const RECONNECTED_MS = 5000;
/** The wait before a new stream when the browser gave up on one (it retries network drops itself). */
const RETRY_MS = 3000;

/**
 * Follows `url` while mounted. `onEvent` gets each event; `onResync` is called after the stream came
 * back (events may have been missed) and when it failed for good, so that the caller reads the
 * current state again (which also notices a session that has expired).
 */
export function useEventStream(
  url: string,
  onEvent: (event: LiveEvent) => void,
  onResync: () => void,
): StreamStatus {
  const [status, setStatus] = useState<StreamStatus>("connecting");
  const handlers = useRef({ onEvent, onResync });
  handlers.current = { onEvent, onResync };

  useEffect(() => {
    let source: EventSource | null = null;
    let retry: ReturnType<typeof setTimeout> | undefined;
    let settle: ReturnType<typeof setTimeout> | undefined;
    let dropped = false;
    const receive = (message: MessageEvent<string>) => {
      const data = JSON.parse(message.data) as Omit<LiveEvent, "type">;
      handlers.current.onEvent({ ...data, type: message.type });
    };
    const connect = () => {
      const opened = new EventSource(url);
      source = opened;
      opened.onopen = () => {
        clearTimeout(settle);
        if (dropped) {
          setStatus("reconnected");
          handlers.current.onResync();
          settle = setTimeout(() => setStatus("live"), RECONNECTED_MS);
        } else {
          setStatus("live");
        }
        dropped = false;
      };
      opened.onerror = () => {
        dropped = true;
        clearTimeout(settle);
        setStatus("lost");
        if (opened.readyState === EventSource.CLOSED) {
          handlers.current.onResync();
          retry = setTimeout(connect, RETRY_MS);
        }
      };
      for (const type of CONFERENCE_EVENT_TYPES) opened.addEventListener(type, receive);
    };
    connect();
    return () => {
      clearTimeout(retry);
      clearTimeout(settle);
      source?.close();
    };
  }, [url]);

  return status;
}

/** Calls `action` once, `delayMs` after the last of a burst of calls. */
export function useDebounced(action: () => void, delayMs: number): () => void {
  const latest = useRef(action);
  latest.current = action;
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  useEffect(() => () => clearTimeout(timer.current), []);
  return useRef(() => {
    clearTimeout(timer.current);
    timer.current = setTimeout(() => latest.current(), delayMs);
  }).current;
}
