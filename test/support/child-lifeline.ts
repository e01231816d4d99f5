// Ties a child process's life to this one. The child is killed when this process exits normally, and
// also when it dies without running exit handlers (a SIGKILL, a crashed test worker): a small watchdog
// process holds an IPC channel to this one, and when the channel closes it kills the child. Used for
// children that have no lifeline of their own, such as `redis-server` and `refhub worker`.
import { spawn, type ChildProcess } from 'node:child_process';

const WATCHDOG = `
const pid = Number(process.argv[1]);
process.on('disconnect', () => {
  try { process.kill(pid, 'SIGKILL'); } catch {}
  process.exit(0);
});
`;

/** Call once, right after spawning `child`; the watchdog ends when the child exits. */
export function tieToThisProcess(child: ChildProcess): void {
  if (child.pid === undefined) return;
  const watchdog = spawn(process.execPath, ['-e', WATCHDOG, String(child.pid)], {
    stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
  });
  // Neither the watchdog nor its channel may keep this process alive.
  watchdog.unref();
  watchdog.channel?.unref();
  const kill = () => child.kill('SIGKILL');
  process.once('exit', kill);
  child.once('exit', () => {
    process.off('exit', kill);
    // SIGKILL, so the watchdog never acts on a PID that may already belong to another process.
    watchdog.kill('SIGKILL');
  });
}
