/**
 * The service as its own process (or cluster of processes) on 127.0.0.1, for benchmarks that
 * measure the server rather than a client sharing its event loop.
 */
import fs from 'node:fs';
import { kill, processTree, startServer } from '../../test/reliability/process-faults.ts';

export { ROOT as root } from '../../test/reliability/process-faults.ts';
export const tsxNode = ['--import', 'tsx'];

function rssMiB(pid: number): number {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    return Number(/VmRSS:\s+(\d+)/.exec(status)![1]) / 1024;
  } catch {
    return 0;
  }
}

export interface ServerProcess {
  url: string;
  workers: number;
  /** Resident memory of the server and all its workers. */
  rssMiB(): number;
  stop(): Promise<void>;
}

/** Starts `src/main.ts` on a free loopback port over the data in `dataDir`. */
export async function startServerProcess(
  dataDir: string,
  workers: number,
  extraEnv: Record<string, string> = {},
): Promise<ServerProcess> {
  const server = await startServer({ DATA_DIR: dataDir, ...extraEnv, WORKERS: String(workers) });
  return {
    url: server.url,
    workers,
    rssMiB: () => processTree(server.child.pid!).reduce((sum, pid) => sum + rssMiB(pid), 0),
    stop: async () => {
      if (server.child.exitCode === null) await kill(server, 'SIGTERM');
    },
  };
}
