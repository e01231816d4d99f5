# syntax=docker/dockerfile:1

# The refhub image: one program, `refhub`, whose command picks the role (`all`, `api`, `worker`,
# `migrate`, `reconcile`, `catalog load`, `keys …`, `sandbox-ehr`). Node 24 runs the TypeScript sources
# directly (type stripping), so building means installing the production dependencies from the lockfile.
# That happens in its own stage, so that npm's cache and the lockfile's dev tree never reach the image.

FROM node:24-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# --omit=dev: nothing at run time imports a devDependency. The `node` devDependency (which pins Node 24
# for npm scripts) would download a second Node binary; the base image's Node 24 runs refhub instead.
# --ignore-scripts: the only production package with an install script is msgpackr-extract, which
# package.json's allowScripts refuses too; its prebuilt binary is an optional package that loads
# without the script, and msgpackr falls back to plain JavaScript without it.
RUN --mount=type=cache,target=/root/.npm \
    npm ci --omit=dev --ignore-scripts --no-audit --no-fund

FROM node:24-bookworm-slim AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    DATA_DIR=/data
WORKDIR /app
# Everything under /app stays owned by root, so the service cannot rewrite its own code. npm, npx and
# corepack are removed: nothing runs them in the container, and they only add files to patch.
RUN rm -rf /usr/local/lib/node_modules/npm /usr/local/lib/node_modules/corepack \
        /usr/local/bin/npm /usr/local/bin/npx /usr/local/bin/corepack \
    && mkdir -p /data \
    && chown node:node /data \
    && chmod 700 /data
COPY --from=deps /app/node_modules ./node_modules
# package.json is read at run time: "type": "module" makes bin/refhub.js an ES module, and `--version`
# prints its version.
COPY package.json ./
COPY catalog ./catalog
COPY bin ./bin
COPY src ./src
# `refhub` on PATH, for the exec-form entrypoint. Node resolves the symlink, so bin/refhub.js still
# finds ../src/main.ts. chmod: a checkout without file modes (core.fileMode=false) loses the x bit.
RUN chmod 755 /app/bin/refhub.js \
    && ln -s /app/bin/refhub.js /usr/local/bin/refhub

# The official image's `node` user (uid 1000). /data holds embedded PGlite and its lock for `refhub all`,
# and the demo key file outside production.
USER node
VOLUME ["/data"]
EXPOSE 3000
# refhub finishes requests and active jobs on SIGTERM, then closes the store and releases the lock.
STOPSIGNAL SIGTERM
# Liveness only (/healthz touches no dependency); readiness (/readyz) is for load balancers. Slim images
# have no curl, so Node's fetch does the request. `refhub worker` serves no HTTP: compose turns this off
# for workers.
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
    CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
ENTRYPOINT ["refhub"]
CMD ["all"]
