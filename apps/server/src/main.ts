import module from 'node:module';
import { fileURLToPath } from 'node:url';
import { exitUnlessNodeIsSupported } from './config/node-version.js';

// The server's entry point (`npm start`, the Docker image): it checks the Node version first, then turns on
// Node's compile cache, then imports the server. Whatever it imports statically is loaded before either.
exitUnlessNodeIsSupported();

// V8's code cache of the server's modules, kept beside the build in dist/.compile-cache/ (this module sits at
// the root of dist/): the build writes it (scripts/bundle-server.ts), so even the first start of a fresh
// image or data directory skips most of the parsing of the bundle. Portable: it holds paths relative to
// itself, so it stays valid where dist/ is copied (the production assembly, the image). Where dist/ is not
// writable nothing else changes; NODE_COMPILE_CACHE picks another directory, NODE_DISABLE_COMPILE_CACHE=1
// turns it off (Node's own variables).
module.enableCompileCache?.({
  directory: fileURLToPath(new URL('.compile-cache/', import.meta.url)),
  portable: true,
});

// A SIGTERM or SIGINT that comes while the server's modules load (a tenth of a second or more) is kept and
// handed to start(), which drains once started, instead of Node's default action killing the process.
// These listeners stay for the life of the process and pass every signal on to start()'s handler: one
// removed and replaced could drop a signal caught while the import held the event loop.
const early: NodeJS.Signals[] = [];
let deliver: ((signal: NodeJS.Signals) => void) | undefined;
const onSignal = (signal: NodeJS.Signals) => (deliver ? deliver(signal) : early.push(signal));
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, onSignal);

// Imported only now: the server loads node:sqlite, which an older Node cannot even link.
const { start } = await import('./start.js');
await start((handler) => {
  deliver = handler;
  for (const signal of early.splice(0)) handler(signal);
});
