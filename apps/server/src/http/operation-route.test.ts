import type { AddressInfo } from 'node:net';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadContract } from '../common/contract.js';
import { contractOperations } from './contract-routes.js';
import { expressHandler, integerParameterNames, type OperationHandler } from './operation-route.js';

const contract = loadContract();
const operation = (id: string) => {
  const found = contractOperations(contract.document).find((op) => op.operationId === id);
  if (found === undefined) throw new Error(`no operation ${id}`);
  return found;
};

describe('the route adapter', () => {
  it("finds the operation's integer parameters through $refs, in the path and in the query", () => {
    const { components } = contract.document;
    expect(integerParameterNames(operation('getLogTile').definition, components, 'path')).toEqual([
      'level',
      'index',
    ]);
    expect(integerParameterNames(operation('getLogTile').definition, components, 'query')).toEqual(['width']);
    expect(integerParameterNames(operation('getInclusionProof').definition, components, 'path')).toEqual([]);
    expect(integerParameterNames(operation('getInclusionProof').definition, components, 'query')).toEqual([
      'tree_size',
    ]);
    expect(integerParameterNames(operation('listWebhooks').definition, components, 'query')).toEqual([
      'limit',
    ]);
  });

  describe('when a handler runs', () => {
    const seen: unknown[] = [];
    let base = '';
    let close = () => {};
    beforeAll(async () => {
      const app = express();
      const tile = operation('getLogTile');
      const proof = operation('getInclusionProof');
      const tileHandler: OperationHandler<'getLogTile'> = async (req, res) => {
        seen.push({ params: { ...req.params }, query: { ...req.query } });
        res.end();
      };
      const proofHandler: OperationHandler<'getInclusionProof'> = async (req, res) => {
        seen.push({ params: { ...req.params }, query: { ...req.query } });
        res.end();
      };
      app.get(tile.expressPath, expressHandler(tileHandler, tile, contract.document.components));
      app.get(proof.expressPath, expressHandler(proofHandler, proof, contract.document.components));
      const server = app.listen(0, '127.0.0.1');
      await new Promise((resolve) => server.once('listening', resolve));
      base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      close = () => server.close();
    });
    afterAll(() => close());

    it('gets the integer path and query parameters as numbers, and the others as they came', async () => {
      await (await fetch(`${base}/v1/log/tiles/0/12?width=3`)).arrayBuffer();
      await (await fetch(`${base}/v1/log/proofs/inclusion/bafkrei-x?tree_size=7`)).arrayBuffer();
      await (await fetch(`${base}/v1/log/tiles/1/2`)).arrayBuffer();
      expect(seen).toEqual([
        { params: { level: 0, index: 12 }, query: { width: 3 } },
        { params: { cid: 'bafkrei-x' }, query: { tree_size: 7 } },
        { params: { level: 1, index: 2 }, query: {} },
      ]);
    });
  });
});
