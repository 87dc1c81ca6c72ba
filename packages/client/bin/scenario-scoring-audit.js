#!/usr/bin/env node
// The bin is this committed file, not the compiled one: npm links a workspace's bins when it installs,
// which on a fresh clone is before the build writes dist/, and it skips a bin whose file is missing, so
// `npx scenario-scoring-audit` (README) found nothing and asked the public registry instead.
import '../dist/bin/scenario-scoring-audit.js';
