// The import rules of src, checked by `npm run boundaries` (dependency-cruiser, part of `npm run check`).
// These rules are the folder contracts: a folder's README says what the folder is for, and what it may
// import is stated here, once, where a machine holds the code to it. Each rule's comment says why.
// test/boundaries.test.ts plants violations in a copy of src and proves that the rules catch them.

/** @import { IConfiguration, IForbiddenRuleType } from 'dependency-cruiser' */

// Every top-level folder and file of src, lowest layer first. A unit may import only the units listed
// before it (rule `no-folder-cycle`), so no two top-level units can ever depend on each other, however
// many files sit between them. dependency-cruiser's own `scope: 'folder'` cycle check cannot say this:
// it treats each subfolder as a folder of its own, so it does not see services/x → queue/x plus
// queue/y → services/y (test/boundaries.test.ts plants exactly that), and it reports every folder
// edge inside a cycle rather than the one import that goes the wrong way. A new top-level folder or
// file gets its place here (rule `folder-not-in-order`).
const FOLDER_ORDER = [
  'errors.ts',
  'domain',
  'render',
  'config.ts',
  'logger.ts',
  'version.ts',
  'db',
  'observability',
  'sandbox-ehr',
  'queue',
  'services',
  'workers',
  'api',
  'cli',
  'composition',
  'main.ts',
];

/** @param {string} name a folder or a file directly in src */
const unit = (name) => (name.endsWith('.ts') ? `^src/${name.replaceAll('.', '\\.')}$` : `^src/${name}/`);

// Modules that do I/O: files, DNS, sockets, HTTP, processes, the database, Redis and the queue. A core
// module is matched with or without its `node:` prefix; a package wherever its node_modules is.
const NETWORK_CORE_MODULES = '^(node:)?(dns|net|tls|dgram|http|https|http2|child_process)(/|$)';
const FILE_CORE_MODULES = '^(node:)?fs(/|$)';
const NETWORK_PACKAGES =
  '(^|/)node_modules/(ioredis|bullmq|undici|fastify|@fastify/[^/]+|@bull-board/[^/]+)/';
const DATABASE_PACKAGES = '(^|/)node_modules/(pg|pg-[^/]+|@electric-sql/pglite|kysely)/';
const IO_MODULES = [NETWORK_CORE_MODULES, FILE_CORE_MODULES, NETWORK_PACKAGES, DATABASE_PACKAGES];

// The files outside db/ and composition/ that may hold the database handle, each with its reason.
// The rule `database-only-behind-the-stores` names them; there are at most two.
/** @type {{ path: string, reason: string }[]} */
const DATABASE_HOLDERS = [];
const DATABASE_HOLDERS_COMMENT =
  DATABASE_HOLDERS.length === 0
    ? 'No file outside them holds it.'
    : `The exceptions: ${DATABASE_HOLDERS.map((h) => `${h.path} (${h.reason})`).join('; ')}.`;

/** @type {IForbiddenRuleType[]} */
const folderOrder = FOLDER_ORDER.slice(0, -1).map((name, index) => ({
  name: 'no-folder-cycle',
  severity: 'error',
  comment:
    'Top-level folders of src must not depend on each other in a circle (type imports included): a ' +
    'folder cycle means neither side can be understood, tested or moved alone. FOLDER_ORDER in ' +
    '.dependency-cruiser.js lists them lowest layer first, and each may import only those before it; ' +
    'this import goes up that order. Move the code down, or pass the dependency in from the composition root.',
  from: { path: unit(name) },
  to: { path: FOLDER_ORDER.slice(index + 1).map(unit) },
}));

const NOT_IN_ORDER_COMMENT =
  'Every top-level folder and file of src has a place in FOLDER_ORDER (.dependency-cruiser.js); ' +
  'one without a place escapes the folder-cycle check. Add it to the list where its layer is.';

/** @type {IConfiguration} */
export default {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment:
        'No import cycle between files, type imports included: a cycle makes module evaluation order ' +
        'decide what is initialised, and makes the files impossible to understand or test one at a time.',
      from: {},
      to: { circular: true },
    },
    ...folderOrder,
    {
      name: 'folder-not-in-order',
      severity: 'error',
      comment: NOT_IN_ORDER_COMMENT,
      from: { path: '^src/', pathNot: FOLDER_ORDER.map(unit) },
      to: { path: '^src/' },
    },
    {
      name: 'folder-not-in-order',
      severity: 'error',
      comment: NOT_IN_ORDER_COMMENT,
      from: { path: '^src/' },
      to: { path: '^src/', pathNot: FOLDER_ORDER.map(unit) },
    },
    {
      name: 'domain-imports-only-domain',
      severity: 'error',
      comment:
        'domain is the rules as pure code (lifecycle table, access, wording, view shapes), which every ' +
        'other layer reads; it imports nothing of ours but other domain files and errors.ts, so that it ' +
        'can be tested and reused without a database, a queue or an HTTP server.',
      from: { path: '^src/domain/' },
      to: { path: '^src/', pathNot: ['^src/domain/', '^src/errors\\.ts$'] },
    },
    {
      name: 'domain-does-no-io',
      severity: 'error',
      comment:
        'domain does no I/O (files, DNS, sockets, HTTP, processes, database, Redis, queue): what needs ' +
        'the outside world lives in the layer that owns it, and receives domain values.',
      from: { path: '^src/domain/', pathNot: '^src/domain/network-address\\.ts$' },
      to: { path: IO_MODULES },
    },
    {
      name: 'domain-does-no-io',
      severity: 'error',
      comment:
        'domain does no I/O. The one exception is network-address.ts, which classifies addresses with ' +
        "node:net's BlockList and isIP: they parse text and open no socket. Any other I/O module is refused " +
        'there as everywhere in domain.',
      from: { path: '^src/domain/network-address\\.ts$' },
      to: { path: IO_MODULES, pathNot: '^(node:)?net$' },
    },
    {
      name: 'render-imports-only-render-and-domain',
      severity: 'error',
      comment:
        'render turns values into HTML and FHIR and nothing else: it imports only render, domain (types ' +
        'and pure wording) and errors.ts. What a page shows is loaded by a service and passed in, so ' +
        'rendering cannot reach the database, a service or the HTTP layer.',
      from: { path: '^src/render/' },
      to: { path: '^src/', pathNot: ['^src/(render|domain)/', '^src/errors\\.ts$'] },
    },
    {
      name: 'render-does-no-io',
      severity: 'error',
      comment:
        'render is pure: the same values give the same document, with no I/O (files, DNS, sockets, ' +
        'HTTP, processes, database, Redis, queue), so a form is rendered outside any transaction and ' +
        'tested alone.',
      from: { path: '^src/render/' },
      to: { path: IO_MODULES },
    },
    {
      name: 'db-imports-only-db-and-domain',
      severity: 'error',
      comment:
        'db is the store (migrations, one repository per aggregate) and knows only its rows and the ' +
        'domain types they hold: it imports only db, domain and errors.ts, so that no query depends on ' +
        'how a service, a route or a worker uses it.',
      from: { path: '^src/db/' },
      to: { path: '^src/', pathNot: ['^src/(db|domain)/', '^src/errors\\.ts$'] },
    },
    {
      name: 'db-does-no-network-io',
      severity: 'error',
      comment:
        'db talks to PostgreSQL or PGlite (kysely, pg, pglite) and to its data directory, nothing else: ' +
        'no Redis, queue, HTTP, DNS or sockets, so that a transaction never waits on the network.',
      from: { path: '^src/db/' },
      to: { path: [NETWORK_CORE_MODULES, NETWORK_PACKAGES] },
    },
    {
      name: 'services-not-to-entry-points',
      severity: 'error',
      comment:
        'services are the use cases; the HTTP API, the workers, the composition root and the operator ' +
        'commands call them, never the other way round. A service that needs a worker’s function takes ' +
        'it as a dependency, or the function moves down into services, queue or domain.',
      from: { path: '^src/services/' },
      to: { path: ['^src/(api|workers|composition|cli)/', '(^|/)[^/]+\\.worker\\.ts$'] },
    },
    {
      name: 'queue-not-to-entry-points',
      severity: 'error',
      comment:
        'queue (registry, connections, producer, outbox relay, reconciler) is used by the services, the ' +
        'workers and the root; it must not import the HTTP API, the workers or the composition root, ' +
        'which are built on it. A job’s policy that the producer needs lives in queue or domain.',
      from: { path: '^src/queue/' },
      to: { path: ['^src/(api|workers|composition|cli)/', '(^|/)[^/]+\\.worker\\.ts$'] },
    },
    {
      name: 'api-not-to-workers',
      severity: 'error',
      comment:
        'The HTTP API and the workers are two entry points that scale apart (`refhub api`, `refhub ' +
        'worker`): neither imports the other. What both need lives in services, queue or domain.',
      from: { path: '^src/api/' },
      to: { path: '^src/workers/' },
    },
    {
      name: 'workers-not-to-api',
      severity: 'error',
      comment:
        'The workers and the HTTP API are two entry points that scale apart (`refhub worker`, `refhub ' +
        'api`): neither imports the other. What both need lives in services, queue or domain.',
      from: { path: '^src/workers/' },
      to: { path: '^src/api/' },
    },
    {
      name: 'cli-not-to-api-or-workers',
      severity: 'error',
      comment:
        'An operator command runs one job and exits: it takes a Pick of a service or an opener from the ' +
        'composition root, never the HTTP API or a worker, so a command does not start (or load) the ' +
        'serving stack.',
      from: { path: '^src/cli/' },
      to: { path: '^src/(api|workers)/' },
    },
    {
      name: 'only-composition-imports-api',
      severity: 'error',
      comment:
        'The HTTP API is an outer layer: only the composition root builds it, with the narrow ' +
        'dependencies it needs. Anything else that imports it makes the API part of a lower layer.',
      from: { pathNot: ['^src/api/', '^src/composition/'] },
      to: { path: '^src/api/' },
    },
    {
      name: 'only-entry-imports-composition',
      severity: 'error',
      comment:
        'composition is the one composition root: it constructs everything and hands each part (routes, ' +
        'workers, the operator commands in cli) the narrow dependencies it uses. Only the program ' +
        '(main.ts) starts it; a module below that imports it would reach every other module through it.',
      from: { pathNot: ['^src/composition/', '^src/main\\.ts$'] },
      to: { path: '^src/composition/' },
    },
    {
      name: 'context-stays-in-composition',
      severity: 'error',
      comment:
        'No route reaches the context: the whole AppContext is for the composition root alone. A route, ' +
        'service or worker declares the few things it calls (a Pick of a service or repository) and ' +
        'receives them, so its dependencies are visible in its signature and its tests build only those.',
      from: { pathNot: '^src/composition/' },
      to: { path: '^src/composition/context\\.ts$' },
    },
    {
      name: 'only-root-constructs-services',
      severity: 'error',
      comment:
        'Only the composition root constructs services, so outside it a *.service.ts module is ' +
        'imported for its types only (`import type`): callers receive a service, they do not build or ' +
        'reach into one. (dependency-cruiser counts `import x, { type T }` as type-only; no service ' +
        'has a default export, so that cannot hide a value import here.)',
      from: { pathNot: '^src/composition/' },
      to: { path: '^src/services/.+\\.service\\.ts$', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'database-only-behind-the-stores',
      severity: 'error',
      comment:
        'Only db/ and the composition root hold the database (kysely, the Executor, the schema types): ' +
        'everything else reaches the data through a Pick of the stores (db/stores.ts), so where a ' +
        'referral is written, sealed and audited has one answer, db/. ' +
        DATABASE_HOLDERS_COMMENT,
      from: { path: '^src/', pathNot: ['^src/(db|composition)/', ...DATABASE_HOLDERS.map((h) => h.path)] },
      to: { path: ['(^|/)node_modules/kysely/', '^src/db/(executor|schema)\\.ts$'] },
    },
    {
      name: 'stores-built-only-by-the-root',
      severity: 'error',
      comment:
        'A store or repository is built in one place: the composition root calls createStores once ' +
        '(db/stores.ts), and db/ builds the stores from its repositories. Outside them a *.repository.ts, ' +
        '*.store.ts or stores.ts module is imported for its types only: a service, route, worker or ' +
        'queue module receives a Pick of a store, it does not build one over a database it holds.',
      from: { path: '^src/', pathNot: '^src/(db|composition)/' },
      to: {
        path: ['^src/db/.+\\.repository\\.ts$', '^src/db/.+\\.store\\.ts$', '^src/db/stores\\.ts$'],
        dependencyTypesNot: ['type-only'],
      },
    },
    {
      name: 'cipher-only-in-db-and-domain',
      severity: 'error',
      comment:
        'Patient data is sealed and opened only inside db/: a store seals what it writes and opens what ' +
        'it reads, with the data keys it was built with. The field cipher (domain/data-keys.ts) is ' +
        'therefore imported by db/ and domain/ alone, type imports included; a service, route or ' +
        'worker that needs a sealed value asks a store for it.',
      from: { path: '^src/', pathNot: '^src/(db|domain)/' },
      to: { path: '^src/domain/data-keys\\.ts$' },
    },
    {
      name: 'sandbox-ehr-stands-alone',
      severity: 'error',
      comment:
        'The sandbox EHR stands in for the national EHR outside production and speaks only the wire ' +
        'format in domain: it imports sandbox-ehr, domain, config.ts, logger.ts and errors.ts, never ' +
        'refhub’s own services or store, so it cannot agree with refhub by sharing code the real EHR lacks.',
      from: { path: '^src/sandbox-ehr/' },
      to: {
        path: '^src/',
        pathNot: ['^src/(sandbox-ehr|domain)/', '^src/(config|logger|errors)\\.ts$'],
      },
    },
    {
      name: 'not-to-unresolvable',
      severity: 'error',
      comment:
        'An import that cannot be resolved fails at run time, and hides a dependency from every other ' +
        'rule here. Relative imports name the .ts file itself.',
      from: {},
      to: { couldNotResolve: true },
    },
    {
      name: 'no-orphans',
      severity: 'error',
      comment:
        'A module with no imports that nothing imports is dead code, or an entry point no one wired ' +
        'in. Remove it, or import it where it is used.',
      from: { orphan: true, pathNot: '\\.d\\.ts$' },
      to: {},
    },
  ],
  options: {
    // Follow our own modules; stop at packages (they are resolved, so the I/O rules can name them).
    doNotFollow: { path: '(^|/)node_modules/' },
    // Type-only imports are dependencies too: a cycle through `import type` is still a cycle, and a
    // layer that imports another's types depends on it.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    // ESM resolution as Node does it: relative imports name the .ts file, packages resolve through
    // their `exports` with the import condition first.
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      mainFields: ['module', 'main', 'types', 'typings'],
    },
    skipAnalysisNotInRules: true,
  },
};
