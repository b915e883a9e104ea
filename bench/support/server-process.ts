/**
 * The service as its own process (or cluster of processes) on 127.0.0.1, for benchmarks that
 * measure the server rather than a client sharing its event loop.
 */
import fs from 'node:fs';
import { kill, processTree, startServer } from '../../test/reliability/process-faults.ts';

export { ROOT as root } from '../../test/reliability/process-faults.ts';
export const tsxNode = ['--import', 'tsx'];

export interface Memory {
  /** Resident set (VmRSS). */
  rss: number;
  /** Its anonymous part (heaps, buffers): what a leak grows. The rest is mapped files. */
  anon: number;
}

function memoryMiB(pid: number): Memory {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const kib = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
    return { rss: kib('VmRSS') / 1024, anon: kib('RssAnon') / 1024 };
  } catch {
    return { rss: 0, anon: 0 };
  }
}

/** CPU seconds (user + system) a process has used, from /proc (0 when it cannot be read). */
export function cpuSeconds(pid: number): number {
  try {
    // Fields after the command (which may hold spaces): state is the 3rd field, utime the 14th.
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100; // clock ticks: 100 per second on Linux
  } catch {
    return 0;
  }
}

export interface ServerProcess {
  url: string;
  /** The service's first process (with more than one server process, their primary). */
  pid: number;
  workers: number;
  /** Resident memory of the server and all its workers, MiB. */
  memory(): Memory;
  /** CPU seconds the server and its workers have used. */
  cpu(): number;
  stop(): Promise<void>;
}

/** Starts `src/main.ts` on a free loopback port over the data in `dataDir`. */
export async function startServerProcess(
  dataDir: string,
  workers: number,
  extraEnv: Record<string, string> = {},
): Promise<ServerProcess> {
  // Start-up compiles the schema's validators before listening: minutes on a busy machine.
  const server = await startServer({ DATA_DIR: dataDir, ...extraEnv, WORKERS: String(workers) }, 3000);
  return {
    url: server.url,
    pid: server.child.pid!,
    workers,
    memory: () =>
      processTree(server.child.pid!)
        .map(memoryMiB)
        .reduce((a, b) => ({ rss: a.rss + b.rss, anon: a.anon + b.anon }), { rss: 0, anon: 0 }),
    cpu: () => processTree(server.child.pid!).reduce((sum, pid) => sum + cpuSeconds(pid), 0),
    stop: async () => {
      if (server.child.exitCode === null) await kill(server, 'SIGTERM');
    },
  };
}
