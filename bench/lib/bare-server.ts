/**
 * A bare node:http endpoint that reads the request body and answers `BARE_BODY` with no framework: the
 * baseline of bench/score (the score JSON) and the webhook receiver of bench/webhooks.
 */
import { createServer } from 'node:http';

const body = process.env.BARE_BODY ?? '{}';
const server = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
});
server.keepAliveTimeout = 65_000;
server.listen(Number(process.env.PORT), '127.0.0.1');
process.on('SIGTERM', () => server.close(() => process.exit(0)));
