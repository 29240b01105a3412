/**
 * What the benchmarks read of the machine from /proc: CPU jiffies of the machine, of a process and
 * of a process's children by command, and UDP datagrams dropped.
 */
import fs from "node:fs";

/** Busy and total jiffies of all CPUs, from the first line of /proc/stat. */
export function machineJiffies(): { busy: number; total: number } {
  const fields = (fs.readFileSync("/proc/stat", "utf8").split("\n")[0] ?? "").trim().split(/\s+/).slice(1);
  // guest and guest_nice (the ninth and tenth) are already counted in user and nice.
  const values = fields.slice(0, 8).map(Number);
  const total = values.reduce((sum, value) => sum + value, 0);
  // idle and iowait are the fourth and fifth fields.
  return { busy: total - (values[3] ?? 0) - (values[4] ?? 0), total };
}

/** The fields of /proc/<pid>/stat after the command name, starting with state, ppid; null once gone. */
export function procStat(pid: number | string): { command: string; fields: string[] } | null {
  let stat: string;
  try {
    stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return null;
  }
  return {
    command: stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")),
    fields: stat.slice(stat.lastIndexOf(")") + 2).split(" "),
  };
}

/** CPU jiffies (user + system) of one process. */
export function processJiffies(pid: number): number {
  const stat = procStat(pid);
  return stat === null ? 0 : Number(stat.fields[11]) + Number(stat.fields[12]);
}

/** CPU jiffies (user + system) of the processes named `command` started by `parent`. */
export function childJiffies(parent: number, command: string): number {
  let jiffies = 0;
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = procStat(entry);
    if (stat?.command === command && Number(stat.fields[1]) === parent)
      jiffies += Number(stat.fields[11]) + Number(stat.fields[12]);
  }
  return jiffies;
}

/**
 * CPU jiffies (user + system) of the processes named `command` started by this process, those
 * still running and those that have exited (counted in this process's cutime and cstime once
 * reaped; the benchmarks start no other children that exit).
 */
export function ownChildrenJiffies(command: string): number {
  const own = procStat(process.pid);
  const reaped = own === null ? 0 : Number(own.fields[13]) + Number(own.fields[14]);
  return childJiffies(process.pid, command) + reaped;
}

/** Datagrams the kernel dropped for a full socket receive buffer, machine-wide (/proc/net/snmp). */
export function udpReceiveBufferErrors(): number {
  const lines = fs
    .readFileSync("/proc/net/snmp", "utf8")
    .split("\n")
    .filter((line) => line.startsWith("Udp:"));
  const names = (lines[0] ?? "").split(/\s+/);
  const values = (lines[1] ?? "").split(/\s+/);
  return Number(values[names.indexOf("RcvbufErrors")] ?? Number.NaN);
}

/** Datagrams dropped at the sockets bound to 127.0.0.1 on the ports `ours` accepts, from /proc/net/udp. */
export function udpDropsAt(ours: (port: number) => boolean): number {
  let drops = 0;
  for (const line of fs.readFileSync("/proc/net/udp", "utf8").split("\n").slice(1)) {
    const fields = line.trim().split(/\s+/);
    const [address, port] = (fields[1] ?? "").split(":");
    if (address === "0100007F" && ours(Number.parseInt(port ?? "", 16))) drops += Number(fields[12] ?? 0);
  }
  return drops;
}
