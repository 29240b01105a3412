/** An IPv4 peer of a dual-stack socket (bound to `::`), as Node names it. */
const IPV4_MAPPED = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i;

/**
 * The source a peer's requests and connections are counted against: its IPv4 address (also when a
 * dual-stack socket shows it IPv4-mapped), or the /64 of its IPv6 address, since one host is
 * routinely given a whole /64 and may send from any address in it.
 */
export function sourceOf(address: string): string {
  if (!address.includes(":")) return address;
  const mapped = IPV4_MAPPED.exec(address);
  if (mapped !== null) return mapped[1] as string;
  const [head = "", tail] = (address.split("%")[0] ?? "").split("::");
  const left = head === "" ? [] : head.split(":");
  if (tail === undefined) return left.slice(0, 4).join(":");
  const right = tail === "" ? [] : tail.split(":");
  const zeros = Array<string>(Math.max(0, 8 - left.length - right.length)).fill("0");
  return [...left, ...zeros, ...right].slice(0, 4).join(":");
}
