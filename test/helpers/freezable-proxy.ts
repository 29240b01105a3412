import net from "node:net";
import { createTestDatabase } from "./databases.js";

/**
 * A TCP proxy on loopback that can be frozen: it stops forwarding in both directions and keeps
 * every socket open, as a partition or a stalled middlebox does. Thawed, new connections are
 * forwarded again while those made before or during the freeze stay silent until their client
 * closes them, as after a failover: only a client that gives up on them and reconnects recovers.
 */
export class FreezableProxy {
  readonly #server: net.Server;
  readonly #sockets = new Set<net.Socket>();
  /** Connections that forward nothing (made before or during the freeze). */
  readonly #silent = new WeakSet<net.Socket>();
  #frozen = false;
  /** Connections closed by their client while silent: how many a client gave up on. */
  closedWhileSilent = 0;

  private constructor(server: net.Server) {
    this.#server = server;
  }

  static async start(target: { host: string; port: number }): Promise<FreezableProxy> {
    const server = net.createServer();
    const proxy = new FreezableProxy(server);
    server.on("connection", (client) => proxy.#forward(client, target));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return proxy;
  }

  get port(): number {
    return (this.#server.address() as net.AddressInfo).port;
  }

  freeze(): void {
    this.#frozen = true;
    for (const socket of this.#sockets) this.#silent.add(socket);
  }

  thaw(): void {
    this.#frozen = false;
  }

  async close(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy();
    await new Promise((resolve) => this.#server.close(resolve));
  }

  #forward(client: net.Socket, target: { host: string; port: number }): void {
    const server = net.connect(target.port, target.host);
    this.#track(client);
    this.#track(server);
    if (this.#frozen) this.#silent.add(client);
    // What the silent side sends is read and dropped: the peer's writes succeed, nothing arrives.
    const relay = (from: net.Socket, to: net.Socket) =>
      from.on("data", (chunk) => {
        if (!this.#silent.has(client)) to.write(chunk);
      });
    relay(client, server);
    relay(server, client);
    client.on("close", () => {
      if (this.#silent.has(client)) this.closedWhileSilent++;
      server.destroy();
    });
    server.on("close", () => {
      if (!this.#silent.has(client)) client.destroy();
    });
  }

  #track(socket: net.Socket): void {
    this.#sockets.add(socket);
    socket.on("error", () => {});
    socket.on("close", () => this.#sockets.delete(socket));
  }
}

/**
 * A test database reached through a FreezableProxy: `url` goes through the proxy. `close` closes the
 * proxy and drops the database (after whatever used `url` is closed).
 */
export async function databaseBehindProxy(): Promise<{
  url: string;
  proxy: FreezableProxy;
  close(): Promise<void>;
}> {
  const database = await createTestDatabase();
  const url = new URL(database.url);
  const proxy = await FreezableProxy.start({ host: url.hostname, port: Number(url.port || 5432) }).catch(
    async (error: unknown) => {
      await database.drop();
      throw error;
    },
  );
  url.port = String(proxy.port);
  return {
    url: url.toString(),
    proxy,
    async close() {
      await proxy.close();
      await database.drop();
    },
  };
}
