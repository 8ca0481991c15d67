# syntax=docker/dockerfile:1
# plant-store's container image. Two stages: `build` installs every dependency (a compiler for
# better-sqlite3 when no prebuilt binary can be fetched), compiles the TypeScript and drops the
# development dependencies; the final stage gets only the result, runs as a non-root user and
# works with a read-only root filesystem (the database lives on the /data volume).
#
# Behind a TLS-intercepting proxy, give the build the proxy's CA bundle as a secret (mounted during
# the RUN steps that download, never copied into a layer):
#   docker build --secret id=ca-bundle,src=/etc/ssl/certs/ca-certificates.crt -t plant-store .

# Any image with Node.js (>= 20) and npm under a Debian userland (apt-get, useradd).
ARG BASE_IMAGE=docker.io/library/node:24-bookworm-slim

FROM ${BASE_IMAGE} AS build
WORKDIR /app
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
# node-gyp compiles against the headers that come with Node.js when the image has them, instead of
# downloading them from nodejs.org.
RUN --mount=type=secret,id=ca-bundle \
    if [ -s /run/secrets/ca-bundle ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/ca-bundle; fi \
 && for prefix in /usr/local /usr; do \
      if [ -f "$prefix/include/node/node_version.h" ]; then export npm_config_nodedir="$prefix"; break; fi; \
    done \
 && npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY plugins ./plugins
COPY scripts/bin-mode.mjs scripts/build-info.mjs ./scripts/
# Which release and commit this is (the build context has no .git): --version, the metrics and the
# labels below report them. .ci/container-test passes both:
#   --build-arg PLANT_STORE_VERSION="$(node -p "require('./package.json').version")"
#   --build-arg PLANT_STORE_COMMIT="$(git rev-parse HEAD)"
ARG PLANT_STORE_VERSION=
ARG PLANT_STORE_COMMIT=
# A version label that is not the package's would lie about what the image holds.
RUN package="$(node -p "require('./package.json').version")" \
 && if [ -n "$PLANT_STORE_VERSION" ] && [ "$PLANT_STORE_VERSION" != "$package" ]; then \
      echo "PLANT_STORE_VERSION=$PLANT_STORE_VERSION, but package.json says $package" >&2; exit 1; \
    fi
RUN npm run build \
 && npm prune --omit=dev --no-audit --no-fund \
 && rm -rf dist/.tsbuildinfo

FROM ${BASE_IMAGE}
# Numeric ids, so that an orchestrator can verify runAsNonRoot without reading /etc/passwd.
RUN groupadd --system --gid 10001 plant-store \
 && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin plant-store \
 && mkdir /data \
 && chown 10001:10001 /data
WORKDIR /app
# Owned by root: the service can read its code, never change it.
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
ENV NODE_ENV=production \
    MALLOC_ARENA_MAX=1 \
    HOST=0.0.0.0 \
    PORT=3000 \
    DATABASE_URL=/data/plants.db
VOLUME /data
EXPOSE 3000
ARG PLANT_STORE_VERSION=
ARG PLANT_STORE_COMMIT=
LABEL org.opencontainers.image.title="plant-store" \
      org.opencontainers.image.licenses="MIT" \
      org.opencontainers.image.version="${PLANT_STORE_VERSION}" \
      org.opencontainers.image.revision="${PLANT_STORE_COMMIT}"
USER 10001:10001
# Node's own fetch: the image has no curl.
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.PORT}/health/live`).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
STOPSIGNAL SIGTERM
# node itself is PID 1's process (no npm, no shell), so SIGTERM reaches the server and drains it.
# The same flags as npm start.
ENTRYPOINT ["node", "--max-semi-space-size=4", "--heap-growing-percent=50", "dist/src/main/server.js"]
CMD ["serve"]
