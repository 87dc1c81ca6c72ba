/** Starting and stopping the processes a benchmark measures, each on a free loopback port. */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';

/** A child process that serves HTTP on `url`. */
export interface RunningProcess {
  url: string;
  child: ChildProcess;
  output: () => string;
  stop: () => Promise<void>;
}

/**
 * Spawns `command` and waits until `readyUrl` answers (any status), so measuring starts on a warm,
 * listening process. Fails with the process's output when it exits or does not answer in time.
 */
export async function startProcess(
  command: string,
  args: string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string; url: string; readyPath?: string; timeoutMs?: number },
): Promise<RunningProcess> {
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk) => {
    output += chunk;
  });
  child.stderr?.on('data', (chunk) => {
    output += chunk;
  });
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const exited = once(child, 'exit');
    const timeout = sleep(5000).then(() => child.kill('SIGKILL'));
    await Promise.race([exited, timeout]);
  };
  const deadline = Date.now() + (options.timeoutMs ?? 30_000);
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${command} exited early:\n${output}`);
    try {
      await fetch(options.url + (options.readyPath ?? '/'));
      return { url: options.url, child, output: () => output, stop };
    } catch {
      await sleep(100);
    }
  }
  await stop();
  throw new Error(`${command} did not answer at ${options.url} in time:\n${output}`);
}
