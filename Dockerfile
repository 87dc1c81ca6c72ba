# syntax=docker/dockerfile:1
# scenario-scoring server: build everything in one stage, ship only the server's production output.
#   docker build -t scenario-scoring .
#   docker run --stop-timeout 30 -p 3000:3000 -v scoring-data:/data scenario-scoring
#   (--stop-timeout: more than the drain docs/operating.md asks for, 15 s with the defaults; Docker's own 10 s
#   would SIGKILL an instance still draining)
# See docs/operating.md; compose.yaml runs it on PostgreSQL.

FROM node:24-slim AS build
WORKDIR /src
# The manifests first, then the install: this layer is rebuilt only when a package.json or the lockfile
# changes, not on every source change. Every workspace is listed (scripts/lint-dockerfile.sh checks it).
COPY package.json package-lock.json .npmrc ./
COPY openapi/package.json openapi/
COPY packages/api-types/package.json packages/api-types/
COPY packages/client/package.json packages/client/
COPY packages/engine/package.json packages/engine/
COPY packages/testkit/package.json packages/testkit/
COPY packages/tlog/package.json packages/tlog/
COPY apps/server/package.json apps/server/
COPY apps/witness/package.json apps/witness/
COPY test/contract/package.json test/contract/
COPY bench/package.json bench/
# The install's postinstall applies the reviewed dependency patches (patch-package).
COPY patches/ patches/
# npm install, not npm ci: the registry has no macOS/Windows builds of turbo and biome, which npm ci
# insists on (see scripts/setup.sh). The lockfile still pins every version.
RUN npm install --no-audit --no-fund --loglevel=error
COPY . .
RUN npx turbo run build --filter=@scenario-scoring/server --output-logs=errors-only \
 && bash scripts/assemble-production.sh /app

FROM node:24-slim
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    DATA_DIR=/data
WORKDIR /app
# Owned by root and read-only to the server; only /data (the SQLite default) is writable.
COPY --from=build /app /app
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 3000
# The slim image has no curl: Node's own fetch asks /readyz (503 while starting or draining).
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + process.env.PORT + '/readyz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# Node is PID 1 and handles SIGTERM itself (drains, then exits 0): no shell in between.
STOPSIGNAL SIGTERM
CMD ["node", "apps/server/dist/main.js"]
