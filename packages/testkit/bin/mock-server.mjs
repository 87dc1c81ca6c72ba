#!/usr/bin/env node
/**
 * The mock of the API: Prism serving the contract, behind a small front that makes it answer like the
 * server where Prism does not:
 *
 * - an invalid request gets the server's 400 `validation_failed` naming every bad field (Prism would
 *   answer the operation's 422 example, e.g. `idempotency_key_reused`, or its first 400 example);
 * - `Idempotent-Replayed` is dropped (the mock keeps no state, so nothing is ever a replay), and a
 *   `Location` points at the id of the created resource in the body;
 * - one log line per request instead of Prism's half-dozen (Prism runs at level `warn`).
 *
 * Usage: node mock-server.mjs DOCUMENT [--host 127.0.0.1] [--port 4010]
 */
import { spawn } from 'node:child_process';
import { createServer, request } from 'node:http';
import { createRequire } from 'node:module';
import { connect, createServer as createTcpServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { requestViolations, validationProblem } from './mock-violations.mjs';

const { values, positionals } = parseArgs({
  options: { host: { type: 'string', default: '127.0.0.1' }, port: { type: 'string', default: '4010' } },
  allowPositionals: true,
});
const [document] = positionals;
if (!document) {
  console.error('usage: mock-server.mjs DOCUMENT [--host H] [--port N]');
  process.exit(2);
}

const WATCHDOG = fileURLToPath(new URL('../exit-with-parent.cjs', import.meta.url));
const STARTUP_TIMEOUT_MS = 45_000;

function prismCli() {
  const require = createRequire(import.meta.url);
  const manifest = require.resolve('@stoplight/prism-cli/package.json');
  return join(dirname(manifest), require(manifest).bin.prism);
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createTcpServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

async function waitForPort(port, prism) {
  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  for (;;) {
    if (prism.exitCode !== null) throw new Error(`Prism exited (${prism.exitCode}) before listening`);
    const open = await new Promise((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => resolve(socket.destroy() || true));
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    if (Date.now() > deadline) throw new Error(`Prism did not listen within ${STARTUP_TIMEOUT_MS} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const prismPort = await freePort();
// Prism's stdin is a pipe from this process: the watchdog ends Prism when this process dies.
const prism = spawn(
  process.execPath,
  [
    '--require',
    WATCHDOG,
    prismCli(),
    'mock',
    '--host',
    '127.0.0.1',
    '--port',
    String(prismPort),
    '--no-multiprocess',
    '--verboseLevel',
    'warn',
    document,
  ],
  { stdio: ['pipe', 'pipe', 'pipe'] },
);
// Prism logs each violation three times; the front's own line per request says the outcome.
for (const stream of [prism.stdout, prism.stderr]) {
  let pending = '';
  stream.on('data', (chunk) => {
    const lines = (pending + chunk.toString('utf8')).split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) if (!line.includes('[VALIDATOR]')) process.stderr.write(`${line}\n`);
  });
}
const stopAll = () => {
  prism.kill('SIGTERM');
  process.exit(0);
};
process.once('SIGTERM', stopAll);
process.once('SIGINT', stopAll);
prism.once('exit', (code) => {
  console.error(`mock: Prism exited (${code})`);
  process.exit(1);
});
await waitForPort(prismPort, prism);

/** The fixed-up answer for Prism's `status`, `headers` and `body` to a request for `path`. */
function answer(path, status, headers, body) {
  const violations = requestViolations(headers['sl-violations']);
  // Prism answers an invalid request with a 422 or 400 example; other statuses (401 for a missing key, a
  // `Prefer`d 413 or 415) stay as they are.
  if (violations.length > 0 && (status === 400 || status === 422)) {
    const problem = validationProblem(violations, {
      instance: path.split('?')[0],
      requestId: headers['x-request-id'],
    });
    const text = JSON.stringify(problem);
    return {
      status: 400,
      headers: {
        ...headers,
        'content-type': 'application/problem+json',
        'content-length': String(Buffer.byteLength(text)),
      },
      body: Buffer.from(text),
      summary: `validation_failed (${problem.errors.length})`,
    };
  }
  const fixed = { ...headers };
  delete fixed['idempotent-replayed'];
  if (fixed.location && (status === 201 || status === 202)) {
    try {
      const { id } = JSON.parse(body.toString('utf8'));
      if (typeof id === 'string') fixed.location = `${path.split('?')[0].replace(/\/register$/, '')}/${id}`;
    } catch {
      // Not JSON: keep Prism's header.
    }
  }
  return { status, headers: fixed, body, summary: '' };
}

/** Sends the request to Prism; resolves with its status, headers and body. */
function forward(method, url, headers, body) {
  return new Promise((resolve, reject) => {
    const proxied = request(
      { host: '127.0.0.1', port: prismPort, method, path: url, headers },
      (response) => {
        const parts = [];
        response.on('data', (chunk) => parts.push(chunk));
        response.on('end', () =>
          resolve({
            status: response.statusCode,
            headers: { ...response.headers },
            body: Buffer.concat(parts),
          }),
        );
        response.on('error', reject);
      },
    );
    proxied.on('error', reject);
    proxied.end(body);
  });
}

const isPrismNotFound = (answered) =>
  answered.status === 404 && answered.body.toString('utf8').includes('stoplight.io/prism/errors#NOT_FOUND');

const server = createServer((incoming, outgoing) => {
  const chunks = [];
  incoming.on('data', (chunk) => chunks.push(chunk));
  incoming.on('end', async () => {
    const body = Buffer.concat(chunks);
    // HEAD is answered as its GET, as the server does (Node sends no body for a HEAD).
    const method = incoming.method === 'HEAD' ? 'GET' : incoming.method;
    try {
      let answered = await forward(method, incoming.url, incoming.headers, body);
      // Prism looks for a `Prefer`d example before it validates: when the operation has no such example,
      // ask again without `Prefer`, to learn whether the request itself is invalid.
      if (isPrismNotFound(answered) && incoming.headers.prefer !== undefined) {
        const { prefer: _, ...withoutPrefer } = incoming.headers;
        const retried = await forward(method, incoming.url, withoutPrefer, body);
        if (requestViolations(retried.headers['sl-violations']).length > 0) answered = retried;
      }
      // Prism takes an empty header for a missing one; the contract says an Idempotency-Key has at least
      // one character, and the server refuses an empty one (curl sends it when `$(uuidgen)` fails).
      if (incoming.headers['idempotency-key'] === '') {
        const violation = {
          location: ['request', 'header', 'idempotency-key'],
          severity: 'Error',
          code: 'minLength',
          message: 'must NOT have fewer than 1 characters',
        };
        const previous = requestViolations(answered.headers['sl-violations']);
        answered.headers['sl-violations'] = JSON.stringify([...previous, violation]);
        answered.status = 400;
      }
      delete answered.headers['sl-violations-truncated'];
      const fixed = answer(incoming.url, answered.status, answered.headers, answered.body);
      delete fixed.headers['transfer-encoding'];
      if (fixed.body.length > 0 || fixed.headers['content-length'] !== undefined) {
        fixed.headers['content-length'] = String(fixed.body.length);
      }
      outgoing.writeHead(fixed.status, fixed.headers);
      outgoing.end(fixed.body);
      console.log(`mock: ${incoming.method} ${incoming.url} → ${fixed.status} ${fixed.summary}`.trimEnd());
    } catch (error) {
      outgoing.writeHead(502, { 'content-type': 'text/plain' });
      outgoing.end(`mock: Prism did not answer: ${error.message}`);
    }
  });
});
server.listen(Number(values.port), values.host, () => {
  const { port } = server.address();
  console.log(
    `Mock listening on http://${values.host}:${port} (Prism, answering invalid requests like the server)`,
  );
});
