import type { Server } from 'node:http';

/** How often connections that went idle during a shutdown are closed. */
const IDLE_SWEEP_MS = 50;

/**
 * Closes an HTTP server gracefully: stops accepting at once, closes idle keep-alive connections (and
 * each one that goes idle after answering), lets requests in flight finish for up to `graceMs`, then
 * cuts what is left. Resolves when every connection is gone; `cut` says whether the grace ran out.
 */
export async function closeGracefully(server: Server, graceMs: number): Promise<{ cut: boolean }> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  // A connection whose request was in flight when the listener closed is kept alive once it has
  // answered; close it as soon as it is idle rather than after the keep-alive timeout.
  const sweep = setInterval(() => server.closeIdleConnections(), IDLE_SWEEP_MS);
  let cut = false;
  const force = setTimeout(() => {
    cut = true;
    server.closeAllConnections();
  }, graceMs);
  try {
    await closed;
  } finally {
    clearInterval(sweep);
    clearTimeout(force);
  }
  return { cut };
}
