import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  formatCheckpoint,
  type NewTile,
  NoteSigner,
  parseCosignatureVerifierKey,
  proveTree,
  recordHash,
  signNote,
  TileTree,
  tilesForAppend,
  treeHash,
} from '@scenario-scoring/tlog';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestWitnesses } from '../../test/support/test-witnesses.js';
import type { Logger } from '../request-logging/logger.js';
import { WITNESS_ANSWER_LIMIT_BYTES, WitnessClient } from './witness-client.js';

const ORIGIN = 'client.test/root';
const signer = new NoteSigner(ORIGIN, randomBytes(32));

/** An in-memory root tree: `grow(n)` appends n leaves; `checkpoint()` signs the current size. */
function memoryLog(signedBy = signer, origin = ORIGIN) {
  const tiles = new Map<string, Uint8Array>();
  const tree = new TileTree(async (level, index) => tiles.get(`${level}/${index}`));
  let size = 0;
  return {
    tree,
    get size() {
      return size;
    },
    async grow(count: number) {
      const hashes = await Promise.all(
        Array.from({ length: count }, (_, i) => recordHash(new TextEncoder().encode(`leaf ${size + i}`))),
      );
      const added: NewTile[] = await tilesForAppend(tree, size, hashes);
      for (const tile of added) tiles.set(`${tile.level}/${tile.index}`, tile.hashes);
      size += count;
    },
    async checkpoint() {
      return signNote(
        formatCheckpoint({ origin, treeSize: size, rootHash: await treeHash(tree, size) }),
        signedBy,
      );
    },
  };
}

describe('the witness client', () => {
  let witnesses: Awaited<ReturnType<typeof startTestWitnesses>>;
  const errors: string[] = [];
  const logger: Logger = { info() {}, error: (message) => errors.push(message) };
  beforeAll(async () => {
    witnesses = await startTestWitnesses(signer, ORIGIN, 1);
  });
  afterAll(() => witnesses.close());
  const client = async (url = witnesses.witnesses[0]?.url as string) =>
    new WitnessClient(
      {
        name: 'w1',
        url,
        verifier: await parseCosignatureVerifierKey(witnesses.witnesses[0]?.verifierKey as string),
      },
      logger,
      2000,
    );

  it('gets a verified cosignature, resynchronises on 409, and says when the witness is ahead', async () => {
    const log = memoryLog();
    const prove = (old: number) => proveTree(log.tree, log.size, old);
    await log.grow(5);
    const first = await client();
    expect(await first.submit(await log.checkpoint(), 5, prove)).toMatchObject({ kind: 'cosigned' });
    await log.grow(3);
    // Another instance's client knows nothing: it sends old 0, learns 5 from the 409, and sends a proof from 5.
    const second = await client();
    const at8 = await log.checkpoint();
    expect(await second.submit(at8, 8, prove)).toMatchObject({
      kind: 'cosigned',
      line: expect.stringMatching(/^\u2014 witness\.test\/w1 /),
    });
    // The first client still thinks 5; an older checkpoint than the witness holds is `ahead`.
    const older = memoryLog();
    await older.grow(5);
    expect(await first.submit(await older.checkpoint(), 5, (old) => proveTree(older.tree, 5, old))).toEqual({
      kind: 'ahead',
      size: 8,
    });
    expect(errors).toEqual([]);
  });

  it('logs and answers refused for 404 (unknown origin), 403 (another key) and 422 (a fork), failed when unreachable', async () => {
    const other = memoryLog(new NoteSigner('client.test/other', randomBytes(32)), 'client.test/other');
    await other.grow(2);
    expect(await (await client()).submit(await other.checkpoint(), 2, async () => [])).toMatchObject({
      kind: 'refused',
      status: 404,
    });
    const stranger = memoryLog(new NoteSigner(ORIGIN, randomBytes(32)));
    await stranger.grow(2);
    expect(await (await client()).submit(await stranger.checkpoint(), 2, async () => [])).toMatchObject({
      kind: 'refused',
      status: 403,
    });
    // The witness holds size 8: another root of size 8 is a fork (learnt by 409, then refused by 422).
    const forkClient = await client();
    const differentLeaves = await signNote(
      formatCheckpoint({ origin: ORIGIN, treeSize: 8, rootHash: await recordHash(new Uint8Array([7])) }),
      signer,
    );
    expect(await forkClient.submit(differentLeaves, 8, async () => [])).toMatchObject({
      kind: 'refused',
      status: 422,
    });
    expect(errors.filter((e) => e === 'witness refused the root checkpoint')).toHaveLength(3);
    const unreachable = await client('http://127.0.0.1:9');
    expect(await unreachable.submit(differentLeaves, 8, async () => [])).toMatchObject({
      kind: 'failed',
    });
    expect(errors).toContain('witness unreachable');
  });

  /** A hostile witness answering every request with `answer`; `close()` stops it. */
  async function hostileWitness(answer: (res: import('node:http').ServerResponse) => void) {
    const server: Server = createServer((req, res) => {
      req.resume();
      answer(res);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return {
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      close: () => new Promise<void>((resolve) => server.close(() => resolve())),
    };
  }

  // Review: a witness answering add-checkpoint with 300 MB took the server from 190 MB to 1.19 GB.
  it('reads a witness answer up to a bound, and fails the attempt (logged) past it', async () => {
    const log = memoryLog();
    await log.grow(3);
    let written = 0;
    const chunk = Buffer.alloc(64 * 1024, 0x41);
    // An answer without end (chunked, no Content-Length) until the client closes the connection.
    const endless = await hostileWitness((res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      const write = () => {
        while (!res.destroyed && written < 256 * 1024 * 1024) {
          written += chunk.length;
          if (!res.write(chunk)) return res.once('drain', write);
        }
      };
      res.on('close', () => res.destroy());
      write();
    });
    // One that says its length first.
    const declared = await hostileWitness((res) => {
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(300 * 1024 * 1024) });
      res.write(chunk);
    });
    try {
      errors.length = 0;
      for (const url of [endless.url, declared.url]) {
        const outcome = await (await client(url)).submit(await log.checkpoint(), 3, async () => []);
        expect(outcome).toEqual({
          kind: 'failed',
          detail: `the witness's answer is over ${WITNESS_ANSWER_LIMIT_BYTES} bytes; not read further`,
        });
      }
      expect(errors).toEqual(['witness answer too large', 'witness answer too large']);
      // The connection was closed soon after the bound, not read to the end.
      expect(written).toBeLessThan(32 * 1024 * 1024);
    } finally {
      await Promise.all([endless.close(), declared.close()]);
    }
  });

  // Review: fetch followed a witness's redirects, posting the checkpoint wherever the answer said.
  it('does not follow a redirect: the attempt fails, logged, and the target is never asked', async () => {
    const log = memoryLog();
    await log.grow(3);
    let asked = 0;
    const target = await hostileWitness((res) => {
      asked += 1;
      res.end('\u2014 nobody\n');
    });
    const redirecting = await hostileWitness((res) => {
      res.writeHead(307, { location: `${target.url}/add-checkpoint` }).end();
    });
    try {
      errors.length = 0;
      const outcome = await (await client(redirecting.url)).submit(await log.checkpoint(), 3, async () => []);
      expect(outcome).toEqual({
        kind: 'failed',
        detail: 'the witness answered a redirect (307), which is not followed',
      });
      expect(errors).toEqual(['witness answered a redirect']);
      expect(asked).toBe(0);
    } finally {
      await Promise.all([target.close(), redirecting.close()]);
    }
  });
});
