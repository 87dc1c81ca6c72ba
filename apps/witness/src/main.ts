#!/usr/bin/env node
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { CosignatureSigner, fromBase64, type NoteVerifier, parseVerifierKey } from '@scenario-scoring/tlog';
import { Witness } from './witness.js';
import { createWitnessServer } from './witness-server.js';
import { WitnessStore } from './witness-store.js';

const USAGE = `Usage: scenario-scoring-witness --name NAME --log VKEY [--log VKEY ...] [options]

A C2SP tlog-witness: cosigns (cosignature/v1, Ed25519) the checkpoints of the logs it is given when they
extend the latest one it cosigned; refuses forks and rollbacks. Its state is a SQLite file.

Options (each also an environment variable):
  --name NAME        WITNESS_NAME      the witness key name, e.g. witness.example.com/w1 (required)
  --log VKEY         WITNESS_LOGS      a log's signed-note verifier key (its name is the log's origin);
                                       repeatable; the variable holds one per line
  --data-dir DIR     WITNESS_DATA_DIR  state (witness.sqlite) and, without WITNESS_KEY, the key file
                                       witness.key (generated once, mode 0600); default ./witness-data
  --key BASE64       WITNESS_KEY       the 32-byte Ed25519 private key seed, standard base64
  --host HOST        WITNESS_HOST      default 127.0.0.1
  --port PORT        WITNESS_PORT      default 7380; 0 picks a free port
  --prefix PATH      WITNESS_PREFIX    URL prefix of add-checkpoint, default none ("/add-checkpoint")
  --print-key                          print the witness's verifier key and exit
  -h, --help

On start it prints one JSON line: {"listening":"http://HOST:PORT<prefix>","verifier_key":"…"}.`;

/** Exit code of a command line or configuration the witness cannot run with (POSIX "misuse"). */
const EXIT_USAGE = 2;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      name: { type: 'string' },
      log: { type: 'string', multiple: true },
      'data-dir': { type: 'string' },
      key: { type: 'string' },
      host: { type: 'string' },
      port: { type: 'string' },
      prefix: { type: 'string' },
      'print-key': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return;
  }
  const env = process.env;
  const name = values.name ?? env.WITNESS_NAME;
  const logKeys =
    values.log ??
    (env.WITNESS_LOGS ?? '')
      .split('\n')
      .map((line) => line.trim())
      .filter(Boolean);
  const dataDir = values['data-dir'] ?? env.WITNESS_DATA_DIR ?? 'witness-data';
  const port = Number(values.port ?? env.WITNESS_PORT ?? 7380);
  const prefix = (values.prefix ?? env.WITNESS_PREFIX ?? '').replace(/\/+$/, '');
  if (!name) throw new UsageError('--name (WITNESS_NAME) is required');
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError('--port is 0 to 65535');
  const signer = new CosignatureSigner(name, loadSeed(values.key ?? env.WITNESS_KEY, dataDir));
  if (values['print-key']) {
    console.log(await signer.verifierKey());
    return;
  }
  if (logKeys.length === 0) throw new UsageError('give at least one --log VKEY (WITNESS_LOGS)');
  const logs = new Map<string, NoteVerifier[]>();
  for (const key of logKeys) {
    const verifier = await parseVerifierKey(key).catch((error: Error) => {
      throw new UsageError(`--log ${key}: ${error.message}`);
    });
    logs.set(verifier.name, [...(logs.get(verifier.name) ?? []), verifier]);
  }
  const store = new WitnessStore(join(dataDir, 'witness.sqlite'));
  const witness = new Witness({
    signer,
    logs,
    store,
    onRefusal: (refusal) => console.error(JSON.stringify({ msg: 'checkpoint refused', ...refusal })),
  });
  const server = createWitnessServer(witness, prefix);
  server.listen(port, values.host ?? env.WITNESS_HOST ?? '127.0.0.1', async () => {
    const address = server.address();
    const bound = typeof address === 'object' && address ? address : { address: '?', port };
    const host = bound.address.includes(':') ? `[${bound.address}]` : bound.address;
    console.log(
      JSON.stringify({
        listening: `http://${host}:${bound.port}${prefix}`,
        verifier_key: await signer.verifierKey(),
        logs: [...logs.keys()],
      }),
    );
  });
  const stop = () => {
    server.close(() => {
      store.close();
      process.exit(0);
    });
    server.closeAllConnections();
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

class UsageError extends Error {}

/** The key seed: the given base64, else the data dir's witness.key, else a new one written there (0600). */
function loadSeed(given: string | undefined, dataDir: string): Uint8Array {
  const decode = (text: string, where: string) => {
    const seed = fromBase64(text.trim());
    if (seed?.length !== 32) throw new UsageError(`${where} is not a base64 32-byte Ed25519 seed`);
    return seed;
  };
  if (given) return decode(given, 'WITNESS_KEY');
  const file = join(dataDir, 'witness.key');
  if (existsSync(file)) return decode(readFileSync(file, 'utf8'), file);
  const seed = crypto.getRandomValues(new Uint8Array(32));
  new WitnessStore(join(dataDir, 'witness.sqlite')).close(); // creates the directory
  writeFileSync(file, `${Buffer.from(seed).toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
  chmodSync(file, 0o600);
  return seed;
}

main().catch((error: Error) => {
  console.error(`scenario-scoring-witness: ${error.message}`);
  if (error instanceof UsageError) console.error(USAGE);
  process.exit(error instanceof UsageError ? EXIT_USAGE : 1);
});
