// The container files, checked without a container engine (none runs where the tests run). The test
// reads the Dockerfile, .dockerignore and docker-compose.yml and checks what would break a build or a
// start, or let them drift from the code: the stages, user, entrypoint and health checks of the image;
// what enters the build context and the image; and that every refhub service of the compose topology
// sets only variables refhub reads, with values loadConfig accepts, pointing at the compose services.
// The health check commands themselves run here, against real servers.
import { spawn } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import ts from 'typescript';
import { parse as parseYaml } from 'yaml';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config.ts';
import { createSandboxEhr, EHR_PATH, type SandboxTls } from '../../../src/sandbox-ehr/sandbox-ehr.ts';
import { nonPublicAddressReason } from '../../../src/services/outbound-address.ts';
import { auditSigningKeySetting, testAuditSigningKey } from '../../support/audit-signing-key.ts';
import {
  dockerignoreExcludes,
  envPairs,
  execForm,
  flags,
  interpolate,
  interpolations,
  parseDockerfile,
  type Instruction,
  type Stage,
} from '../../support/container-files.ts';
import { makeSandboxTls } from '../../support/sandbox-tls.ts';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const read = (file: string) => fs.readFileSync(path.join(ROOT, file), 'utf8');

const pkg = JSON.parse(read('package.json')) as {
  scripts: { start: string };
  engines: { node: string };
  bin: Record<string, string>;
  dependencies: Record<string, string>;
};
const stages = parseDockerfile(read('Dockerfile'));
const runtime = stages.at(-1)!;
const dockerignore = read('.dockerignore');

/** The variables src/config.ts reads: every read goes through a helper called as `helper(env, 'NAME'…)`. */
const CONFIG_VARIABLES = new Set(
  [...read('src/config.ts').matchAll(/\(\s*env,\s*'([A-Z][A-Z0-9_]*)'/g)].map((m) => m[1]!),
);
/** The modules a source file loads when Node runs it: `import type` and `export type` are erased. */
function runtimeImports(file: string, text: string): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && node.importClause?.phaseModifier !== ts.SyntaxKind.TypeKeyword) {
      found.push((node.moduleSpecifier as ts.StringLiteral).text);
    } else if (ts.isExportDeclaration(node) && !node.isTypeOnly && node.moduleSpecifier !== undefined) {
      found.push((node.moduleSpecifier as ts.StringLiteral).text);
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] !== undefined &&
      ts.isStringLiteralLike(node.arguments[0])
    ) {
      found.push(node.arguments[0].text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** `name:tag@sha256:…` (or `name@sha256:…`): an image that cannot change under the same reference. */
const PINNED_IMAGE = /^[\w./-]+(:[\w.-]+)?@sha256:[0-9a-f]{64}$/;

/** Variables Node itself reads, which a container may set beside refhub's own. */
const NODE_VARIABLES = new Set(['NODE_EXTRA_CA_CERTS']);

/**
 * What bounds the memory refhub may use: the C library's arenas and V8's heap limits, as `npm start`
 * sets them, and the compile cache the image is built with (a start from it never loads the type
 * stripper).
 */
const MEMORY_VARIABLES = new Set(['MALLOC_ARENA_MAX', 'NODE_OPTIONS', 'NODE_COMPILE_CACHE']);

/** How package.json's start script runs refhub: its variables, and the Node options before bin/refhub.js. */
function npmStart(): { env: Record<string, string>; nodeOptions: string[] } {
  const words = pkg.scripts.start.trim().split(/\s+/);
  const node = words.indexOf('node');
  const bin = words.indexOf(pkg.bin.refhub!);
  expect(node, 'the start script runs node').toBeGreaterThanOrEqual(0);
  expect(bin, `the start script runs ${pkg.bin.refhub!}`).toBeGreaterThan(node);
  const env = Object.fromEntries(
    words.slice(0, node).flatMap((word) => {
      const match = /^([A-Z_][A-Z0-9_]*)=(\S*)$/.exec(word);
      return match === null ? [] : [[match[1]!, match[2]!]];
    }),
  );
  return { env, nodeOptions: words.slice(node + 1, bin) };
}

/** The key that signs the audit trail's checkpoints, as the operator gives it. */
const AUDIT_KEY = await testAuditSigningKey('audit-compose');
/** Values for the variables an operator must set, as compose would take them from the environment. */
const OPERATOR_VARIABLES = {
  POSTGRES_PASSWORD: 'postgres-password',
  REDIS_PASSWORD: 'redis-password',
  SESSION_SECRET: 's'.repeat(48),
  DATA_KEYS: `kek-1:${Buffer.alloc(32, 1).toString('base64')}`,
  AUDIT_SIGNING_KEY: auditSigningKeySetting(AUDIT_KEY),
};
const SECRETS = Object.keys(OPERATOR_VARIABLES);

function only<T>(items: readonly T[], what: string): T {
  if (items.length !== 1) throw new Error(`expected ${what}, found ${items.length}`);
  return items[0]!;
}

function instructionsOf(stage: Stage, keyword: string): Instruction[] {
  return stage.instructions.filter((i) => i.keyword === keyword);
}

function lastOf(stage: Stage, keyword: string): Instruction {
  const found = instructionsOf(stage, keyword).at(-1);
  if (found === undefined) throw new Error(`the runtime stage has no ${keyword}`);
  return found;
}

interface Copy {
  readonly from: string | undefined;
  readonly sources: readonly string[];
  readonly destination: string;
}

function copies(stage: Stage): Copy[] {
  return stage.instructions
    .filter((i) => i.keyword === 'COPY' || i.keyword === 'ADD')
    .map((i) => {
      expect(i.keyword, `line ${i.line}: ADD fetches and unpacks; COPY says what it does`).toBe('COPY');
      const { flags: options, rest } = flags(i.args);
      const words = execForm(rest) ?? rest.split(/\s+/);
      expect(words.length, `line ${i.line}: COPY needs a source and a destination`).toBeGreaterThan(1);
      return { from: options.from, sources: words.slice(0, -1), destination: words.at(-1)! };
    });
}

function runtimeEnv(): Record<string, string> {
  return Object.assign({}, ...instructionsOf(runtime, 'ENV').map((i) => envPairs(i.args))) as Record<
    string,
    string
  >;
}

function healthcheckScript(): string {
  const { rest } = flags(lastOf(runtime, 'HEALTHCHECK').args);
  expect(rest.startsWith('CMD ')).toBe(true);
  const command = execForm(rest.slice('CMD '.length));
  expect(command?.slice(0, 2), 'exec form, run by Node').toEqual(['node', '-e']);
  return command![2]!;
}

/** The volume the one-shot writes the sandbox's TLS material to, and where services mount it. */
const TLS_VOLUME = 'sandbox-tls';
const TLS_MOUNT = '/tls';

/** Runs a health check script as Docker would, and returns its exit code. */
function runCheck(script: string, env: Record<string, string>): Promise<number | null> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', script], { env: { PATH: process.env.PATH, ...env } });
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    child.on('error', reject);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });
}

async function withServer<T>(handler: http.RequestListener, work: (port: number) => Promise<T>): Promise<T> {
  const server = http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    return await work((server.address() as AddressInfo).port);
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
}

describe('Dockerfile', () => {
  it('builds in stages on the slim image of the Node major that package.json requires', () => {
    const engines = /^>=(\d+) <(\d+)$/.exec(pkg.engines.node);
    expect(engines, 'engines.node is ">=N <N+1"').not.toBeNull();
    const major = Number(engines![1]);
    expect(Number(engines![2])).toBe(major + 1);
    expect(stages.length).toBeGreaterThanOrEqual(2);
    expect([`node:${major}-bookworm-slim`, `node:${major}-slim`]).toContain(runtime.image.split('@')[0]);
    // Dependencies installed on one image and run on another could carry native code built for the wrong
    // Node or libc.
    for (const stage of stages) expect(stage.image).toBe(runtime.image);
  });

  it('pins its base image by digest, as docs/operations.md says how to update', () => {
    for (const stage of stages) expect(stage.image).toMatch(PINNED_IMAGE);
    expect(read('docs/operations.md')).toContain('## Updating the base images');
  });

  it('installs production dependencies from the lockfile in a build stage, never in the runtime', () => {
    const fromStages = copies(runtime).filter((c) => c.from !== undefined);
    const modules = only(
      fromStages.filter((c) => c.sources.some((s) => s.endsWith('node_modules'))),
      'one COPY of node_modules from a build stage',
    );
    const build = stages.find((s) => s.name === modules.from);
    expect(build, `stage ${modules.from}`).toBeDefined();
    expect(build).not.toBe(runtime);
    expect(copies(build!).flatMap((c) => c.sources)).toContain('package-lock.json');
    const runs = instructionsOf(build!, 'RUN').map((i) => i.args);
    const install = only(
      runs.filter((r) => /\bnpm ci\b/.test(r)),
      'one npm ci',
    );
    const pruned = runs.some((r) => /\bnpm prune\b.*--omit=dev/.test(r));
    expect(install.includes('--omit=dev') || pruned, 'dev dependencies left out').toBe(true);
    for (const run of instructionsOf(runtime, 'RUN')) expect(run.args).not.toMatch(/\bnpm (ci|i|install)\b/);
  });

  it('ships no TypeScript compiler or other development tool, by what the lockfile says npm ci installs', () => {
    const install = instructionsOf(stages[0]!, 'RUN')
      .map((i) => i.args)
      .find((r) => /\bnpm ci\b/.test(r))!;
    const omitted = new Set([...install.matchAll(/--omit=(\w+)/g)].map((m) => m[1]!));
    const lock = JSON.parse(read('package-lock.json')) as {
      packages: Record<string, { dev?: boolean; optional?: boolean; devOptional?: boolean; link?: boolean }>;
    };
    // npm's rule: a package is left out when every reason it is in the tree is an omitted kind.
    const installed = Object.entries(lock.packages)
      .filter(([at, entry]) => at.startsWith('node_modules/') && entry.link !== true)
      .filter(([, entry]) => {
        if (entry.dev === true) return !omitted.has('dev');
        if (entry.optional === true) return !omitted.has('optional');
        if (entry.devOptional === true) return !(omitted.has('dev') && omitted.has('optional'));
        return true;
      })
      .map(([at]) => at.slice(at.lastIndexOf('node_modules/') + 'node_modules/'.length));
    expect(installed.length).toBeGreaterThan(50);
    for (const tool of [
      'typescript',
      'eslint',
      'vitest',
      'prettier',
      'dependency-cruiser',
      'playwright-core',
    ]) {
      expect(installed, tool).not.toContain(tool);
    }
    // Whatever refhub imports at run time is still there.
    for (const dependency of Object.keys(pkg.dependencies))
      expect(installed, dependency).toContain(dependency);
  });

  it('copies only existing files that the build context keeps, and no tests, tools or host modules', () => {
    for (const stage of stages) {
      for (const copy of copies(stage).filter((c) => c.from === undefined)) {
        for (const source of copy.sources) {
          expect(source, 'a plain path').toMatch(/^[\w.-]+(\/[\w.-]+)*$/);
          expect(fs.existsSync(path.join(ROOT, source)), `${source} exists`).toBe(true);
          expect(dockerignoreExcludes(dockerignore, source), `.dockerignore keeps ${source}`).toBe(false);
        }
      }
    }
    const copied = copies(runtime)
      .filter((c) => c.from === undefined)
      .flatMap((c) => c.sources);
    // What `refhub` needs at run time: the code, the package's "type" and version, the demo catalog.
    expect([...copied].sort()).toEqual(['bin', 'catalog', 'package.json', 'src']);
  });

  it('copies code that imports nothing but Node built-ins and production dependencies', () => {
    const files = ['bin', 'src'].flatMap((dir) =>
      fs
        .readdirSync(path.join(ROOT, dir), { recursive: true, encoding: 'utf8' })
        .filter((f) => /\.[jt]s$/.test(f))
        .map((f) => path.join(dir, f)),
    );
    expect(files.length).toBeGreaterThan(10);
    const packages = new Set<string>();
    for (const file of files) {
      // TypeScript's own scanner finds static imports, `import()` and re-exports, and skips strings;
      // `import type` is erased before Node runs the file, so it needs nothing at run time.
      for (const specifier of runtimeImports(file, read(file))) {
        if (specifier.startsWith('.') || specifier.startsWith('node:')) continue;
        const parts = specifier.split('/');
        packages.add(specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!);
      }
    }
    expect(packages.size).toBeGreaterThan(5);
    const missing = [...packages].filter((p) => !(p in pkg.dependencies));
    expect(missing, 'imported at run time but not a production dependency').toEqual([]);
  });

  it('installs qpdf in the runtime image, which PDF attachments are read with, and keeps no package lists', () => {
    const install = only(
      instructionsOf(runtime, 'RUN').filter((i) => /\bapt-get\b.*\binstall\b/.test(i.args)),
      'one apt-get install',
    );
    expect(install.args).toMatch(/\binstall -y --no-install-recommends qpdf\b/);
    expect(install.args).toMatch(/\bapt-get update\b/);
    expect(install.args).toMatch(/rm -rf \/var\/lib\/apt\/lists\/\*$/);
    // Installed as root, before the service's user takes over.
    expect(runtime.instructions.indexOf(install)).toBeLessThan(
      runtime.instructions.indexOf(lastOf(runtime, 'USER')),
    );
    // QPDF_PATH's default finds it on PATH (/usr/bin/qpdf).
    expect(runtimeEnv().QPDF_PATH).toBeUndefined();
  });

  it('runs as the non-root node user, with its data in a /data volume', () => {
    const entrypointAt = runtime.instructions.indexOf(lastOf(runtime, 'ENTRYPOINT'));
    const user = runtime.instructions
      .filter((i, index) => i.keyword === 'USER' && index < entrypointAt)
      .at(-1);
    expect(user, 'USER before ENTRYPOINT').toBeDefined();
    const name = user!.args.split(':')[0]!;
    expect(['root', '0']).not.toContain(name);
    expect(user).toBe(lastOf(runtime, 'USER'));
    const volumes = lastOf(runtime, 'VOLUME').args;
    expect(execForm(volumes) ?? volumes.split(/\s+/)).toContain('/data');
    // The volume starts as a copy of the image's /data, so that directory must belong to the user.
    const chown = instructionsOf(runtime, 'RUN')
      .map((i) => /\bchown\s+(\S+)\s+\/data\b/.exec(i.args)?.[1])
      .find((owner) => owner !== undefined);
    expect(chown?.split(':')[0]).toBe(name);
  });

  it('sets production defaults that fit a container', () => {
    const env = runtimeEnv();
    expect(env).toMatchObject({ NODE_ENV: 'production', HOST: '0.0.0.0', DATA_DIR: '/data' });
    for (const name of Object.keys(env)) {
      if (!MEMORY_VARIABLES.has(name)) expect(CONFIG_VARIABLES).toContain(name);
    }
    expect(lastOf(runtime, 'EXPOSE').args).toBe(env.PORT);
    expect(lastOf(runtime, 'WORKDIR').args).toBe('/app');
    expect(lastOf(runtime, 'STOPSIGNAL').args).toBe('SIGTERM');
  });

  it('runs refhub with the memory limits `npm start` sets: the heap limits and the malloc arenas', () => {
    const env = runtimeEnv();
    const start = npmStart();
    // Both limit the heap: they may not drift apart, and a later edit may not drop either.
    expect(start.nodeOptions).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^--max-old-space-size=\d+$/),
        expect.stringMatching(/^--max-semi-space-size=\d+$/),
      ]),
    );
    expect(env.NODE_OPTIONS?.split(/\s+/)).toEqual(start.nodeOptions);
    expect(start.env).toEqual({ MALLOC_ARENA_MAX: env.MALLOC_ARENA_MAX });
  });

  it('fills the compile cache with every source while building, in a directory the service only reads', () => {
    const cache = runtimeEnv().NODE_COMPILE_CACHE;
    expect(cache).toMatch(/^\/app\//);
    const at = (predicate: (i: Instruction) => boolean) => runtime.instructions.findIndex(predicate);
    const filled = at((i) => i.keyword === 'RUN' && /\brefhub --version\b/.test(i.args));
    expect(filled, 'a RUN that starts refhub').toBeGreaterThan(-1);
    const fill = runtime.instructions[filled]!.args;
    // The sources the roles import as they start are compiled too, not only what `--version` loads.
    expect(fill).toMatch(/readdirSync\('src'/);
    expect(fill).toMatch(/await import\('\/app\/src\/'/);
    expect(at((i) => i.keyword === 'ENV' && 'NODE_COMPILE_CACHE' in envPairs(i.args))).toBeLessThan(filled);
    expect(at((i) => i.keyword === 'COPY' && /^src\b/.test(i.args))).toBeLessThan(filled);
    expect(at((i) => i.keyword === 'USER')).toBeGreaterThan(filled);
  });

  it('starts `refhub` from PATH in exec form, with `all` as the default command', () => {
    expect(execForm(lastOf(runtime, 'ENTRYPOINT').args)).toEqual(['refhub']);
    expect(execForm(lastOf(runtime, 'CMD').args)).toEqual(['all']);
    const link = instructionsOf(runtime, 'RUN')
      .map((i) => /\bln -s (\S+) \/usr\/local\/bin\/refhub\b/.exec(i.args)?.[1])
      .find((target) => target !== undefined);
    expect(link).toBe(path.posix.join(lastOf(runtime, 'WORKDIR').args, pkg.bin.refhub!));
    expect(read(pkg.bin.refhub!).split('\n')[0]).toBe('#!/usr/bin/env node');
  });

  it('checks liveness on /healthz with Node, since slim images have no curl', async () => {
    const { flags: options } = flags(lastOf(runtime, 'HEALTHCHECK').args);
    expect(Object.keys(options).sort()).toEqual(['interval', 'retries', 'start-period', 'timeout']);
    expect(read('src/api/routes/health.routes.ts')).toContain("app.get('/healthz'");
    const script = healthcheckScript();
    const answers = await withServer(
      (req, res) => {
        res.statusCode = req.url === '/healthz' ? 200 : 404;
        res.end();
      },
      async (port) => [await runCheck(script, { PORT: String(port) }), await runCheck(script, { PORT: '1' })],
    );
    expect(answers).toEqual([0, 1]);
    const failing = await withServer(
      (_req, res) => {
        res.statusCode = 503;
        res.end();
      },
      (port) => runCheck(script, { PORT: String(port) }),
    );
    expect(failing).toBe(1);
  });
});

describe('.dockerignore', () => {
  it('keeps secrets, local data and host modules out of the build context', () => {
    for (const file of [
      'node_modules/pg/package.json',
      'data/pgdata/PG_VERSION',
      'data/demo-keys.txt',
      '.git/config',
      'test-artifacts/run.json',
      'bench/results/latest.json',
      'npm-debug.log',
      'src/trace.log',
      '.env',
      '.env.production',
      'test/system/cli/cli.int.test.ts',
    ]) {
      expect(dockerignoreExcludes(dockerignore, file), file).toBe(true);
    }
    for (const file of [
      '.env.example',
      'package.json',
      'package-lock.json',
      'src/main.ts',
      'bin/refhub.js',
    ]) {
      expect(dockerignoreExcludes(dockerignore, file), file).toBe(false);
    }
  });
});

interface ComposeService {
  readonly image?: string;
  readonly build?: unknown;
  readonly command?: readonly string[] | string;
  readonly environment?: Readonly<Record<string, string | number | boolean | null>> | readonly string[];
  readonly ports?: readonly (string | { readonly host_ip?: string })[];
  readonly depends_on?: Readonly<Record<string, { readonly condition?: string }>> | readonly string[];
  readonly healthcheck?: { readonly test?: readonly string[] | string; readonly disable?: boolean };
  readonly restart?: string;
  readonly stop_grace_period?: string;
  readonly volumes?: readonly string[];
  readonly entrypoint?: readonly string[] | string;
}

const composeText = read('docker-compose.yml');
const compose = parseYaml(composeText, { merge: true }) as {
  services: Readonly<Record<string, ComposeService>>;
  volumes?: Readonly<Record<string, unknown>>;
};
const services = Object.entries(compose.services);

function commandOf(service: ComposeService): readonly string[] {
  const command = service.command ?? [];
  return typeof command === 'string' ? command.split(/\s+/) : command;
}

function environmentOf(service: ComposeService): Record<string, string> {
  const environment = service.environment ?? {};
  const entries: [string, string | number | boolean | null][] = isList(environment)
    ? environment.map((entry) => {
        const at = entry.indexOf('=');
        return at < 0 ? [entry, ''] : [entry.slice(0, at), entry.slice(at + 1)];
      })
    : Object.entries(environment);
  return Object.fromEntries(entries.map(([k, v]) => [k, v === null ? '' : String(v)]));
}

function isList(value: unknown): value is readonly string[] {
  return Array.isArray(value);
}

/** The environment a refhub container gets: the image's ENV, then the service's, interpolated. */
function containerEnv(service: ComposeService): Record<string, string> {
  const env = runtimeEnv();
  for (const [name, value] of Object.entries(environmentOf(service))) {
    env[name] = interpolate(value, OPERATOR_VARIABLES);
  }
  return env;
}

function dependenciesOf(service: ComposeService): Readonly<Record<string, { readonly condition?: string }>> {
  const dependsOn = service.depends_on ?? {};
  expect(Array.isArray(dependsOn), 'depends_on names a condition for each service').toBe(false);
  return dependsOn as Readonly<Record<string, { readonly condition?: string }>>;
}

function seconds(duration: string | undefined): number {
  const match = /^(\d+)(s|m)$/.exec(duration ?? '');
  if (match === null) throw new Error(`expected a duration like 30s, got ${duration}`);
  return Number(match[1]) * (match[2] === 'm' ? 60 : 1);
}

const refhubServices = services.filter(([, s]) => s.build !== undefined);
const byCommand = (command: string) => refhubServices.filter(([, s]) => commandOf(s)[0] === command);
const apis = byCommand('api');
const workers = byCommand('worker');
const sandbox = only(byCommand('sandbox-ehr'), 'one sandbox EHR');
const migrate = only(byCommand('migrate'), 'one migration');
const sandboxTls = only(
  services.filter(([, s]) => JSON.stringify(s.entrypoint ?? []).includes('sandbox-ehr-tls.sh')),
  "one maker of the sandbox's certificate",
);

describe('deploy/compose.env.example', () => {
  const template = read('deploy/compose.env.example');
  const entries = [...template.matchAll(/^([A-Z_][A-Z0-9_]*)=(.*)$/gm)].map((m) => [m[1]!, m[2]!] as const);
  const interpolated = (form: string) =>
    new Set([...composeText.matchAll(new RegExp(`\\$\\{([A-Z_][A-Z0-9_]*)${form}`, 'g'))].map((m) => m[1]!));

  it('holds every variable compose takes from its operator, and nothing else, each left to be filled in', () => {
    expect(new Set(entries.map(([name]) => name))).toEqual(interpolated('(?::[?-])'));
    for (const [name, value] of entries) expect(value, name).toBe('');
  });

  it('lists first the ones compose requires, the two passwords among them', () => {
    const required = interpolated(':\\?');
    expect(required).toEqual(new Set(SECRETS));
    expect(
      entries
        .slice(0, required.size)
        .map(([name]) => name)
        .sort(),
    ).toEqual([...required].sort());
  });

  it('is the .env git ignores, apart from the bare process’s .env.example', () => {
    expect(read('.gitignore').split('\n')).toContain('.env');
    expect(read('.env.example')).not.toMatch(/^POSTGRES_PASSWORD=/m);
  });
});

describe('docker-compose.yml', () => {
  it('builds every refhub service from this Dockerfile as one image', () => {
    expect(refhubServices.length).toBe(6);
    expect(new Set(refhubServices.map(([, s]) => s.image)).size).toBe(1);
    for (const [, service] of refhubServices) expect(service.build).toBe('.');
  });

  it('pins every image it pulls by digest', () => {
    const pulled = services.filter(([, s]) => s.build === undefined);
    expect(pulled.length).toBeGreaterThanOrEqual(2);
    for (const [name, service] of pulled) expect(service.image, name).toMatch(PINNED_IMAGE);
  });

  it('binds every published port to 127.0.0.1', () => {
    const published = services.flatMap(([, s]) => s.ports ?? []);
    expect(published.length).toBeGreaterThanOrEqual(apis.length);
    for (const port of published) {
      if (typeof port === 'string') expect(port).toMatch(/^127\.0\.0\.1:\d+:\d+$/);
      else expect(port.host_ip).toBe('127.0.0.1');
    }
  });

  it('runs PostgreSQL with a TCP health check, keeping its data in a named volume', () => {
    const postgres = compose.services.postgres!;
    const major = Number(/^postgres:(\d+)/.exec(postgres.image ?? '')?.[1]);
    expect(major).toBeGreaterThanOrEqual(16);
    expect(postgres.healthcheck?.test).toEqual(expect.arrayContaining(['pg_isready', '-h', '127.0.0.1']));
    // The official image moved its data directory in 18, and a volume at the old path would be ignored.
    const dataPath = major >= 18 ? '/var/lib/postgresql' : '/var/lib/postgresql/data';
    const volume = only(postgres.volumes ?? [], 'one volume');
    expect(volume.endsWith(`:${dataPath}`)).toBe(true);
    expect(compose.volumes).toHaveProperty(volume.split(':')[0]!);
  });

  it('runs Redis with noeviction, AOF fsync every second, a password and a health check', () => {
    const redis = compose.services.redis!;
    const command = commandOf(redis).join(' ');
    expect(command).toContain('--maxmemory-policy noeviction');
    expect(command).toContain('--appendonly yes');
    expect(command).toContain('--appendfsync everysec');
    expect(command).toMatch(/--requirepass \$\{REDIS_PASSWORD:\?[^}]+\}/);
    expect(environmentOf(redis).REDISCLI_AUTH).toMatch(/^\$\{REDIS_PASSWORD:\?[^}]+\}$/);
    expect(redis.healthcheck?.test).toEqual(['CMD-SHELL', 'redis-cli ping | grep -q PONG']);
    const volume = only(redis.volumes ?? [], 'one volume');
    expect(volume.endsWith(':/data')).toBe(true);
    expect(compose.volumes).toHaveProperty(volume.split(':')[0]!);
  });

  it('runs two API and two worker processes once PostgreSQL and Redis are healthy and migrated', () => {
    expect(apis.map(([name]) => name)).toHaveLength(2);
    expect(workers.map(([name]) => name)).toHaveLength(2);
    for (const [name, service] of [...apis, ...workers]) {
      expect(commandOf(service), name).toHaveLength(1);
      expect(dependenciesOf(service), name).toMatchObject({
        postgres: { condition: 'service_healthy' },
        redis: { condition: 'service_healthy' },
        [migrate[0]]: { condition: 'service_completed_successfully' },
        [sandboxTls[0]]: { condition: 'service_completed_successfully' },
      });
      expect(service.restart, name).toBe('unless-stopped');
    }
    expect(commandOf(migrate[1])).toEqual(['migrate']);
    expect(migrate[1].restart, 'a one-shot must not be restarted after it succeeds').toBe('no');
    expect(dependenciesOf(migrate[1])).toMatchObject({ postgres: { condition: 'service_healthy' } });
    // Distinct host ports, each mapped to the port the image listens on.
    const hostPorts = apis.map(([, s]) => {
      const port = only(s.ports ?? [], 'one port') as string;
      expect(port.split(':')[2]).toBe(runtimeEnv().PORT);
      return port.split(':')[1];
    });
    expect(new Set(hostPorts).size).toBe(apis.length);
  });

  it('checks the health of what serves HTTP (APIs, and workers on their health port) and nothing else', () => {
    for (const [name, service] of [...apis, ...workers])
      expect(service.healthcheck?.disable, name).not.toBe(true);
    expect(migrate[1].healthcheck, 'migrate serves no HTTP').toEqual({ disable: true });
  });

  it('gives refhub time to drain, and workers time to finish an EHR attempt', () => {
    for (const [name, service] of refhubServices) {
      expect(seconds(service.stop_grace_period), name).toBeGreaterThanOrEqual(30);
    }
    // 5 s connect, 30 s headers, 30 s body: the EHR client's limits (docs/operations.md).
    for (const [name, service] of workers) {
      expect(seconds(service.stop_grace_period), name).toBeGreaterThan(65);
    }
    // refhub ends its own drain (SHUTDOWN_GRACE_SECONDS) before compose gives up and kills it.
    for (const [name, service] of refhubServices) {
      const grace = Number(environmentOf(service).SHUTDOWN_GRACE_SECONDS ?? 20);
      expect(grace, name).toBeLessThan(seconds(service.stop_grace_period));
    }
  });

  it('sets only variables refhub reads, with values refhub accepts', () => {
    for (const [name, service] of refhubServices) {
      for (const variable of Object.keys(environmentOf(service))) {
        if (NODE_VARIABLES.has(variable)) continue;
        expect(CONFIG_VARIABLES, `${name}: ${variable}`).toContain(variable);
      }
      expect(() => loadConfig(containerEnv(service), '/app'), name).not.toThrow();
    }
  });

  it('connects API and worker processes to the compose services, with the passwords they were given', async () => {
    const postgres = environmentOf(compose.services.postgres!);
    const sandboxArgs = commandOf(sandbox[1]);
    const sandboxPort = sandboxArgs[sandboxArgs.indexOf('--port') + 1];
    for (const [name, service] of [...apis, ...workers, migrate]) {
      const env = containerEnv(service);
      const config = loadConfig(env, '/app');
      expect(config.env, name).toBe('production');
      const database = new URL(config.databaseUrl ?? '');
      expect(database.hostname, name).toBe('postgres');
      expect(database.username).toBe(postgres.POSTGRES_USER);
      expect(database.password).toBe(OPERATOR_VARIABLES.POSTGRES_PASSWORD);
      expect(database.pathname).toBe(`/${postgres.POSTGRES_DB}`);
      const redis = new URL(config.redisUrl);
      expect(redis.hostname, name).toBe('redis');
      expect(redis.password).toBe(OPERATOR_VARIABLES.REDIS_PASSWORD);
      const ehr = new URL(config.ehrUrl ?? '');
      expect(ehr.hostname, name).toBe(sandbox[0]);
      expect(ehr.port).toBe(sandboxPort);
      expect(ehr.pathname).toBe(EHR_PATH);
      expect(ehr.protocol).toBe('https:');
      // The sandbox's address on the compose network is private: named, it passes the start-up check.
      const onComposeNetwork = () => Promise.resolve(['172.18.0.7']);
      expect(
        await nonPublicAddressReason(ehr, config.ehrAllowedAddresses, onComposeNetwork),
        name,
      ).toBeNull();
      expect(await nonPublicAddressReason(ehr, new Set(), onComposeNetwork)).not.toBeNull();
      expect(config.webhookAllowedAddresses.size, `${name}: webhooks reach public addresses only`).toBe(0);
      expect(config.sessionSecret).toBe(OPERATOR_VARIABLES.SESSION_SECRET);
      // Every process seals and opens patient data under the one key ring the operator gave.
      expect(config.dataKeys, name).toEqual([{ id: 'kek-1', key: Buffer.alloc(32, 1) }]);
      expect(config.dataKeysFile, name).toBeUndefined();
      // Every process holds the one key the operator gave, which signs the audit trail's checkpoints.
      expect(config.auditSigningKey, name).toEqual(AUDIT_KEY);
      expect(config.catalogFile, name).toBe(path.join('/app', 'catalog/demo.json'));
      expect(fs.existsSync(path.join(ROOT, 'catalog/demo.json'))).toBe(true);
      // Node trusts the sandbox's CA, from the volume the one-shot wrote it to.
      expect(env.NODE_EXTRA_CA_CERTS, name).toBe(`${TLS_MOUNT}/ca.pem`);
      expect(service.volumes, name).toContain(`${TLS_VOLUME}:${TLS_MOUNT}:ro`);
    }
  });

  it('runs the sandbox EHR outside production, listening on all interfaces over https', () => {
    const command = commandOf(sandbox[1]);
    expect(command[command.indexOf('--host') + 1]).toBe('0.0.0.0');
    expect(command[command.indexOf('--tls-cert') + 1]).toBe(`${TLS_MOUNT}/sandbox-ehr.pem`);
    expect(command[command.indexOf('--tls-key') + 1]).toBe(`${TLS_MOUNT}/sandbox-ehr.key`);
    expect(loadConfig(containerEnv(sandbox[1]), '/app').env).not.toBe('production');
    expect(dependenciesOf(sandbox[1])).toMatchObject({
      [sandboxTls[0]]: { condition: 'service_completed_successfully' },
    });
  });

  it('makes the sandbox certificate once, from a CA whose key it discards, into the shared volume', () => {
    const service = sandboxTls[1];
    expect(service.restart).toBe('no');
    expect(service.image).toBe(compose.services.postgres!.image);
    const entrypoint = service.entrypoint as readonly string[];
    expect(entrypoint.at(-1)).toBe(TLS_MOUNT.replace(/:ro$/, ''));
    const script = entrypoint.find((word) => word.endsWith('sandbox-ehr-tls.sh'))!;
    expect(service.volumes).toContain(`./deploy/sandbox-ehr-tls.sh:${script}:ro`);
    expect(service.volumes).toContain(`${TLS_VOLUME}:${TLS_MOUNT}`);
    expect(compose.volumes).toHaveProperty(TLS_VOLUME);

    const made = makeSandboxTls().dir;
    const ca = new X509Certificate(fs.readFileSync(path.join(made, 'ca.pem')));
    const certificate = new X509Certificate(fs.readFileSync(path.join(made, 'sandbox-ehr.pem')));
    expect(ca.ca).toBe(true);
    expect(certificate.ca).toBe(false);
    expect(certificate.verify(ca.publicKey)).toBe(true);
    expect(certificate.checkIssued(ca)).toBe(true);
    // Every name the stack reaches it by: the compose service, and the health check's and the host's.
    expect(certificate.checkHost(sandbox[0])).toBe(sandbox[0]);
    expect(certificate.checkHost('localhost')).toBe('localhost');
    expect(certificate.checkIP('127.0.0.1')).toBe('127.0.0.1');
    expect(certificate.checkHost('postgres')).toBeUndefined();
    expect(fs.readdirSync(made).sort()).toEqual(['ca.pem', 'sandbox-ehr.key', 'sandbox-ehr.pem']);
    expect(fs.statSync(path.join(made, 'sandbox-ehr.key')).mode & 0o777).toBe(0o600);
    // A second start keeps the first one's certificate, which the running services trust.
    const before = fs.readFileSync(path.join(made, 'ca.pem'), 'utf8');
    makeSandboxTls(made);
    expect(fs.readFileSync(path.join(made, 'ca.pem'), 'utf8')).toBe(before);
  });

  it('takes every secret from the environment and stops when one is missing', () => {
    const uses = services.flatMap(([, s]) => [...Object.values(environmentOf(s)), ...commandOf(s)]);
    for (const secret of SECRETS) {
      const references = uses.flatMap((value) => interpolations(value)).filter((i) => i.name === secret);
      expect(references.length, secret).toBeGreaterThan(0);
      for (const reference of references) expect(reference.operator, secret).toBe(':?');
    }
    expect(() => interpolate(composeText, OPERATOR_VARIABLES)).not.toThrow();
    for (const secret of SECRETS) {
      expect(() => interpolate(composeText, { ...OPERATOR_VARIABLES, [secret]: '' })).toThrow(secret);
    }
  });

  it("checks the sandbox EHR's health over https on the port it listens on, with its token when it has one", async () => {
    const test = sandbox[1].healthcheck?.test;
    if (!Array.isArray(test)) throw new Error('the sandbox health check is in exec form');
    expect(test.slice(0, 3)).toEqual(['CMD', 'node', '-e']);
    const script = (test as readonly string[])[3]!;
    const command = commandOf(sandbox[1]);
    const listens = `https://127.0.0.1:${command[command.indexOf('--port') + 1]}/`;
    expect(script).toContain(listens);
    const made = makeSandboxTls().dir;
    const tls: SandboxTls = {
      cert: fs.readFileSync(path.join(made, 'sandbox-ehr.pem')),
      key: fs.readFileSync(path.join(made, 'sandbox-ehr.key')),
    };
    const trust = { NODE_EXTRA_CA_CERTS: path.join(made, 'ca.pem') };
    expect(environmentOf(sandbox[1]).NODE_EXTRA_CA_CERTS).toBe(`${TLS_MOUNT}/ca.pem`);
    for (const token of [undefined, 'sandbox-token']) {
      const running = await createSandboxEhr({ token }).listen({ port: 0, tls });
      try {
        expect(running.baseUrl.startsWith('https://')).toBe(true);
        const local = script.replace(listens, `${running.baseUrl}/`);
        expect(
          await runCheck(local, { ...trust, ...(token === undefined ? {} : { EHR_TOKEN: token }) }),
        ).toBe(0);
        if (token !== undefined) expect(await runCheck(local, { ...trust, EHR_TOKEN: 'wrong' })).toBe(1);
        // Without the CA the certificate does not verify, as for any client that was not given it.
        expect(await runCheck(local, token === undefined ? {} : { EHR_TOKEN: token })).toBe(1);
      } finally {
        await running.close();
      }
    }
  });
});
