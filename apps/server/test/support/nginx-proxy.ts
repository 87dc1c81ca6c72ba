/**
 * The shipped nginx example (`deploy/nginx/scenario-scoring.conf`) run in front of a server, as a child
 * process with its own prefix, temp dirs and pid file under a temp dir (`daemon off`), and a TCP tap
 * between nginx and the server that keeps every byte nginx sent upstream, so a test sees what the proxy
 * passed on and what it answered itself.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, waitUntil } from '@scenario-scoring/testkit';
import { SERVER_DIR } from './built-server.js';

/** The shipped example. */
export const NGINX_EXAMPLE = join(SERVER_DIR, '..', '..', 'deploy', 'nginx', 'scenario-scoring.conf');

/** The nginx binary: Debian's, which scripts/test.sh installs; the suite fails without it. */
export function nginxBinary(): string {
  for (const candidate of [process.env.NGINX_PATH, '/usr/sbin/nginx', 'nginx']) {
    if (candidate === undefined) continue;
    try {
      execFileSync(candidate, ['-v'], { stdio: 'ignore' });
      return candidate;
    } catch {}
  }
  throw new Error(
    "The reverse-proxy test needs nginx: install Debian's 'nginx' package (scripts/test.sh does, as root) or set NGINX_PATH.",
  );
}

/** `text` with `from` replaced by `to`, which must occur exactly once (the example changed otherwise). */
function replaceOnce(text: string, from: string, to: string): string {
  const parts = text.split(from);
  if (parts.length !== 2) throw new Error(`${NGINX_EXAMPLE} must hold "${from}" exactly once`);
  return parts.join(to);
}

/** A TCP relay that forwards to `port` and keeps every byte it relayed towards it, as latin1 text. */
async function startTap(port: number): Promise<{ server: Server; port: number; upstream: () => string }> {
  let seen = '';
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const target = connect(port, '127.0.0.1');
    sockets.add(client).add(target);
    client.on('data', (chunk: Buffer) => {
      seen += chunk.toString('latin1');
    });
    client.pipe(target).pipe(client);
    const end = () => {
      client.destroy();
      target.destroy();
    };
    client.on('error', end).on('close', end);
    target.on('error', end).on('close', end);
  });
  const tapPort = await freePort();
  await new Promise<void>((resolve) => server.listen(tapPort, '127.0.0.1', resolve));
  server.on('close', () => {
    for (const socket of sockets) socket.destroy();
  });
  return { server, port: tapPort, upstream: () => seen };
}

/** nginx in front of a server, and what it passed on. */
export interface NginxProxy {
  /** nginx's URL, `http://127.0.0.1:<port>`. */
  readonly url: string;
  /** Every byte nginx sent to the server so far (latin1). */
  upstream(): string;
  /** The head (request line and headers) of the request nginx passed on that holds `marker`, if any. */
  upstreamHead(marker: string): string | undefined;
  /** nginx's own output (its error log goes to stderr). */
  output(): string;
  stop(): Promise<void>;
}

/** Starts the shipped example with only its `listen` and its upstream's address replaced. */
export async function startNginxProxy(serverPort: number): Promise<NginxProxy> {
  const nginx = nginxBinary();
  const dir = mkdtempSync(join(tmpdir(), 'nginx-proxy-'));
  // Run as root, nginx's workers are `nobody`, and must reach the temp dirs.
  chmodSync(dir, 0o755);
  mkdirSync(join(dir, 'temp'));
  const tap = await startTap(serverPort);
  const port = await freePort();
  let site = readFileSync(NGINX_EXAMPLE, 'utf8');
  site = replaceOnce(site, 'listen 80;', `listen 127.0.0.1:${port};`);
  site = replaceOnce(site, 'server 127.0.0.1:3000;', `server 127.0.0.1:${tap.port};`);
  writeFileSync(join(dir, 'site.conf'), site);
  const temp = (name: string) => `${name}_temp_path ${join(dir, 'temp', name)};`;
  writeFileSync(
    join(dir, 'nginx.conf'),
    [
      `pid ${join(dir, 'nginx.pid')};`,
      'error_log stderr warn;',
      'worker_processes 1;',
      'events { worker_connections 256; }',
      'http {',
      '  access_log off;',
      `  ${['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map(temp).join(' ')}`,
      `  include ${join(dir, 'site.conf')};`,
      '}',
      '',
    ].join('\n'),
  );
  let output = '';
  const child: ChildProcess = spawn(
    nginx,
    ['-p', dir, '-c', join(dir, 'nginx.conf'), '-e', 'stderr', '-g', 'daemon off;'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString('utf8');
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString('utf8');
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await exited;
    }
    await new Promise<void>((resolve) => tap.server.close(() => resolve()));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitUntil(
      async () => {
        if (child.exitCode !== null) throw new Error(`nginx exited (${child.exitCode}):\n${output}`);
        return fetch(`${url}/healthz`).then(
          (response) => response.status === 200,
          () => false,
        );
      },
      10_000,
      'nginx to answer /healthz through the server',
    );
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    url,
    upstream: tap.upstream,
    upstreamHead(marker) {
      const text = tap.upstream();
      const at = text.indexOf(marker);
      if (at < 0) return undefined;
      // The last request line before the marker starts its head (a body before it ends without CRLF).
      const lines = [...text.slice(0, at).matchAll(/[A-Z]+ \/\S* HTTP\/1\.1\r\n/g)];
      const start = lines.at(-1)?.index ?? 0;
      const end = text.indexOf('\r\n\r\n', at);
      return text.slice(start, end < 0 ? undefined : end);
    },
    output: () => output,
    stop,
  };
}
