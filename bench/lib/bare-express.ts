/**
 * Bare Express 5 with `express.json()` answering `BARE_BODY`: the floor the server's goal is set against
 * (the same framework and body parser, with no validation, authentication, scoring or log).
 */
import express from 'express';

const body = process.env.BARE_BODY ?? '{}';
const app = express();
app.use(express.json());
app.post('/v1/scoring/score', (_req, res) => {
  res.type('application/json').send(body);
});
app.get('/readyz', (_req, res) => {
  res.send('ok');
});
const server = app.listen(Number(process.env.PORT), '127.0.0.1');
server.keepAliveTimeout = 65_000;
process.on('SIGTERM', () => server.close(() => process.exit(0)));
