/**
 * A process of its own holding one room on a media worker thread, for send-for.test.ts to stop
 * (SIGSTOP) and continue: its one stream sends PCMU to 127.0.0.1:<port>; the plane binds in
 * <min>-<max>. Over IPC: "ready" once the stream is in the mix; `{ ms }` calls `mix.sendFor(ms)` and
 * answers `{ until }`, the deadline on monotonicMs() (taken just before the call, so never later than
 * the mix's own); "close" closes the plane and lets the process end.
 */
import { MediaPlane } from "../../../../src/telephony/media/plane/media-plane.js";
import { monotonicMs } from "../../../../src/telephony/media/plane/protocol.js";

const [port, min, max] = process.argv.slice(2).map(Number) as [number, number, number];
const plane = new MediaPlane({
  threads: 1,
  bindAddress: "127.0.0.1",
  rtpPorts: { min, max },
  mediaTimeoutMs: 0,
});
const mix = plane.openMix();
const stream = await plane.openStream(mix);
stream.configure({
  codec: "PCMU",
  payloadType: 0,
  remoteAddress: "127.0.0.1",
  remotePort: port,
  direction: "sendrecv",
});
stream.join(mix, false);

process.on("message", (message: { ms: number } | "close") => {
  if (message === "close") {
    void plane.close().then(() => process.disconnect());
    return;
  }
  const until = monotonicMs() + message.ms;
  mix.sendFor(message.ms);
  process.send?.({ until });
});
process.send?.("ready");
