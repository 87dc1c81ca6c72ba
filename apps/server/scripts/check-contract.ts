// Checks the contract the build ships in dist/contract/ as a development start does: the document against
// the OpenAPI 3.1 schema (express-openapi-validator's `validateApiSpec`), then every operation's request and
// response validators compiled, each operation's own request example accepted. A production start skips
// the first check (a tenth of its start-up), so the build makes it here, once, on the very file it ships.
// Runs after tsc and copy-contract.ts, on their output.
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const dist = join(fileURLToPath(new URL('..', import.meta.url)), 'dist');
const { loadContract } = (await import(
  join(dist, 'common/contract.js')
)) as typeof import('../src/common/contract.ts');
const { contractValidation, warmUpContractValidation } = (await import(
  join(dist, 'http', 'contract-validation.js')
)) as typeof import('../src/http/contract-validation.ts');

const contract = loadContract(join(dist, 'contract'));
try {
  const validation = contractValidation(contract, { validateResponses: true, checkDocument: true });
  const warmed = await warmUpContractValidation(validation, contract);
  console.log(`check-contract: dist/contract/openapi.json is valid; ${warmed.length} operations compile`);
} catch (error) {
  console.error(`check-contract: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
}
