/**
 * The server needs Node 24 (node:sqlite without a flag, and the Node APIs it is tested on). An older Node
 * would die later with `ERR_UNKNOWN_BUILTIN_MODULE: node:sqlite`, which does not say what to do; so the
 * entry points check the version first, before they import anything that loads node:sqlite.
 */
export const REQUIRED_NODE_MAJOR = 24;

/** The message for an unsupported Node, or undefined when `version` (like `v24.1.0`) is new enough. */
export function nodeVersionProblem(version: string): string | undefined {
  const major = Number(/^v?(\d+)\./.exec(version)?.[1] ?? 0);
  if (major >= REQUIRED_NODE_MAJOR) return undefined;
  return (
    `scenario-scoring needs Node ${REQUIRED_NODE_MAJOR} or newer; this is Node ${version}.\n` +
    `Install Node ${REQUIRED_NODE_MAJOR} (https://nodejs.org), or from a clone run \`source scripts/node24.sh\` ` +
    `(it installs Node ${REQUIRED_NODE_MAJOR} into .tools/ from the npm registry) or \`bash scripts/start.sh\`.`
  );
}

/** Exits 1 with a plain explanation when this Node is too old. */
export function exitUnlessNodeIsSupported(): void {
  const problem = nodeVersionProblem(process.version);
  if (problem === undefined) return;
  console.error(problem);
  process.exit(1);
}
