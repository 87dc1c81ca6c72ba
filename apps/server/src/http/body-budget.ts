import type { Socket } from 'node:net';
import type { RequestHandler } from 'express';
import { AppError } from '../errors/app-error.js';
import { isIdentityEncoded } from '../transport/content-encoding.js';
import { declaredLength } from '../transport/unread-body.js';

/** Bodies of the body limit an instance holds at most while they arrive: 128 (128 MiB at 1 MiB). */
export const INSTANCE_BODIES = 128;
/** Bodies of the body limit one tenant holds at most while they arrive: 16 (16 MiB at 1 MiB). */
export const TENANT_BODIES = 16;

/**
 * The bytes of JSON request bodies an instance holds while they arrive, in all and per tenant. The JSON
 * parser keeps a body in memory until its last byte: without a bound, a client with a valid key that opened
 * a thousand connections and sent all but the end of a 1 MiB body on each held 1.3 GiB, outside V8's heap
 * (so outside its `--max-old-space-size`), for as long as each body's deadline.
 */
export class BodyBudget {
  readonly #instanceBytes: number;
  readonly #tenantBytes: number;
  #held = 0;
  readonly #byTenant = new Map<string, number>();

  constructor(instanceBytes: number, tenantBytes: number) {
    this.#instanceBytes = instanceBytes;
    this.#tenantBytes = tenantBytes;
  }

  /** Takes `bytes` for `tenant` if both its share and the instance's budget hold them; false if not. */
  reserve(tenant: string, bytes: number): boolean {
    const tenantHeld = this.#byTenant.get(tenant) ?? 0;
    if (this.#held + bytes > this.#instanceBytes || tenantHeld + bytes > this.#tenantBytes) return false;
    this.#held += bytes;
    this.#byTenant.set(tenant, tenantHeld + bytes);
    return true;
  }

  /** Gives back what `reserve` took. */
  release(tenant: string, bytes: number): void {
    this.#held -= bytes;
    const left = (this.#byTenant.get(tenant) ?? 0) - bytes;
    if (left > 0) this.#byTenant.set(tenant, left);
    else this.#byTenant.delete(tenant);
  }

  /** Bytes held now, in all. */
  get held(): number {
    return this.#held;
  }
}

/**
 * Before the JSON parser reads a body: reserves its declared length (the body limit when it is chunked, its
 * length unknown, or compressed, since the parser holds it decompressed: a 1,069-byte gzip is 1 MiB of JSON)
 * for the request's tenant (`res.locals.apiKey`; outside `/v1` one shared share), until the body has been
 * read, the answer is done or the connection closes, whichever comes first (a request reset before this ran
 * releases at once). A body past the tenant's share or the instance's budget is
 * answered 429 `rate_limited` with `Retry-After: 1`, unread (transport/unread-body.ts bounds what is read
 * off). Small bodies, the usual case, take a few hundred bytes each: only many large bodies at once meet it.
 */
export function boundBodiesInFlight(budget: BodyBudget, bodyLimitBytes: number): RequestHandler {
  return (req, res, next) => {
    const declared = declaredLength(req);
    const chunked = req.headers['transfer-encoding'] !== undefined;
    if (!chunked && (declared === undefined || declared === 0)) return next();
    // A declared length over the limit is the parser's 413; it reads none of it into memory.
    const bytes =
      chunked || !isIdentityEncoded(req.headers)
        ? bodyLimitBytes
        : Math.min(declared as number, bodyLimitBytes);
    const tenant = (res.locals.apiKey as { tenantId?: string } | undefined)?.tenantId ?? '';
    if (!budget.reserve(tenant, bytes)) {
      throw new AppError('rate_limited', {
        detail:
          'Too many request bodies are arriving at once for this tenant (or this server): retry once ' +
          'some have been answered.',
        headers: { 'Retry-After': '1' },
      });
    }
    let released = false;
    const socket = req.socket;
    const release = () => {
      if (released) return;
      released = true;
      budget.release(tenant, bytes);
      onSocketClose.get(socket)?.delete(release);
    };
    // Whichever ends first: the answer, the request, or the connection (already gone: at once).
    if (res.closed || req.destroyed || socket.destroyed) {
      release();
    } else {
      res.once('close', release);
      req.once('close', release);
      whenSocketCloses(socket, release);
    }
    next();
  };
}

/**
 * The reservations to release when a socket closes: one `close` listener per socket, whatever the number
 * of requests pipelined on it (a listener each went past Node's 10 and warned of a leak).
 */
const onSocketClose = new WeakMap<Socket, Set<() => void>>();

function whenSocketCloses(socket: Socket, release: () => void): void {
  let pending = onSocketClose.get(socket);
  if (pending === undefined) {
    const releases = new Set<() => void>();
    pending = releases;
    onSocketClose.set(socket, releases);
    socket.once('close', () => {
      onSocketClose.delete(socket);
      for (const each of releases) each();
    });
  }
  pending.add(release);
}
