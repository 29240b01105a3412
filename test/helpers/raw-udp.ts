/** Plain UDP sockets standing in for RTP peers in tests of the media path. */
import dgram from "node:dgram";

/** A socket on 127.0.0.1 collecting what it receives; pushed onto `sockets` for the test to close. */
export async function rawSocket(
  sockets: dgram.Socket[],
): Promise<{ socket: dgram.Socket; port: number; received: Buffer[] }> {
  const socket = dgram.createSocket("udp4");
  sockets.push(socket);
  const received: Buffer[] = [];
  socket.on("message", (datagram) => received.push(datagram));
  await new Promise<void>((resolve) => socket.bind(0, "127.0.0.1", resolve));
  return { socket, port: socket.address().port, received };
}

/** Waits until `condition` holds, looking every 5 ms; throws naming `what` after `timeoutMs`. */
export async function waitFor(condition: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
