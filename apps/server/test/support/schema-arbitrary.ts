/**
 * fast-check arbitraries derived from the bundled contract's JSON Schemas: values the contract calls
 * valid (and that the text policy accepts), for any schema the request bodies use — objects, arrays,
 * strings (lengths, patterns, formats), numbers and integers (bounds), enums, consts, type unions and
 * `$ref`s. `overrides` replace a named component schema where validity depends on more than its schema
 * (a webhook URL must reach an allowed receiver; an event filter must name known types).
 */
import fc from 'fast-check';

export type Schema = Record<string, unknown>;
export type Bundle = { components: { schemas: Record<string, Schema> } } & Record<string, unknown>;

/** One Unicode scalar value per unit, never NUL, a control character or a lone surrogate: U+FFFF, RTL marks and astral characters included. */
export const textChar: fc.Arbitrary<string> = fc
  .oneof(
    { weight: 6, arbitrary: fc.integer({ min: 0x20, max: 0x7e }) },
    { weight: 2, arbitrary: fc.integer({ min: 0xa0, max: 0xd7ff }) },
    { weight: 1, arbitrary: fc.integer({ min: 0xe000, max: 0xffff }) },
    { weight: 1, arbitrary: fc.integer({ min: 0x10000, max: 0x10ffff }) },
    { weight: 1, arbitrary: fc.constantFrom(0x200f, 0x202e, 0x200e, 0xfeff, 0xffff, 0x0301) },
  )
  .map((codePoint) => String.fromCodePoint(codePoint));

const codePoints = (text: string) => [...text].length;
// biome-ignore lint/suspicious/noControlCharactersInRegex: the text policy refuses exactly these.
const POLICY_BREAKING = /\u0000|[\ud800-\udfff]/u;

function stringArbitrary(schema: Schema): fc.Arbitrary<string> {
  const min = (schema.minLength as number | undefined) ?? 0;
  const max = Math.min((schema.maxLength as number | undefined) ?? 64, 64);
  if (schema.format === 'uri') return fc.webUrl();
  if (schema.format === 'date-time') return fc.date({ noInvalidDate: true }).map((d) => d.toISOString());
  if (typeof schema.pattern === 'string') {
    return fc
      .stringMatching(new RegExp(schema.pattern))
      .filter(
        (text) =>
          codePoints(text) >= min &&
          codePoints(text) <= ((schema.maxLength as number) ?? 10_000) &&
          !POLICY_BREAKING.test(text),
      );
  }
  return fc.string({ unit: textChar, minLength: min, maxLength: Math.max(min, max) });
}

function numberArbitrary(schema: Schema, integer: boolean): fc.Arbitrary<number> {
  const min = schema.minimum as number | undefined;
  const max = schema.maximum as number | undefined;
  if (integer) return fc.integer({ min: min ?? -1_000_000, max: max ?? 1_000_000 });
  return fc.double({ min: min ?? -1e9, max: max ?? 1e9, noNaN: true, noDefaultInfinity: true });
}

/** The arbitrary of valid values of `schema`. */
export function arbitraryOf(
  schema: Schema,
  bundle: Bundle,
  overrides: Record<string, fc.Arbitrary<unknown>> = {},
): fc.Arbitrary<unknown> {
  const ref = schema.$ref;
  if (typeof ref === 'string') {
    const name = ref.split('/').pop() as string;
    return overrides[name] ?? arbitraryOf(bundle.components.schemas[name] as Schema, bundle, overrides);
  }
  if ('const' in schema) return fc.constant(schema.const);
  if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as unknown[]));
  for (const key of ['oneOf', 'anyOf'] as const) {
    if (Array.isArray(schema[key]))
      return fc.oneof(...(schema[key] as Schema[]).map((s) => arbitraryOf(s, bundle, overrides)));
  }
  const type = schema.type;
  if (Array.isArray(type))
    return fc.oneof(...type.map((t) => arbitraryOf({ ...schema, type: t }, bundle, overrides)));
  switch (type) {
    case 'null':
      return fc.constant(null);
    case 'boolean':
      return fc.boolean();
    case 'string':
      return stringArbitrary(schema);
    case 'integer':
      return numberArbitrary(schema, true);
    case 'number':
      return numberArbitrary(schema, false);
    case 'array': {
      const items = arbitraryOf((schema.items as Schema) ?? {}, bundle, overrides);
      const minLength = (schema.minItems as number | undefined) ?? 0;
      const maxLength = Math.min((schema.maxItems as number | undefined) ?? 5, Math.max(minLength, 5));
      return schema.uniqueItems
        ? fc.uniqueArray(items, { minLength, maxLength, selector: (v) => JSON.stringify(v) })
        : fc.array(items, { minLength, maxLength });
    }
    case 'object': {
      const properties = (schema.properties as Record<string, Schema> | undefined) ?? {};
      const required = (schema.required as string[] | undefined) ?? [];
      const record = fc.record(
        Object.fromEntries(
          Object.entries(properties).map(([k, s]) => [k, arbitraryOf(s, bundle, overrides)]),
        ),
        { requiredKeys: required },
      );
      const minProperties = (schema.minProperties as number | undefined) ?? 0;
      return record.filter((value) => Object.keys(value).length >= minProperties);
    }
    default:
      return fc.anything();
  }
}
