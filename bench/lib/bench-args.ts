import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type ParseArgsConfig, parseArgs } from 'node:util';

/** A bench's usage: the first doc comment of its file (what it measures, its flags), as plain text. */
export function usageOf(moduleUrl: string): string {
  const source = readFileSync(fileURLToPath(moduleUrl), 'utf8');
  const comment = /\/\*\*([\s\S]*?)\*\//.exec(source)?.[1] ?? '';
  const text = comment
    .split('\n')
    .map((line) => line.replace(/^\s*\* ?/, ''))
    .join('\n')
    .trim();
  return `${text || `node ${fileURLToPath(moduleUrl)} [options]`}\n`;
}

/**
 * `parseArgs` for a bench's command line, with `--help` (`-h`): prints the bench's usage (`usageOf`) and
 * exits 0; an unknown or malformed flag prints what was wrong and the usage, and exits 2 (not a stack trace).
 */
export function benchArgs<T extends ParseArgsConfig>(
  moduleUrl: string,
  config: T,
): ReturnType<typeof parseArgs<T>> {
  const options = { ...config.options, help: { type: 'boolean', short: 'h' } } as const;
  let parsed: ReturnType<typeof parseArgs<T>>;
  try {
    parsed = parseArgs({ ...config, options }) as ReturnType<typeof parseArgs<T>>;
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (typeof code !== 'string' || !code.startsWith('ERR_PARSE_ARGS')) throw error;
    process.stderr.write(`${(error as Error).message}\n\n${usageOf(moduleUrl)}`);
    process.exit(2);
  }
  if ((parsed.values as { help?: boolean }).help === true) {
    process.stdout.write(usageOf(moduleUrl));
    process.exit(0);
  }
  delete (parsed.values as { help?: boolean }).help;
  return parsed;
}
