/**
 * What every view of the console does the same way: its title, its heading's focus, its errors, and
 * its requests (a change sent once however often it is asked for; a read applied only while it is
 * the latest and the view is still there).
 */
import type { RefObject } from "preact";
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { ApiError } from "./api.js";

/**
 * Names the document after the view and moves focus to its heading when the view opens, so that a
 * screen reader announces where the person is and Tab continues from the top of the new view.
 */
export function useViewHeading(title: string) {
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    document.title = `${title} — Bridgeline console`;
  }, [title]);
  useEffect(() => {
    heading.current?.focus();
  }, []);
  return heading;
}

/** The service's own messages for a refused request (its `errors`), else what went wrong. */
export function messagesOf(caught: unknown): string[] {
  if (caught instanceof ApiError && caught.messages.length > 0) return caught.messages;
  return [caught instanceof Error ? caught.message : String(caught)];
}

/**
 * Moves the focus to `target` once the render under way is done (a notice shows its new text only
 * then; a heading may be new): used when the control that had the focus goes away.
 */
export function focusAfterRender(target: RefObject<HTMLElement | null>): void {
  requestAnimationFrame(() => target.current?.focus());
}

/** Whether the component is still mounted: asked after an await, before acting on what came back. */
export function useMounted(): () => boolean {
  const mounted = useRef(true);
  useEffect(() => {
    mounted.current = true;
    return () => {
      mounted.current = false;
    };
  }, []);
  return useCallback(() => mounted.current, []);
}

/**
 * One change at a time: `submit(change)` runs `change` unless one is still running, in which case
 * it does nothing (a double click, Enter pressed twice), so that a change is never sent twice.
 * `busy` says one is running, for the button to say so (with aria-disabled, not disabled: a
 * disabled button loses the focus, which then falls to the page).
 */
export function useSubmit(): { busy: boolean; submit: (change: () => Promise<void>) => Promise<void> } {
  const [busy, setBusy] = useState(false);
  // The state is seen only at the next render; a second click can come before it.
  const running = useRef(false);
  const mounted = useMounted();
  const submit = useCallback(
    async (change: () => Promise<void>) => {
      if (running.current) return;
      running.current = true;
      setBusy(true);
      try {
        await change();
      } finally {
        running.current = false;
        if (mounted()) setBusy(false);
      }
    },
    [mounted],
  );
  return { busy, submit };
}

/**
 * Reads that may overlap (a burst of events, a reload after a change) and finish in any order:
 * `begin()` before each returns its check, true only while no later read has begun and the view is
 * still mounted, so that an older answer never replaces a newer one.
 */
export function useLatest(): () => () => boolean {
  const latest = useRef(0);
  useEffect(
    () => () => {
      latest.current += 1;
    },
    [],
  );
  return useCallback(() => {
    latest.current += 1;
    const mine = latest.current;
    return () => mine === latest.current;
  }, []);
}
