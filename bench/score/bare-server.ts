/**
 * The baseline: a bare node:http endpoint that reads the request body and answers the same score JSON the
 * real server returns, with no framework, validation, scoring or storage.
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
