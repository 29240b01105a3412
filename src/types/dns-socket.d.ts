// dns-socket ships no types: the part of its API the server locator uses.
declare module "dns-socket" {
  import type { Packet } from "dns-packet";

  interface DnsSocket {
    query(
      query: Packet,
      port: number,
      host: string,
      callback: (error: Error | null, response: Packet | undefined) => void,
    ): number;
    destroy(onClose?: () => void): void;
    on(event: "error", listener: (error: Error) => void): this;
  }

  export default function createDnsSocket(options?: { timeout?: number; retries?: number }): DnsSocket;
}
