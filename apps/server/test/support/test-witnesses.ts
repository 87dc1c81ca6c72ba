import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { CosignatureSigner, type NoteSigner, parseVerifierKey } from '@scenario-scoring/tlog';
import { createWitnessServer, Witness, WitnessStore } from '@scenario-scoring/witness';

/**
 * `count` witnesses (apps/witness) of the log `origin` signed by `logSigner`, in this process, each with a
 * fresh key, in-memory state and an HTTP listener on 127.0.0.1; and a C2SP tlog-policy naming the log,
 * each witness with its URL, and the quorum `quorum` (default: all of them).
 */
export async function startTestWitnesses(logSigner: NoteSigner, origin: string, count = 2, quorum?: string) {
  const logKey = await parseVerifierKey(await logSigner.verifierKey());
  const witnesses = await Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const signer = new CosignatureSigner(`witness.test/w${i + 1}`, randomBytes(32));
      const store = new WitnessStore(':memory:');
      const witness = new Witness({ signer, logs: new Map([[origin, [logKey]]]), store });
      const server = createWitnessServer(witness);
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      return { name: `w${i + 1}`, url, verifierKey: await signer.verifierKey(), server, store, witness };
    }),
  );
  const names = witnesses.map((w) => w.name);
  const policyText = [
    `log ${await logSigner.verifierKey()}`,
    ...witnesses.map((w) => `witness ${w.name} ${w.verifierKey} ${w.url}`),
    `group all-witnesses all ${names.join(' ')}`,
    `quorum ${quorum ?? 'all-witnesses'}`,
    '',
  ].join('\n');
  return {
    witnesses,
    policyText,
    close: () => Promise.all(witnesses.map((w) => new Promise((resolve) => w.server.close(resolve)))),
  };
}
