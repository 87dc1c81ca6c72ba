import { randomBytes, randomUUID } from 'node:crypto';
import type { Problem, RegisteredWebhook } from '@scenario-scoring/api-types';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { forEachDatabase } from '../../../test/support/test-databases.js';
import { testFeatures } from '../../../test/support/test-features.js';
import { startTestServer, type TestServer } from '../../../test/support/test-server.js';
import { SecretBox } from '../outbound/secret-box.js';

const BODY = { url: 'http://127.0.0.1:9/replay', events: ['*'] };

// Replaying a registration's Idempotency-Key never returns a secret that no longer signs (after a rotation
// with grace 0, and after DELETE).
forEachDatabase('replaying a registration', ({ storage }) => {
  let server: TestServer;
  let key: string;
  beforeAll(async () => {
    ({ key } = await testFeatures(storage()).keys.create(`replay-${randomBytes(4).toString('hex')}`));
    server = await startTestServer({ storage: storage(), secretBox: new SecretBox(randomBytes(32)) });
  });
  afterAll(() => server.close());

  const registerWith = (idempotencyKey: string) =>
    server.request('/v1/webhooks/register', {
      key,
      body: BODY,
      headers: { 'idempotency-key': idempotencyKey },
    });
  const rotate = (id: string, grace: number) =>
    server.request(`/v1/webhooks/${id}/rotate-secret`, { key, body: { grace_period_seconds: grace } });

  it('replays the first response while its secret still signs (a rotation grace period included)', async () => {
    const idem = randomUUID();
    const first = (await (await registerWith(idem)).json()) as RegisteredWebhook;
    const again = await registerWith(idem);
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(((await again.json()) as RegisteredWebhook).secret).toBe(first.secret);
    expect((await rotate(first.id, 3600)).status).toBe(200);
    expect(((await (await registerWith(idem)).json()) as RegisteredWebhook).secret).toBe(first.secret);
  });

  it('answers 409 idempotent_replay_unavailable once the secret was rotated out', async () => {
    const idem = randomUUID();
    const first = (await (await registerWith(idem)).json()) as RegisteredWebhook;
    expect((await rotate(first.id, 0)).status).toBe(200);
    const again = await registerWith(idem);
    const text = await again.text();
    expect(again.status, text).toBe(409);
    expect(text).not.toContain(first.secret);
    expect(JSON.parse(text) as Problem).toMatchObject({ code: 'idempotent_replay_unavailable' });
    expect(again.headers.get('location')).toBe(`/v1/webhooks/${first.id}`);
  });

  it('answers 404 once the webhook was deleted, as a read does', async () => {
    const idem = randomUUID();
    const first = (await (await registerWith(idem)).json()) as RegisteredWebhook;
    expect((await server.request(`/v1/webhooks/${first.id}`, { key, method: 'DELETE' })).status).toBe(204);
    const again = await registerWith(idem);
    const text = await again.text();
    expect(again.status, text).toBe(404);
    expect(text).not.toContain(first.secret);
  });
});
