/**
 * CPU time of this process's main thread (the event loop), read from Linux's /proc: unlike the
 * process's CPU it leaves out worker threads, and unlike wall time it hardly moves with other
 * work on the machine. Used by tests that bound how long a request holds the loop, and by the
 * benches that report it (for the service in a process of its own, that process's threads).
 */
import fs from 'node:fs';

/** Linux counts a thread's CPU time in clock ticks of 10 ms (USER_HZ, 100 a second). */
export const TICK_MS = 10;

/** CPU milliseconds the main thread has used so far (in TICK_MS steps), or undefined where /proc is not there. */
export function mainThreadCpuMs(): number | undefined {
  try {
    return taskCpuMs(process.pid);
  } catch {
    return undefined;
  }
}

/** CPU milliseconds of one thread of process `pid` (throws when it is not there). */
function taskCpuMs(task: number, pid: number | 'self' = 'self'): number {
  const stat = fs.readFileSync(`/proc/${pid}/task/${task}/stat`, 'utf8');
  // Fields after the command (which may hold spaces) start after its closing parenthesis.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * TICK_MS; // utime + stime
}

/**
 * CPU milliseconds each thread of this process (or of process `pid`) has used so far, by thread
 * id (empty where /proc is not there).
 */
export function threadsCpuMs(pid: number | 'self' = 'self'): Map<number, number> {
  const out = new Map<number, number>();
  let tasks: string[];
  try {
    tasks = fs.readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const task of tasks) {
    try {
      out.set(Number(task), taskCpuMs(Number(task), pid));
    } catch {
      // The thread ended meanwhile.
    }
  }
  return out;
}
