# syntax=docker/dockerfile:1

# The refhub image: one program, `refhub`, whose command picks the role (`all`, `api`, `worker`,
# `migrate`, `reconcile`, `catalog load`, `keys …`, `sandbox-ehr`). Node 24 runs the TypeScript sources
# directly (type stripping), so building means installing the production dependencies from the lockfile,
# in a stage of its own so that npm's cache and the lockfile's dev tree never reach the image, and filling
# Node's compile cache (below).
#
# The base image is pinned by digest (Node 24.18.0 on Debian bookworm), so that every build starts from
# the image that was tested; docs/operations.md ("Updating the base images") says how to move the pin.
# Both stages use the same one: dependencies installed on one image and run on another could carry
# native code built for another Node or libc.

FROM node:24-bookworm-slim@sha256:6f7b03f7c2c8e2e784dcf9295400527b9b1270fd37b7e9a7285cf83b6951452d AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# --omit=dev: nothing at run time imports a devDependency. The `node` devDependency (which pins Node 24
# for npm scripts) would download a second Node binary; the base image's Node 24 runs refhub instead.
# --omit=optional: nothing refhub runs needs an optional package, and omitting them keeps out the
# TypeScript compiler (24 MB), which an optional peer dependency of a production package would otherwise
# bring in, and msgpackr-extract, whose native code msgpackr does without (it falls back to plain
# JavaScript). --ignore-scripts: no production package needs its install script.
RUN --mount=type=cache,target=/root/.npm \
    npm ci --omit=dev --omit=optional --ignore-scripts --no-audit --no-fund

FROM node:24-bookworm-slim@sha256:6f7b03f7c2c8e2e784dcf9295400527b9b1270fd37b7e9a7285cf83b6951452d AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    DATA_DIR=/data
# The memory limits `npm start` runs with (package.json; docs/performance.md, "Memory"): V8's heap is
# capped, so that it collects instead of growing with the machine's memory, and glibc keeps two malloc
# arenas instead of one per thread. A process then stays within about 340 MiB on PostgreSQL (460 MiB
# with PGlite); a container limited to less needs a smaller heap: set NODE_OPTIONS in its environment.
ENV NODE_OPTIONS="--max-old-space-size=160 --max-semi-space-size=16" \
    MALLOC_ARENA_MAX=2
WORKDIR /app
# qpdf reads every PDF attachment whole before it is kept (docs/attachments.md, "PDFs"): production
# refuses to start without it while ATTACHMENT_TYPES lists pdf. Debian's package, from the archive of
# the base image's release, without the packages it only recommends; the package lists are not kept.
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends qpdf \
    && rm -rf /var/lib/apt/lists/*
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
# Node's compile cache (bin/refhub.js), filled while the image is built: every source is stripped of its
# types and compiled here once (main.ts by `--version`, the rest, which the roles load as they start, by
# importing it), so a container never loads the type stripper, which would stay resident (about
# 17 MiB), and starts faster. The cache stays root's: the service reads it and cannot change it.
ENV NODE_COMPILE_CACHE=/app/.compile-cache
RUN refhub --version > /dev/null \
    && node --input-type=module -e "import fs from 'node:fs'; \
        for (const f of fs.readdirSync('src', { recursive: true })) \
          if (f.endsWith('.ts') && f !== 'main.ts') await import('/app/src/' + f);"

# The official image's `node` user (uid 1000). /data holds embedded PGlite and its lock for `refhub all`,
# and the demo key file outside production.
USER node
VOLUME ["/data"]
EXPOSE 3000
# refhub finishes requests and active jobs on SIGTERM, then closes the store and releases the lock.
STOPSIGNAL SIGTERM
# Liveness only (/healthz touches no dependency); readiness (/readyz) is for load balancers. Slim images
# have no curl, so Node's fetch does the request. Every long-running role serves /healthz on PORT,
# `refhub worker` included (its health checks and metrics), so the check applies to workers too; a
# one-shot such as `migrate` serves none, and compose turns the check off for it.
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
    CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
ENTRYPOINT ["refhub"]
CMD ["all"]
