import { createHash } from 'node:crypto';
import { base58btc } from 'multiformats/bases/base58';
import { CID } from 'multiformats/cid';
import { describe, expect, it } from 'vitest';
import { API_KEY, BASE_URL, jsonResponse, problemResponse, scriptedFetch } from '../test/scripted-fetch.js';
import { createClient } from './client-factory.js';
import { computeLogCid, verifyLogRecord } from './log-record-verifier.js';
import { fetchVerifiedLogRecord } from './verified-log-fetch.js';

// Known answer: the CID that IPFS tools give the 11 bytes "hello world" stored as one raw block.
const HELLO_CID = 'bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e';
const hello = new TextEncoder().encode('hello world');

describe('computeLogCid', () => {
  it('gives the CIDv1 (raw, sha2-256, base32) of the bytes', async () => {
    expect(await computeLogCid(hello)).toBe(HELLO_CID);
  });

  it('reads a string as UTF-8 and accepts an ArrayBuffer', async () => {
    expect(await computeLogCid('hello world')).toBe(HELLO_CID);
    expect(await computeLogCid(hello.buffer)).toBe(HELLO_CID);
  });

  it('ends in the sha2-256 digest of the bytes', async () => {
    const cid = CID.parse(await computeLogCid(hello));
    expect(cid.version).toBe(1);
    expect(cid.code).toBe(0x55);
    expect(cid.multihash.code).toBe(0x12);
    expect(Buffer.from(cid.multihash.digest).toString('hex')).toBe(
      createHash('sha256').update(hello).digest('hex'),
    );
  });
});

describe('verifyLogRecord', () => {
  it('accepts the bytes the CID names', async () => {
    expect(await verifyLogRecord(hello, HELLO_CID)).toBe(true);
    expect(await verifyLogRecord('hello world', HELLO_CID)).toBe(true);
  });

  it('refuses bytes with one byte changed', async () => {
    const changed = Uint8Array.from(hello);
    changed[4] = (changed[4] ?? 0) ^ 0x01;
    expect(await verifyLogRecord(changed, HELLO_CID)).toBe(false);
    expect(await verifyLogRecord('hello world ', HELLO_CID)).toBe(false);
  });

  it('accepts the same CID written in base58btc', async () => {
    const base58 = CID.parse(HELLO_CID).toString(base58btc);
    expect(base58.startsWith('z')).toBe(true);
    expect(await verifyLogRecord(hello, base58)).toBe(true);
  });

  it('refuses a CID of the same digest under another codec', async () => {
    const dagJson = CID.createV1(0x0129, CID.parse(HELLO_CID).multihash).toString();
    expect(await verifyLogRecord(hello, dagJson)).toBe(false);
  });

  it('throws a TypeError when the cid is not a CID', async () => {
    await expect(verifyLogRecord(hello, 'not-a-cid')).rejects.toThrow(TypeError);
  });
});

describe('fetchVerifiedLogRecord', () => {
  const RECORD = '{"context":{"jurisdiction":"DE"},"subject":"s"}';

  it('returns the bytes and the parsed record when they hash to the cid', async () => {
    const cid = await computeLogCid(RECORD);
    const { fetch, sent } = scriptedFetch(
      new Response(RECORD, { headers: { 'Content-Type': 'application/json' } }),
    );
    const client = createClient({ baseUrl: BASE_URL, apiKey: API_KEY, fetch });

    const { data, error } = await fetchVerifiedLogRecord(client, cid);

    expect(error).toBeUndefined();
    expect(new TextDecoder().decode(data?.bytes)).toBe(RECORD);
    expect(data?.record.subject).toBe('s');
    expect(sent[0]?.url).toBe(`${BASE_URL}/v1/logs/${cid}`);
  });

  it('returns a log_record_mismatch when the bytes served are other bytes', async () => {
    const cid = await computeLogCid(RECORD);
    const { fetch } = scriptedFetch(jsonResponse({ context: { jurisdiction: 'DE' }, subject: 't' }));
    const client = createClient({ baseUrl: BASE_URL, apiKey: API_KEY, fetch });

    const { data, error } = await fetchVerifiedLogRecord(client, cid);

    expect(data).toBeUndefined();
    expect(error).toMatchObject({ code: 'log_record_mismatch', cid });
  });

  it('returns the problem of a 404', async () => {
    const { fetch } = scriptedFetch(problemResponse(404, 'not_found'));
    const client = createClient({ baseUrl: BASE_URL, apiKey: API_KEY, fetch });

    const { error } = await fetchVerifiedLogRecord(client, HELLO_CID);

    expect(error?.code).toBe('not_found');
  });
});
