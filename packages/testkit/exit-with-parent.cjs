// Preloaded into the Prism child (`node --require`). Its stdin is a pipe from the test process, and a pipe
// closes when its writer dies, even by SIGKILL: Prism then exits instead of lingering as an orphan.
process.stdin.on('end', () => process.exit(0));
process.stdin.on('error', () => process.exit(0));
process.stdin.resume();
