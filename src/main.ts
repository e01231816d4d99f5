// The `refhub` command: the service itself and the operator's tools. This file only parses the
// command line and hands over: the composition root (src/composition) builds what each command needs,
// the serving modes are in composition/serve.ts, and the operator's commands in src/cli.
import { Command } from 'commander';
import type { CreateKeyOptions } from './cli/api-key.command.ts';
import type { LimitOptions } from './cli/rate-limit.command.ts';
import type { AuditExportOptions, AuditPublicKeyOptions, AuditVerifyOptions } from './cli/audit.command.ts';
import {
  burstArg,
  clientRoleArg,
  dayArg,
  institutionArg,
  instantArg,
  perSecondArg,
  portArg,
  roleArg,
  tokenArg,
  uuidArg,
} from './cli/arguments.ts';
import type { CreateClientOptions, KeySourceOptions } from './cli/client-credentials.command.ts';
import {
  ledgerArg,
  type LedgerReplayOptions,
  type LedgerSearchOptions,
} from './cli/ledger-search.command.ts';
import { SANDBOX_DEFAULT_PORT, type SandboxEhrCommandOptions } from './cli/sandbox-ehr.command.ts';
import { VERSION } from './version.ts';
import type { ServeCommand } from './composition/serve.ts';
import { ROLES } from './domain/statuses.ts';

// What a command runs is loaded when it runs: the composition root pulls in the database engines,
// BullMQ, Fastify and the rest, which `refhub --help`, `--version` and a mistyped option never need.
const commands = () => import('./composition/commands.ts');
const serve = async (mode: ServeCommand) => (await import('./composition/serve.ts')).serve(mode);

const program = new Command('refhub')
  .description('refhub: referrals between institutions, with a bridge to the national EHR')
  .version(VERSION);

program
  .command('all')
  .description('run the API, the outbox relay and the workers in one process (the only mode with PGlite)')
  .action(() => serve('all'));

program
  .command('api')
  .description('run an API process against PostgreSQL (DATABASE_URL); run as many as you need')
  .action(() => serve('api'));

program
  .command('worker')
  .description(
    'run the outbox relay, the workers and the reconciler against PostgreSQL; run as many as you need',
  )
  .action(() => serve('worker'));

program
  .command('forwards')
  .description('manage forwards to the EHR')
  .command('retry [referralIds...]')
  .description(
    'forward failed referrals again, after fixing the cause (each ID, or every failed one with --all-failed)',
  )
  .option('--all-failed', 'retry every failed forward')
  .action(async (referralIds: string[], options: { allFailed?: boolean }) =>
    (await commands()).forwardsRetryCommand(referralIds, options),
  );

const webhooks = program.command('webhooks').description('watch and replay webhook deliveries');

webhooks
  .command('list')
  .description('list webhook subscriptions: ID, institution, state and since when they fail (no secrets)')
  .action(async () => (await commands()).webhooksListCommand());

webhooks
  .command('replay')
  .description(
    'deliver one event again (--event), or every event since a time (--since), to its subscriptions',
  )
  .option('--event <eventId>', 'the event to deliver again', uuidArg('an event ID'))
  .option('--since <time>', 'every event that occurred at or after this time', instantArg)
  .option('--subscription <subscriptionId>', 'only to this subscription', uuidArg('a subscription ID'))
  .action(async (options: { event?: string; since?: Date; subscription?: string }) =>
    (await commands()).webhooksReplayCommand(options),
  );

const ledger = program
  .command('ledger')
  .description('search, export and replay the forwards to the EHR and the webhook deliveries');

/** The filter's flags, the same on search and replay; each is checked, and an error names it. */
function withFilterFlags(command: Command): Command {
  return command
    .requiredOption('--from <time>', 'attempts at or after this time (ISO 8601 with a zone)')
    .requiredOption('--to <time>', 'attempts before this time (ISO 8601 with a zone)')
    .option('--outcome <outcome>', 'delivered, retrying or failed')
    .option('--status <status>', "the receiver's HTTP status")
    .option('--error-code <code>', 'the error code of an attempt that got no answer (ECONNRESET, …)')
    .option('--offering <offeringId>', "the referral's offering")
    .option(
      '--institution <idType:id>',
      "forwards: the referral's sender or provider; webhooks: the subscriber",
    )
    .option('--referral <referralId>', 'one referral');
}

withFilterFlags(
  ledger
    .command('search <ledger>')
    .description('export the forwards or webhooks attempts that match, as NDJSON or CSV, oldest first'),
)
  .option('--format <format>', 'ndjson or csv', 'ndjson')
  .option('--out <file>', 'write to this file (created or replaced) rather than stdout')
  .action(async (name: string, options: LedgerSearchOptions) =>
    (await commands()).ledgerSearchCommand(ledgerArg(name), options),
  );

withFilterFlags(
  ledger
    .command('replay <ledger>')
    .description(
      'attempt the matching forwards or webhook deliveries again, skipping what the receiver acknowledged',
    ),
)
  .option('--dry-run', 'say how many and which would be replayed, and change nothing')
  .action(async (name: string, options: LedgerReplayOptions) =>
    (await commands()).ledgerReplayCommand(ledgerArg(name), options),
  );

program
  .command('doctor')
  .description(
    'check the database, migrations, durability settings, the queues, the EHR URL and the attachment scanner with ' +
      "this shell's settings, or ask a running refhub (--server); exit 1 if a check fails",
  )
  .option('--server <url>', 'ask the refhub at this URL for its own checks and settings (GET /doctor)')
  .option(
    '--ops-key <key>',
    'the ops key for --server (default: REFHUB_OPS_KEY, which keeps it out of ps)',
    tokenArg,
  )
  .action(async (options: { server?: string; opsKey?: string }) => (await commands()).doctorCommand(options));

program
  .command('reconcile')
  .description(
    're-enqueue due forwards and attachment scans that have no live job and rebuild missing reminder ' +
      'schedules, once',
  )
  .action(async () => (await commands()).reconcileCommand());

program
  .command('migrate')
  .description('apply pending database migrations')
  .action(async () => (await commands()).migrateCommand());

program
  .command('catalog')
  .description('manage the catalog of systems, institutions and offerings')
  .command('load <file>')
  .description('load a catalog JSON file (an upsert by ID; loading twice changes nothing)')
  .action(async (file: string) => (await commands()).catalogLoadCommand(file));

const keys = program.command('keys').description('manage API keys');

keys
  .command('create')
  .description('create an API key; the key is printed once, alone on the last line')
  .requiredOption('--system <name>', 'the system that holds the key, for example HAS')
  .requiredOption('--role <role>', `one of ${ROLES.join(', ')}`, roleArg)
  .option('--institution <idType:id>', 'an institution the key may act for (repeatable)', institutionArg, [])
  .option('--label <text>', 'a note for operators')
  .option('--environment <env>', 'live or test (default: live in production, else test)')
  .action(async (options: CreateKeyOptions) => (await commands()).keysCreateCommand(options));

keys
  .command('list')
  .description('list API keys (never the keys themselves)')
  .action(async () => (await commands()).keysListCommand());

keys
  .command('revoke <idOrPrefix>')
  .description('revoke a key by its ID or display prefix; it stops working at once')
  .action(async (idOrPrefix: string) => (await commands()).keysRevokeCommand(idOrPrefix));

keys
  .command('limit <idOrPrefix>')
  .description(
    "set a key's own rate limit (--per-second N --burst N), or give it the installation default (--default)",
  )
  .option('--per-second <n>', 'requests a second, sustained', perSecondArg)
  .option('--burst <n>', 'requests at once above the rate', burstArg)
  .option('--default', 'the installation default again (RATE_LIMIT_PER_SECOND, RATE_LIMIT_BURST)')
  .action(async (idOrPrefix: string, options: LimitOptions) =>
    (await commands()).keysLimitCommand(idOrPrefix, options),
  );

const clients = program
  .command('clients')
  .description('manage clients with signed credentials (OAuth 2.0 client credentials, private_key_jwt)');

clients
  .command('create')
  .description(
    'register a client by its public keys; prints the token URL, the scopes and, alone on the last line, ' +
      'the client ID it signs its assertions with',
  )
  .requiredOption('--system <name>', 'the system the client belongs to, for example HAS')
  .requiredOption('--role <role>', 'sender or provider', clientRoleArg)
  .option('--institution <idType:id>', 'the one institution the client acts for', institutionArg)
  .option('--label <text>', 'a note for operators')
  .option('--jwks-url <url>', 'where the client publishes its JWKS (refhub fetches it)')
  .option('--jwk-file <path>', 'a file holding its public JWK or JWKS')
  .action(async (options: CreateClientOptions) => (await commands()).clientsCreateCommand(options));

clients
  .command('list')
  .description('list clients: ID, role, system, institution, keys, state and label')
  .action(async () => (await commands()).clientsListCommand());

clients
  .command('keys')
  .argument('<id>', 'the client ID', uuidArg('a client ID'))
  .description("replace a client's public keys (to rotate a JWKS given inline; a URL's keys rotate there)")
  .option('--jwks-url <url>', 'where the client publishes its JWKS (refhub fetches it)')
  .option('--jwk-file <path>', 'a file holding its public JWK or JWKS')
  .action(async (id: string, options: KeySourceOptions) =>
    (await commands()).clientsKeysCommand(id, options),
  );

clients
  .command('revoke')
  .argument('<id>', 'the client ID', uuidArg('a client ID'))
  .description('revoke a client by its ID; its access tokens stop working at once')
  .action(async (id: string) => (await commands()).clientsRevokeCommand(id));

clients
  .command('limit')
  .argument('<id>', 'the client ID', uuidArg('a client ID'))
  .description(
    "set a client's own rate limit (--per-second N --burst N), or give it the installation default (--default)",
  )
  .option('--per-second <n>', 'requests a second, sustained', perSecondArg)
  .option('--burst <n>', 'requests at once above the rate', burstArg)
  .option('--default', 'the installation default again (RATE_LIMIT_PER_SECOND, RATE_LIMIT_BURST)')
  .action(async (id: string, options: LimitOptions) => (await commands()).clientsLimitCommand(id, options));

const dataKeys = program
  .command('data-keys')
  .description('the keys patient data is sealed with, and their rotation (docs/security.md)');

dataKeys
  .command('status')
  .description('show the data keys, which is active, and what is not yet sealed under it')
  .action(async () => (await commands()).dataKeysStatusCommand());

dataKeys
  .command('rotate')
  .description(
    'wrap every data key with the first key of DATA_KEYS, make a new data key and seal every value ' +
      'again under it while the service runs; run again to finish one that was interrupted',
  )
  .action(async () => (await commands()).dataKeysRotateCommand());

const audit = program
  .command('audit')
  .description('seal, verify and export the tamper-evident audit trail (docs/security.md)');

audit
  .command('seal')
  .description('chain the audit rows written since the last round, now, and sign a checkpoint')
  .action(async () => (await commands()).auditSealCommand());

audit
  .command('adopt')
  .description(
    'sign for the unsigned checkpoints of a trail begun without AUDIT_SIGNING_KEY, once `refhub audit verify` ' +
      'shows it holds: from then on an unsigned checkpoint is a break',
  )
  .action(async () => (await commands()).auditAdoptCommand());

audit
  .command('verify')
  .description(
    'check the audit trail in the database, or an export (--file) with no database; ' +
      'exit 1 and name the first broken link if it does not hold',
  )
  .option('--since <day>', 'only the chains of this day (YYYY-MM-DD, UTC) and after', dayArg)
  .option('--file <export>', 'check this export (`refhub audit export`) instead of the database')
  .option(
    '--key <jwk>',
    "a file holding the public JWK (or JWKS) to check an export's signatures with; in the database, " +
      'more keys AUDIT_SIGNING_KEY had before a rotation, beside AUDIT_PUBLIC_KEYS',
  )
  .action(async (options: AuditVerifyOptions) => (await commands()).auditVerifyCommand(options));

audit
  .command('public-key')
  .description('print the public JWK of AUDIT_SIGNING_KEY, for auditors to check checkpoints with')
  .option(
    '--jwks',
    "print a JWKS of it and of AUDIT_PUBLIC_KEYS' keys: every key the trail here is signed with",
  )
  .action(async (options: AuditPublicKeyOptions) => (await commands()).auditPublicKeyCommand(options));

audit
  .command('export')
  .description(
    'write the sealed rows of the chains of these days, their checkpoints and the public key, as NDJSON',
  )
  .requiredOption('--from <day>', 'the first day (YYYY-MM-DD, UTC)', dayArg)
  .requiredOption('--to <day>', 'the last day (YYYY-MM-DD, UTC)', dayArg)
  .action(async (options: AuditExportOptions) => (await commands()).auditExportCommand(options));

const retention = program
  .command('retention')
  .description(
    'archive and drop the months of the audit trail, event feed, webhook attempts and forwarding ledger ' +
      'past their retention, and archive the referrals that ended long ago (docs/operations.md)',
  );

retention
  .command('run')
  .description(
    'make the month partitions ahead, then archive each month past its RETENTION_*_MONTHS to ' +
      'RETENTION_ARCHIVE_DIR, verify the archive and drop the month, now',
  )
  .action(async () => (await commands()).retentionRunCommand());

retention
  .command('verify')
  .description(
    "check an archive's directory against its manifest (every file's SHA-256 and rows, and an audit " +
      "archive's chains); exit 1 naming the file at the first mismatch",
  )
  .argument('<archive>', 'the archive directory (RETENTION_ARCHIVE_DIR/<table>-<YYYY-MM>)')
  .action(async (archive: string) => (await commands()).retentionVerifyCommand(archive));

retention
  .command('referrals')
  .description(
    'write the final referrals untouched for REFERRAL_ARCHIVE_AFTER_MONTHS to a new archive in ' +
      'RETENTION_ARCHIVE_DIR, verify it, then purge their clinical content',
  )
  .action(async () => (await commands()).retentionReferralsCommand());

program
  .command('sandbox-ehr')
  .description(
    'run the sandbox EHR, a stand-in for the national EHR that records deliveries (not in production)',
  )
  .option('--port <n>', 'port to listen on; 0 picks a free one', portArg, SANDBOX_DEFAULT_PORT)
  .option('--host <host>', 'address to listen on', '127.0.0.1')
  .option('--token <token>', 'require Authorization: Bearer <token> (default: EHR_TOKEN)', tokenArg)
  .option('--tls-cert <file>', 'serve https with this PEM certificate (chain); needs --tls-key')
  .option('--tls-key <file>', "the certificate's PEM private key")
  .action(async (options: SandboxEhrCommandOptions) => (await commands()).sandboxEhrCommand(options));

try {
  await program.parseAsync(process.argv);
} catch (error) {
  (await import('./cli/failure.ts')).failFor(error);
}
