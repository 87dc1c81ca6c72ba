import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Agent, type ClientRequest, request as httpRequest } from 'node:http';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { waitUntil } from '@scenario-scoring/testkit';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openStorage } from '../src/storage/storage.js';
import { BuiltServer, requireBuiltServer } from './support/built-server.js';
import { createTestDatabase, type TestDatabase } from './support/test-databases.js';
import { testFeatures } from './support/test-features.js';

/** Score requests held in flight at the moment of SIGTERM. */
const IN_FLIGHT = 20;

/**
 * A score request sent with `Expect: 100-continue`: the server answers `100 Continue` once it has read
 * the headers, so the test knows the request is in the server's hands before it sends the body.
 */
function heldScoreRequest(baseUrl: string, key: string, subject: string) {
  const body = JSON.stringify({ subject, context: { jurisdiction: 'DE', utilization: 0.4 } });
  const req: ClientRequest = httpRequest(`${baseUrl}/v1/scoring/score`, {
    method: 'POST',
    agent: false,
    headers: {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(body),
      expect: '100-continue',
    },
  });
  const continued = new Promise<void>((resolve, reject) => {
    req.once('continue', resolve);
    req.once('error', reject);
  });
  const answered = new Promise<{ status: number; text: string }>((resolve, reject) => {
    req.once('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        text += chunk;
      });
      res.once('end', () => resolve({ status: res.statusCode ?? 0, text }));
      res.once('error', reject);
    });
    req.once('error', reject);
  });
  const send = () => {
    req.end(body);
    return answered;
  };
  return { continued, send };
}

/** True when nothing accepts a TCP connection on the port any more. */
function refuses(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket: Socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(true));
  });
}

let database: TestDatabase;
beforeAll(async () => {
  requireBuiltServer();
  database = await createTestDatabase('sqlite');
});
afterAll(() => database.dispose());

it('on SIGTERM stops accepting, closes idle connections, answers every request in flight in full with its log record committed, and exits 0', async () => {
  const server = new BuiltServer({ DATA_DIR: database.options.dataDir, SHUTDOWN_GRACE: '20s' });
  try {
    const baseUrl = await server.baseUrl();
    const port = Number(new URL(baseUrl).port);
    const key = server.firstKey();
    if (key === undefined) throw new Error(`no first key in:\n${server.output}`);

    // An idle keep-alive connection, as a load balancer or client pool keeps.
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    let idleSocketClosed = false;
    await new Promise<void>((resolve, reject) => {
      const req = httpRequest(`${baseUrl}/healthz`, { agent }, (res) => {
        res.resume();
        res.once('end', resolve);
      });
      req.once('socket', (socket) => socket.once('close', () => (idleSocketClosed = true)));
      req.once('error', reject);
      req.end();
    });

    const held = Array.from({ length: IN_FLIGHT }, (_, n) =>
      heldScoreRequest(baseUrl, key, `in-flight-${n}`),
    );
    await Promise.all(held.map((request) => request.continued));

    server.kill('SIGTERM');
    await waitUntil(() => refuses(port), 15_000, 'the listener to refuse new connections');
    await waitUntil(() => idleSocketClosed, 15_000, 'the idle keep-alive connection to be closed');
    expect(server.running).toBe(true);

    const answers = await Promise.all(held.map((request) => request.send()));
    for (const answer of answers) expect(answer.status).toBe(200);
    const cids = answers.map((answer) => (JSON.parse(answer.text) as { log_cid: string }).log_cid);
    expect(new Set(cids).size).toBe(IN_FLIGHT);
    agent.destroy();

    expect(await server.exited).toEqual({ code: 0, signal: null });
    const logged = server.logLines();
    expect(
      logged.filter((line) => line.message === 'request' && line.operation === 'scoreSubject'),
    ).toHaveLength(IN_FLIGHT);
    expect(logged.map((line) => line.message)).toEqual(
      expect.arrayContaining(['shutting down', 'draining', 'stopped']),
    );
    expect(logged.some((line) => line.level === 'error')).toBe(false);

    const storage = await openStorage(database.options);
    try {
      for (const cid of cids) expect(await testFeatures(storage).logs.get('default', cid)).toBeDefined();
    } finally {
      await storage.close();
    }
  } finally {
    await server.stop('SIGKILL');
  }
});

it('keeps a SIGTERM sent while it starts: the start completes, then it drains and exits 0', async () => {
  // A data directory of its own, so this start creates the first key, a line printed mid-start (before
  // it listens), when Node's default action for SIGTERM would kill a process with no handler yet.
  const fresh = await createTestDatabase('sqlite');
  const server = new BuiltServer({ DATA_DIR: fresh.options.dataDir, SHUTDOWN_DRAIN_DELAY: '0s' });
  try {
    await server.waitFor(/Created an API key/);
    server.kill('SIGTERM');
    expect(await server.exited).toEqual({ code: 0, signal: null });
    expect(server.output).toMatch(/listening on http/);
    expect(server.logLines().map((line) => line.message)).toEqual(
      expect.arrayContaining(['shutting down', 'started', 'stopped']),
    );
  } finally {
    if (server.running) await server.stop('SIGKILL');
    await fresh.dispose();
  }
});

it('keeps a SIGTERM sent the moment the process handles one, while its modules still load', async () => {
  // A preload prints a line when the first SIGTERM listener is added: main.ts's, before it imports the
  // server (Node's own handler, which exits by the signal, is there from the start, so /proc cannot tell).
  const dir = await mkdtemp(join(tmpdir(), 'ss-early-signal-'));
  const preload = join(dir, 'mark-sigterm-listener.mjs');
  await writeFile(
    preload,
    // The line is written once the listener is in place: written before, the test's signal could come first.
    `const on = process.on;
process.on = function (event, listener) {
  const first = event === 'SIGTERM' && process.listenerCount('SIGTERM') === 0;
  const result = on.call(this, event, listener);
  if (first) process.stderr.write('first SIGTERM listener\\n');
  return result;
};
`,
  );
  const fresh = await createTestDatabase('sqlite');
  const server = new BuiltServer({
    DATA_DIR: fresh.options.dataDir,
    SHUTDOWN_DRAIN_DELAY: '0s',
    NODE_OPTIONS: `--import=${pathToFileURL(preload).href}`,
  });
  try {
    await server.waitFor(/first SIGTERM listener/, 10_000).catch((error: unknown) => {
      throw new Error(`${String(error)}\n${server.output}`);
    });
    server.kill('SIGTERM');
    expect(await server.exited, server.output).toEqual({ code: 0, signal: null });
    expect(server.output).not.toMatch(/Created an API key[\s\S]*first SIGTERM listener/);
    expect(server.logLines().map((line) => line.message)).toEqual(
      expect.arrayContaining(['shutting down', 'started', 'stopped']),
    );
  } finally {
    if (server.running) await server.stop('SIGKILL');
    await fresh.dispose();
    await rm(dir, { recursive: true, force: true });
  }
});
