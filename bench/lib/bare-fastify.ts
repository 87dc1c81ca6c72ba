/**
 * Fastify 5 answering `BARE_BODY` after validating the body against a JSON schema of the score request
 * (compiled by Fastify's Ajv): what a validated endpoint costs in the fastest mainstream framework.
 */
import Fastify from 'fastify';

const body = process.env.BARE_BODY ?? '{}';
const unit = { type: 'number', minimum: 0, maximum: 1 };
const ratio = { type: 'number', minimum: 0, maximum: 10 };
const count = (maximum: number) => ({ type: 'integer', minimum: 0, maximum });
/** The score request's shape, as the contract declares it (subject and context). */
const scoreRequest = {
  type: 'object',
  additionalProperties: false,
  required: ['subject', 'context'],
  properties: {
    subject: { type: 'string', minLength: 1, maxLength: 256, pattern: '^[^\\u0000-\\u001F\\u007F]+$' },
    context: {
      type: 'object',
      additionalProperties: false,
      required: ['jurisdiction'],
      properties: {
        jurisdiction: { type: 'string', pattern: '^[A-Z]{2}(-[A-Z0-9]{1,3})?$' },
        on_time_ratio: unit,
        utilization: ratio,
        history_months: count(1200),
        debt_to_income: ratio,
        inquiries_12m: count(100),
      },
    },
  },
};

const app = Fastify({ logger: false, keepAliveTimeout: 65_000 });
app.post('/v1/scoring/score', { schema: { body: scoreRequest } }, (_request, reply) => {
  reply.type('application/json').send(body);
});
app.get('/readyz', (_request, reply) => {
  reply.send('ok');
});
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
process.on('SIGTERM', () => app.close().then(() => process.exit(0)));
