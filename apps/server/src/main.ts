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

// Imported only now: the server loads node:sqlite, which an older Node cannot even link.
const { start } = await import('./start.js');
await start();
