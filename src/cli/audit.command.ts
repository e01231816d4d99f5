// `refhub audit seal|adopt|verify|public-key|export`: the tamper-evident audit trail for the operator
// and for auditors (docs/security.md, "The audit trail"). `verify` checks the trail in the database;
// `verify --file` checks an export with no database at all, by the same rules, so that an auditor can
// run it on a copy with a public key obtained from the operator beforehand. What an export holds, and
// how it is read and checked, is services/audit/export.ts's: this file parses the arguments, reads
// files and prints.
import { readFile } from 'node:fs/promises';
import { InvalidArgumentError } from 'commander';
import type { JWK } from 'jose';
import type { Checkpoint } from '../db/audit/audit-chain.repository.ts';
import { publicJwkOf, type Break } from '../services/audit/audit-chain-check.ts';
import type { AuditChain } from '../services/audit/audit-chain.service.ts';
import {
  checkExport,
  keysToCheck,
  mergeKeys,
  parseExport,
  publicKeysIn,
  writeExport,
} from '../services/audit/export.ts';
import { plural } from './plural.ts';

export interface AuditCommandDeps {
  readonly auditChain: Pick<
    AuditChain,
    'seal' | 'adopt' | 'verify' | 'exportTrail' | 'publicKey' | 'publicKeys'
  >;
}

export interface AuditVerifyOptions {
  readonly since?: string;
  readonly file?: string;
  readonly key?: string;
}

export interface AuditPublicKeyOptions {
  readonly jwks?: boolean;
}

export interface AuditExportOptions {
  readonly from: string;
  readonly to: string;
}

export async function sealAudit(deps: Pick<AuditCommandDeps, 'auditChain'>): Promise<void> {
  const sealed = await deps.auditChain.seal();
  process.stdout.write(
    sealed === 0
      ? 'Nothing to seal: every audit row is sealed.\n'
      : `Sealed ${plural(sealed, 'audit row')}.\n`,
  );
}

/**
 * Signs for the unsigned checkpoints of a trail begun without AUDIT_SIGNING_KEY, after the operator has
 * checked the trail (`refhub audit verify`): from then on they verify with a key known.
 */
export async function adoptAudit(deps: Pick<AuditCommandDeps, 'auditChain'>): Promise<void> {
  if (deps.auditChain.publicKey === undefined)
    throw new InvalidArgumentError(
      'AUDIT_SIGNING_KEY is not set: an adoption is a checkpoint signed with it (docs/operations.md says how to make one)',
    );
  const adoption = await deps.auditChain.adopt();
  const at = (c: Pick<Checkpoint, 'seq' | 'createdAt'>) =>
    `checkpoint ${c.seq} of ${c.createdAt.toISOString()}`;
  switch (adoption.kind) {
    case 'nothing':
      process.stdout.write('Nothing to adopt: every checkpoint is signed, or an adoption signed for them.\n');
      return;
    case 'refused':
      throw new InvalidArgumentError(
        `${at(adoption.unsignedAfterSigned)} is not signed, and an earlier one is: that is a break, which an ` +
          'adoption does not sign for (`refhub audit verify` names it)',
      );
    case 'adopted':
      process.stdout.write(
        `Adopted ${plural(adoption.count, 'unsigned checkpoint')}, ` +
          (adoption.count === 1 ? at(adoption.oldest) : `${at(adoption.oldest)} to ${at(adoption.newest)}`) +
          `, with key ${JSON.stringify(deps.auditChain.publicKey.kid ?? null)}.\n`,
      );
  }
}

/** `chain X, row 3 (ID): problem`: where a trail breaks, as the commands print it. */
export function describeBreak(broken: Break): string {
  const row =
    broken.index !== undefined
      ? `, row ${broken.index}${broken.rowId === undefined ? '' : ` (${broken.rowId})`}`
      : broken.rowId === undefined
        ? ''
        : `, row ${broken.rowId}`;
  return `chain ${broken.chain}${row}: ${broken.problem}`;
}

function warn(message: string): void {
  process.stderr.write(`refhub: warning: ${message}\n`);
}

/** A broken trail is a finding, not a failure of the command: one line on stderr and exit status 1. */
function reportBroken(what: string, broken: Break): void {
  process.stderr.write(`refhub: ${what} broken: ${describeBreak(broken)}\n`);
  process.exitCode = 1;
}

function counts(v: { chains: number; rows: number; checkpoints: number; unsigned: number }): string {
  return `${plural(v.chains, 'chain')}, ${plural(v.rows, 'row')}, ${plural(v.checkpoints, 'checkpoint')} (${v.unsigned} unsigned)`;
}

/** Unsigned checkpoints that passed: with a key known, an adoption signed for them; without, none could. */
function warnUnsigned(unsigned: number, keyKnown: boolean): void {
  if (unsigned === 0) return;
  const are = plural(unsigned, 'checkpoint is', 'checkpoints are');
  warn(
    keyKnown
      ? `${are} unsigned, from before the trail was signed: an adoption signed for ` +
          (unsigned === 1 ? 'it as it was then' : 'them as they were then')
      : `${are} unsigned: set AUDIT_SIGNING_KEY, so that whoever can write to the database cannot also ` +
          'rewrite the heads',
  );
}

export async function verifyAudit(
  deps: Pick<AuditCommandDeps, 'auditChain'>,
  options: Pick<AuditVerifyOptions, 'since' | 'key'>,
): Promise<void> {
  const given = options.key === undefined ? [] : await readKeys(options.key);
  const keys = mergeKeys(deps.auditChain.publicKeys, given);
  const v = await deps.auditChain.verify(options.since, keys);
  if (v.broken !== undefined) {
    reportBroken('audit trail', v.broken);
    return;
  }
  process.stdout.write(`Audit trail intact: ${counts({ ...v, unsigned: v.unsignedCheckpoints })}.\n`);
  warnUnsigned(v.unsignedCheckpoints, keys.length > 0);
  if (keys.length === 0 && v.checkpoints > v.unsignedCheckpoints)
    warn(
      "the checkpoints' signatures were not checked: no public key is known here (AUDIT_SIGNING_KEY, " +
        'AUDIT_PUBLIC_KEYS or --key)',
    );
}

/**
 * The public JWK of AUDIT_SIGNING_KEY, as JSON on one line: what an auditor checks signatures with;
 * with `jwks`, a JWKS of it and of AUDIT_PUBLIC_KEYS', every key a checkpoint here may be signed with.
 */
export function printPublicKey(
  signingKey: JWK | undefined,
  earlierKeys: readonly JWK[] = [],
  options: AuditPublicKeyOptions = {},
): void {
  if (signingKey === undefined)
    throw new InvalidArgumentError(
      'AUDIT_SIGNING_KEY is not set, so the checkpoints are not signed and there is no public key ' +
        '(docs/operations.md says how to make one)',
    );
  const key = publicJwkOf(signingKey);
  const printed =
    options.jwks === true
      ? {
          keys: mergeKeys(
            [key],
            earlierKeys.filter((k) => k.kid !== key.kid).map((k) => publicJwkOf(k)),
          ),
        }
      : key;
  process.stdout.write(`${JSON.stringify(printed)}\n`);
}

// ---- The export ----------------------------------------------------------------------------------

/** Writes a line, waiting while a slow reader (a pipe) catches up. */
async function writeLine(line: string): Promise<void> {
  if (!process.stdout.write(`${line}\n`))
    await new Promise<void>((resolve) => {
      process.stdout.once('drain', () => {
        resolve();
      });
    });
}

export async function exportAudit(
  deps: Pick<AuditCommandDeps, 'auditChain'>,
  options: AuditExportOptions,
): Promise<void> {
  await writeExport(deps.auditChain, options, writeLine);
}

// ---- Verifying an export, offline ---------------------------------------------------------------

async function readKeys(file: string): Promise<JWK[]> {
  let value: unknown;
  try {
    value = JSON.parse(await readFile(file, 'utf8')) as unknown;
  } catch (error) {
    throw new InvalidArgumentError(`--key ${file}: cannot be read: ${(error as Error).message}`);
  }
  return publicKeysIn(value, file);
}

export async function verifyExportFile(options: Pick<AuditVerifyOptions, 'file' | 'key'>): Promise<void> {
  const file = options.file ?? '';
  let content: string;
  try {
    content = await readFile(file, 'utf8');
  } catch (error) {
    throw new InvalidArgumentError(`--file ${file}: cannot be read: ${(error as Error).message}`);
  }
  const parsed = parseExport(content, file);
  const keys = keysToCheck(parsed, options.key === undefined ? undefined : await readKeys(options.key));
  const signed = parsed.checkpoints.filter((c) => c.signature !== null).length;
  const v = await checkExport(parsed, keys);
  if (v.broken !== undefined) {
    reportBroken('audit export', v.broken);
    return;
  }
  const days =
    v.days === undefined
      ? 'no days'
      : v.days.from === v.days.to
        ? v.days.from
        : `${v.days.from} to ${v.days.to}`;
  process.stdout.write(
    `Audit export intact: ${counts({ ...v, unsigned: v.unsignedCheckpoints })}, of ${days}.\n`,
  );
  warnUnsigned(v.unsignedCheckpoints, keys.length > 0);
  if (options.key === undefined && signed > 0)
    warn(
      'the signatures were checked with the key the export itself holds: an auditor checks them with ' +
        'the public key obtained from the operator beforehand (--key)',
    );
}
