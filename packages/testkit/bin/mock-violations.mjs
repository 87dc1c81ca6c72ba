/**
 * Turns Prism's account of an invalid request (its `sl-violations` header) into the problem the server
 * answers: 400 `validation_failed` with `errors: [{path, message}]` in the server's path form
 * (`/body/context/utilisation`, `/query/limit`, `/headers/idempotency-key`, `/path/id`). Prism itself
 * answers an invalid request with the operation's 422 or first 400 example, whatever the request got
 * wrong, and says the true reason only in that header.
 */

const LISTED_IN_DETAIL = 3;
const LOCATION_PREFIX = { body: '/body', query: '/query', header: '/headers', path: '/path' };

/** The violations of the request itself (not of the response, not warnings), or [] if none. */
export function requestViolations(header) {
  if (!header) return [];
  let parsed;
  try {
    parsed = JSON.parse(header);
  } catch {
    return [];
  }
  if (!Array.isArray(parsed)) return [];
  return parsed.filter(
    (v) => v?.severity === 'Error' && Array.isArray(v.location) && v.location[0] === 'request',
  );
}

/** One violation as the server's `{path, message}`. */
export function toValidationError(violation) {
  const [, where, ...rest] = violation.location.map(String);
  // A missing body is a violation of the request as a whole (`Body parameter is required`).
  if (where === undefined && /body/i.test(String(violation.message))) {
    return { path: '/body', message: 'a JSON body is required' };
  }
  const prefix = where === undefined ? '/path' : (LOCATION_PREFIX[where] ?? `/${where}`);
  const segments = where === 'header' ? rest.map((s) => s.toLowerCase()) : rest;
  let message = String(violation.message ?? 'is invalid');
  // Prism points an unknown property at its parent and names it in the message; the server points at it.
  const extra = /must NOT have additional properties; found '([^']+)'/.exec(message);
  const missing = /must have required property '([^']+)'/.exec(message);
  if (violation.code === 'additionalProperties' && extra) {
    segments.push(extra[1]);
    message = 'must NOT have additional properties';
  } else if (violation.code === 'required' && missing) {
    segments.push(missing[1]);
    message = `must have required property '${missing[1]}'`;
  } else {
    // Prism's messages start with "Request body property a.b must …": keep the part after the field.
    message = message
      .replace(/^Request (body|query|header|path)( parameter| property)? \S+ /i, '')
      .replace(/^Request body /i, '');
  }
  return { path: [prefix, ...segments].join('/'), message };
}

/** The server's `validation_failed` problem for these violations. */
export function validationProblem(violations, { instance, requestId }) {
  const errors = violations.map(toValidationError);
  const listed = errors
    .slice(0, LISTED_IN_DETAIL)
    .map((e) => `${e.path} ${e.message}`)
    .join('; ');
  const more = errors.length > LISTED_IN_DETAIL ? `; and ${errors.length - LISTED_IN_DETAIL} more` : '';
  return {
    type: '/docs#section/errors/validation_failed',
    title: 'Request validation failed',
    status: 400,
    detail: `The request has ${errors.length} invalid field${errors.length === 1 ? '' : 's'}: ${listed}${more}.`,
    instance,
    code: 'validation_failed',
    request_id: requestId,
    errors,
  };
}
