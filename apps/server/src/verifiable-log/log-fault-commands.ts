import { NoteSigner, parseVerifierKey } from '@scenario-scoring/tlog';
import type { Kysely } from 'kysely';
import type { Database } from '../storage/database.js';
import { clearLogFault } from './log-self-check.js';
import { loadLogSigningKey } from './log-signing-key.js';
import type { VerifiableLogConfig } from './verifiable-log-config.js';
import { selectOpenLogFaults } from './verifiable-log-store.js';

/** A CLI request about log faults (cli.ts parses it). */
export type LogFaultCommand =
  | { command: 'log-faults'; tenant: string | undefined }
  | { command: 'clear-log-fault'; tenant: string };

/**
 * Runs `log-faults` (a table of the open faults; exit 1 when there is one) or `clear-log-fault` (checks
 * the tenant's stored tree with the server's own key, then clears its faults; exit 1 and a line saying
 * what still does not match otherwise). Prints to the console; answers the exit code.
 */
export async function runLogFaultCommand(
  db: Kysely<Database>,
  config: Pick<VerifiableLogConfig, 'keyName' | 'signingKey'>,
  dataDir: string,
  request: LogFaultCommand,
): Promise<number> {
  if (request.command === 'log-faults') {
    const faults = await selectOpenLogFaults(db, request.tenant);
    const rows = faults.map((fault) => [
      fault.tenantId,
      fault.detectedAt,
      String(fault.treeSize),
      `${fault.firstIndex}..${fault.endIndex - 1}`,
      fault.reason,
    ]);
    console.log(formatTable(['TENANT', 'DETECTED', 'TREE_SIZE', 'LEAVES', 'REASON'], rows));
    return faults.length === 0 ? 0 : 1;
  }
  // A mistyped name must not read as success ("no open fault").
  const tenant = await db
    .selectFrom('tenants')
    .select('id')
    .where('id', '=', request.tenant)
    .executeTakeFirst();
  if (tenant === undefined && (await selectOpenLogFaults(db, request.tenant)).length === 0) {
    console.error(
      `error: no tenant named ${request.tenant}; \`log-faults\` lists the tenants with an open fault`,
    );
    return 1;
  }
  const signer = new NoteSigner(
    config.keyName,
    await loadLogSigningKey({ signingKey: config.signingKey, dataDir }),
  );
  const verifier = await parseVerifierKey(await signer.verifierKey());
  const outcome = await clearLogFault(db, request.tenant, verifier, new Date());
  if ('refused' in outcome) {
    const { refused } = outcome;
    console.error(
      `error: not cleared: ${refused.reason} (leaves ${refused.firstIndex}..${refused.endIndex - 1} of ${refused.treeSize}); restore the log data first`,
    );
    return 1;
  }
  console.log(
    outcome.cleared === 0
      ? `tenant ${request.tenant} had no open log fault; its log matches its last signed checkpoint`
      : `cleared ${outcome.cleared} log fault(s) of tenant ${request.tenant}: its log is signed again`,
  );
  return 0;
}

function formatTable(header: string[], rows: string[][]): string {
  const widths = header.map((cell, i) => Math.max(cell.length, ...rows.map((row) => (row[i] ?? '').length)));
  return [header, ...rows]
    .map((row) =>
      row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] as number))).join('  '),
    )
    .join('\n');
}
