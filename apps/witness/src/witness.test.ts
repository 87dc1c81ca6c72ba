import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { type AddressInfo, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import {
  CosignatureSigner,
  formatCheckpoint,
  type Hash,
  type NewTile,
  NoteSigner,
  openNote,
  parseCosignatureVerifierKey,
  parseVerifierKey,
  proveTree,
  recordHash,
  signNote,
  TileTree,
  tilesForAppend,
  toBase64,
  treeHash,
} from '@scenario-scoring/tlog';
import { afterAll, describe, expect, it } from 'vitest';
import { Witness, type WitnessRefusal } from './witness.js';
import { createWitnessServer } from './witness-server.js';
import { WitnessStore } from './witness-store.js';

const ORIGIN = 'localhost/scenario-scoring';
const logSigner = new NoteSigner(ORIGIN, new Uint8Array(32).fill(7));
const cosigner = new CosignatureSigner('witness.test/w1', new Uint8Array(32).fill(9));

/** An in-memory log whose leaves are `prefix <i>`: its tree, signed checkpoints and consistency proofs. */
class TestLog {
  readonly #tiles = new Map<string, Uint8Array>();
  size = 0;

  constructor(readonly prefix = 'leaf') {}

  get tree(): TileTree {
    return new TileTree(async (level, index) => this.#tiles.get(`${level}/${index}`));
  }

  async append(count: number): Promise<void> {
    const hashes: Hash[] = [];
    for (let i = 0; i < count; i++) {
      hashes.push(await recordHash(new TextEncoder().encode(`${this.prefix} ${this.size + i}`)));
    }
    const tiles: NewTile[] = await tilesForAppend(this.tree, this.size, hashes);
    for (const tile of tiles) this.#tiles.set(`${tile.level}/${tile.index}`, tile.hashes);
    this.size += count;
  }

  async checkpoint(signer = logSigner): Promise<string> {
    const rootHash = await treeHash(this.tree, this.size);
    return signNote(formatCheckpoint({ origin: ORIGIN, treeSize: this.size, rootHash }), signer);
  }

  async request(oldSize: number, signer = logSigner): Promise<string> {
    const proof = oldSize > 0 && oldSize < this.size ? await proveTree(this.tree, this.size, oldSize) : [];
    return `old ${oldSize}\n${proof.map((hash) => `${toBase64(hash)}\n`).join('')}\n${await this.checkpoint(signer)}`;
  }
}

async function newWitness() {
  const refusals: WitnessRefusal[] = [];
  const store = new WitnessStore(':memory:');
  const witness = new Witness({
    signer: cosigner,
    logs: new Map([[ORIGIN, [await parseVerifierKey(await logSigner.verifierKey())]]]),
    store,
    onRefusal: (refusal) => refusals.push(refusal),
  });
  return { witness, store, refusals };
}

describe('add-checkpoint', () => {
  it('cosigns an honest sequence, each cosignature verifying over the checkpoint it was given', async () => {
    const { witness, store } = await newWitness();
    const log = new TestLog();
    const cosignatureKey = await parseCosignatureVerifierKey(await cosigner.verifierKey());
    let old = 0;
    for (const grow of [1, 2, 5, 300, 1, 0]) {
      await log.append(grow);
      const answer = await witness.addCheckpoint(await log.request(old));
      expect(answer.status, answer.body).toBe(200);
      expect(answer.body).toMatch(/^\u2014 witness\.test\/w1 \S+\n$/);
      const opened = await openNote(`${await log.checkpoint()}${answer.body}`, [cosignatureKey]);
      expect(opened.signatures).toHaveLength(1);
      expect(store.latest(ORIGIN)?.treeSize).toBe(log.size);
      old = log.size;
    }
    const monitored = await witness.latestCheckpoint(
      (await import('node:crypto')).createHash('sha256').update(ORIGIN).digest('hex'),
    );
    expect(monitored.status).toBe(200);
    await openNote(monitored.body, [cosignatureKey, await parseVerifierKey(await logSigner.verifierKey())]);
    expect((await witness.latestCheckpoint('0'.repeat(64))).status).toBe(404);
  });

  it('answers 409 with the size it holds (text/x.tlog.size) to a stale or unknown old size', async () => {
    const { witness } = await newWitness();
    const log = new TestLog();
    await log.append(10);
    expect((await witness.addCheckpoint(await log.request(0))).status).toBe(200);
    await log.append(5);
    const stale = await witness.addCheckpoint(await log.request(4));
    expect(stale).toEqual({ status: 409, contentType: 'text/x.tlog.size', body: '10\n' });
    // A client that knows nothing asks from 0 and learns the size; then it resynchronises.
    expect((await witness.addCheckpoint(await log.request(0))).body).toBe('10\n');
    expect((await witness.addCheckpoint(await log.request(10))).status).toBe(200);
  });

  it('refuses a fork: a checkpoint of the same size with another root, and a larger one not extending it', async () => {
    const { witness, refusals } = await newWitness();
    const honest = new TestLog('leaf');
    await honest.append(20);
    expect((await witness.addCheckpoint(await honest.request(0))).status).toBe(200);
    const forked = new TestLog('forged');
    await forked.append(20);
    const sameSize = await witness.addCheckpoint(await forked.request(20));
    expect(sameSize.status).toBe(422);
    await forked.append(10);
    // The fork's own proof from 20 to 30 is consistent with the fork, not with what the witness holds.
    const larger = await witness.addCheckpoint(await forked.request(20));
    expect(larger.status).toBe(422);
    expect(refusals.map((refusal) => [refusal.status, refusal.fork])).toEqual([
      [422, true],
      [422, false],
    ]);
    expect(refusals[0]?.reason).toMatch(/same size, different roots/);
    await honest.append(10);
    expect((await witness.addCheckpoint(await honest.request(20))).status).toBe(200);
  });

  // Review: the genuine cosigned checkpoint sent again with a junk proof line was refused as a fork ("same
  // size, different roots"), logged as the evidence of one.
  it('refuses a proof sent between equal sizes as a proof that does not verify, not as a fork', async () => {
    const { witness, refusals } = await newWitness();
    const log = new TestLog();
    await log.append(7);
    expect((await witness.addCheckpoint(await log.request(0))).status).toBe(200);
    const checkpoint = await log.checkpoint();
    const junk = `old 7\n${Buffer.alloc(32, 1).toString('base64')}\n\n${checkpoint}`;
    const answer = await witness.addCheckpoint(junk);
    expect(answer.status).toBe(422);
    expect(answer.body).toMatch(/a proof between trees of the same size must be empty/);
    expect(answer.body).not.toMatch(/different roots/);
    expect(refusals).toMatchObject([{ status: 422, fork: false }]);
    // The same checkpoint with the empty proof is cosigned again.
    expect((await witness.addCheckpoint(`old 7\n\n${checkpoint}`)).status).toBe(200);
  });

  it('refuses a rollback: an older checkpoint, with its true old size or with the held one', async () => {
    const { witness, store } = await newWitness();
    const log = new TestLog();
    await log.append(8);
    const at8 = await log.request(0);
    await log.append(8);
    expect((await witness.addCheckpoint(await log.request(0))).status).toBe(200);
    expect(await witness.addCheckpoint(at8)).toMatchObject({ status: 409, body: '16\n' });
    const claimed = at8.replace(/^old 0\n/, 'old 16\n');
    expect((await witness.addCheckpoint(claimed)).status).toBe(400);
    expect(store.latest(ORIGIN)?.treeSize).toBe(16);
  });

  it('answers 404 for an unknown origin, 403 for another key or a bad signature, 422 and 400 for bad bodies', async () => {
    const { witness } = await newWitness();
    const log = new TestLog();
    await log.append(3);
    const other = await log.request(0);
    expect(
      (await witness.addCheckpoint(other.replace(`\n${ORIGIN}\n`, '\nexample.com/other\n'))).status,
    ).toBe(404);
    const stranger = new NoteSigner(ORIGIN, new Uint8Array(32).fill(8));
    expect((await witness.addCheckpoint(await log.request(0, stranger))).status).toBe(403);
    const tampered = other.replace(
      /\u2014 (\S+) (\S)/,
      (_m, name, first) => `\u2014 ${name} ${first === 'A' ? 'B' : 'A'}`,
    );
    expect((await witness.addCheckpoint(tampered)).status).toBe(403);
    const emptyLog = new TestLog();
    const wrongEmpty = (await emptyLog.request(0)).replace(
      /\n0\n\S+\n/,
      '\n0\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n',
    );
    expect((await witness.addCheckpoint(wrongEmpty)).status).toBe(403); // the body changed: the signature fails
    const signedWrongEmpty = `old 0\n\n${await signNote(`${ORIGIN}\n0\n${toBase64(new Uint8Array(32))}\n`, logSigner)}`;
    expect((await witness.addCheckpoint(signedWrongEmpty)).status).toBe(422);
    expect(
      (await witness.addCheckpoint(`old 0\n${toBase64(new Uint8Array(32))}\n\n${await log.checkpoint()}`))
        .status,
    ).toBe(422);
    expect((await witness.addCheckpoint(other.replace('old 0', 'old 4'))).status).toBe(400);
    expect((await witness.addCheckpoint('old x\n\nno')).status).toBe(400);
    expect(
      (await witness.addCheckpoint(`old 0\n${'AAAA\n'.repeat(64)}\n${await log.checkpoint()}`)).status,
    ).toBe(400);
  });

  it('checks and persists atomically: of two concurrent submissions from one old size, one wins', async () => {
    const { witness, store } = await newWitness();
    const log = new TestLog();
    await log.append(4);
    expect((await witness.addCheckpoint(await log.request(0))).status).toBe(200);
    await log.append(4);
    const at8 = await log.request(4);
    await log.append(4);
    const at12 = await log.request(4);
    const answers = await Promise.all([witness.addCheckpoint(at12), witness.addCheckpoint(at8)]);
    expect(answers.map((answer) => answer.status).sort()).toEqual([200, 409]);
    const won = answers[0]?.status === 200 ? 12 : 8;
    expect(store.latest(ORIGIN)?.treeSize).toBe(won);
  });

  it('keeps its state in a SQLite file across restarts', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'witness-'));
    try {
      const log = new TestLog();
      await log.append(6);
      const first = new WitnessStore(join(dir, 'witness.sqlite'));
      const verifiers = new Map([[ORIGIN, [await parseVerifierKey(await logSigner.verifierKey())]]]);
      expect(
        (
          await new Witness({ signer: cosigner, logs: verifiers, store: first }).addCheckpoint(
            await log.request(0),
          )
        ).status,
      ).toBe(200);
      first.close();
      const second = new WitnessStore(join(dir, 'witness.sqlite'));
      const again = new Witness({ signer: cosigner, logs: verifiers, store: second });
      expect(await again.addCheckpoint(await log.request(0))).toMatchObject({ status: 409, body: '6\n' });
      second.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the scenario-scoring-witness command', () => {
  const dir = mkdtempSync(join(tmpdir(), 'witness-cmd-'));
  const main = new URL('../dist/main.js', import.meta.url).pathname;
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('serves add-checkpoint over HTTP with a generated key it keeps, and prints its verifier key', async () => {
    const child = spawn(
      process.execPath,
      [
        main,
        '--name',
        'witness.test/cmd',
        '--log',
        await logSigner.verifierKey(),
        '--data-dir',
        dir,
        '--port',
        '0',
      ],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    try {
      const first = await new Promise<string>((resolve) =>
        createInterface({ input: child.stdout }).once('line', resolve),
      );
      const { listening, verifier_key: verifierKey } = JSON.parse(first) as {
        listening: string;
        verifier_key: string;
      };
      const log = new TestLog();
      await log.append(3);
      const response = await fetch(`${listening}/add-checkpoint`, {
        method: 'POST',
        body: await log.request(0),
      });
      expect(response.status).toBe(200);
      const line = await response.text();
      await openNote(`${await log.checkpoint()}${line}`, [await parseCosignatureVerifierKey(verifierKey)]);
      const conflict = await fetch(`${listening}/add-checkpoint`, {
        method: 'POST',
        body: await log.request(0),
      });
      expect([conflict.status, conflict.headers.get('content-type'), await conflict.text()]).toEqual([
        409,
        'text/x.tlog.size',
        '3\n',
      ]);
      expect((await fetch(`${listening}/add-checkpoint`)).status).toBe(405);
      const { stdout } = await promisify(execFile)(process.execPath, [
        main,
        '--name',
        'witness.test/cmd',
        '--data-dir',
        dir,
        '--print-key',
      ]);
      expect(stdout.trim()).toBe(verifierKey);
    } finally {
      child.kill('SIGTERM');
    }
  });
});

describe('the witness server facing slow or large clients', () => {
  it('cuts off a client that sends its request too slowly, and closes after refusing a body over 64 KiB', async () => {
    const { witness } = await newWitness();
    const server = createWitnessServer(witness, '', { requestTimeoutMs: 300, headersTimeoutMs: 200 });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    try {
      // Headers and a promised body that never comes: the witness answers 408 and closes, well before Node's 300 s default.
      const slow = connect(port, '127.0.0.1');
      slow.write('POST /add-checkpoint HTTP/1.1\r\nHost: w\r\nContent-Length: 100\r\n\r\nold 0\n');
      const started = performance.now();
      const answer = await new Promise<string>((resolve) => {
        let text = '';
        slow.on('data', (chunk) => {
          text += chunk;
        });
        slow.on('close', () => resolve(text));
      });
      expect(answer).toMatch(/^HTTP\/1\.1 408/);
      expect(performance.now() - started).toBeLessThan(5_000);
      // A body over the bound: 413, and the connection is closed rather than read on.
      const large = await fetch(`http://127.0.0.1:${port}/add-checkpoint`, {
        method: 'POST',
        body: 'x'.repeat(70 * 1024),
      });
      expect(large.status).toBe(413);
      expect(large.headers.get('connection')).toBe('close');
    } finally {
      server.close();
    }
  });

  it('closes at once a connection past the bound from one address, keeping the others', async () => {
    const { witness } = await newWitness();
    const server = createWitnessServer(witness, '', { maxConnectionsPerAddress: 2 });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const sockets = [0, 1, 2].map(() => connect(port, '127.0.0.1'));
    try {
      const closed = sockets.map(
        (socket) =>
          new Promise<boolean>((resolve) => {
            socket.on('error', () => {});
            socket.once('close', () => resolve(true));
            setTimeout(() => resolve(false), 1000);
          }),
      );
      // Whichever of the three the server saw last is closed; the other two stay open.
      expect((await Promise.all(closed)).filter(Boolean)).toHaveLength(1);
    } finally {
      for (const socket of sockets) socket.destroy();
      server.close();
    }
  });
});
