// The audit export's format (NDJSON), as `refhub audit export` writes it and `refhub audit verify
// --file` reads it, and the check of a parsed export: the rules of audit-chain-check.ts, with no
// database (docs/security.md, "The export" and "Verifying an export offline"). An export written
// before the second forms (no `hashForm`, `claimedInstitution`, `form` or `prevHash`) reads as of the
// first forms, so it still verifies.
//
// An export is a line naming the days exported, one line per sealed row of those days' chains in
// chain order, the run of checkpoints from the first that names one of those chains to the last (each
// linked to the one before), and every public key known here: AUDIT_SIGNING_KEY's and
// AUDIT_PUBLIC_KEYS'. Audit rows hold no patient data, and neither does an export. The command layer
// only reads files and prints (cli/audit.command.ts).
import type { JWK } from 'jose';
import type { AuditChainRow, Checkpoint } from '../../db/audit/audit-chain.repository.ts';
import { dayOfChain, isHashForm } from '../../domain/audit-chain.ts';
import { checkChain, checkCheckpoints, publicJwkOf, type Break, type ChainRow } from './audit-chain-check.ts';
import type { AuditChain, ExportItem } from './audit-chain.service.ts';

/** An export, or the keys given to check one, that is not as the format says: the operator's to fix. */
export class AuditExportError extends Error {
  override readonly name = 'AuditExportError';
}

/** The line of an export for a row: its content, then what the sealer set. */
export function rowLine(row: AuditChainRow): string {
  return JSON.stringify({
    type: 'row',
    chain: row.chain,
    chainIndex: row.chainIndex,
    prevHash: row.prevHash,
    rowHash: row.rowHash,
    hashForm: row.hashForm,
    id: row.id,
    occurredAt: row.occurredAt.toISOString(),
    requestId: row.requestId,
    apiKeyId: row.apiKeyId,
    system: row.system,
    institution: row.institution,
    claimedInstitution: row.claimedInstitution,
    requesterIdentifier: row.requesterIdentifier,
    action: row.action,
    outcome: row.outcome,
    referralIds: row.referralIds,
    sealedAt: row.sealedAt?.toISOString() ?? null,
  });
}

export function checkpointLine(checkpoint: Checkpoint): string {
  return JSON.stringify({
    type: 'checkpoint',
    createdAt: checkpoint.createdAt.toISOString(),
    heads: checkpoint.heads,
    signature: checkpoint.signature,
    keyId: checkpoint.keyId,
    form: checkpoint.form,
    prevHash: checkpoint.prevHash,
  });
}

interface ExportRow extends ChainRow {
  readonly chain: string;
}

export interface ParsedExport {
  readonly days?: { readonly from: string; readonly to: string };
  readonly rows: readonly ExportRow[];
  readonly checkpoints: readonly Checkpoint[];
  readonly keys: readonly JWK[];
}

type Json = Record<string, unknown>;

const HASH = /^[0-9a-f]{64}$/;
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

export function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
function text(value: unknown): value is string {
  return typeof value === 'string';
}
function textOrNull(value: unknown): value is string | null {
  return value === null || typeof value === 'string';
}
function time(value: unknown): Date | undefined {
  return text(value) && ISO_TIME.test(value) && !Number.isNaN(Date.parse(value))
    ? new Date(value)
    : undefined;
}

function institutionOrNull(value: unknown): { idType: string; id: string } | null | undefined {
  if (value === null) return null;
  return isObject(value) && text(value.idType) && text(value.id)
    ? { idType: value.idType, id: value.id }
    : undefined;
}

/**
 * A row line. An export written before the second hash form has no `hashForm` and no
 * `claimedInstitution`: its rows are of form 1 and claim nothing.
 */
function parseRow(o: Json): ExportRow | string {
  const occurredAt = time(o.occurredAt);
  const sealedAt = time(o.sealedAt);
  const institution = institutionOrNull(o.institution);
  const claimedInstitution =
    o.claimedInstitution === undefined ? null : institutionOrNull(o.claimedInstitution);
  const hashForm = o.hashForm === undefined ? 1 : o.hashForm;
  if (!text(o.chain) || !Number.isSafeInteger(o.chainIndex) || (o.chainIndex as number) < 1)
    return 'a row needs its chain and chainIndex';
  if (!text(o.prevHash) || !HASH.test(o.prevHash) || !text(o.rowHash) || !HASH.test(o.rowHash))
    return 'a row needs prevHash and rowHash, each 64 hex digits';
  if (occurredAt === undefined || sealedAt === undefined)
    return 'a row needs occurredAt and sealedAt, ISO 8601 times in UTC';
  if (!isHashForm(hashForm)) return 'a row needs hashForm, 1 or 2';
  if (
    !text(o.id) ||
    !text(o.requestId) ||
    !textOrNull(o.apiKeyId) ||
    !textOrNull(o.system) ||
    !textOrNull(o.requesterIdentifier) ||
    !text(o.action) ||
    !text(o.outcome) ||
    !Array.isArray(o.referralIds) ||
    !o.referralIds.every(text) ||
    institution === undefined ||
    claimedInstitution === undefined
  )
    return 'a row needs id, requestId, apiKeyId, system, institution, claimedInstitution, requesterIdentifier, action, outcome and referralIds';
  return {
    chain: o.chain,
    chainIndex: o.chainIndex as number,
    prevHash: o.prevHash,
    rowHash: o.rowHash,
    sealedAt,
    hashForm,
    id: o.id,
    occurredAt,
    requestId: o.requestId,
    apiKeyId: o.apiKeyId,
    system: o.system,
    institution,
    claimedInstitution,
    requesterIdentifier: o.requesterIdentifier,
    action: o.action,
    outcome: o.outcome,
    referralIds: o.referralIds,
  };
}

/** A checkpoint line; one written before checkpoints were linked has no `form`: it is of form 1. */
function parseCheckpoint(o: Json, seq: number): Checkpoint | string {
  const createdAt = time(o.createdAt);
  const heads = o.heads;
  const form = o.form === undefined ? 1 : o.form;
  const prevHash = o.prevHash === undefined ? null : o.prevHash;
  if (createdAt === undefined) return 'a checkpoint needs createdAt, an ISO 8601 time in UTC';
  if (!isObject(heads)) return 'a checkpoint needs its heads, an object';
  for (const head of Object.values(heads)) {
    if (!isObject(head) || !Number.isSafeInteger(head.index) || !text(head.hash))
      return 'each head of a checkpoint is {"index", "hash"}';
  }
  if (!textOrNull(o.signature) || !textOrNull(o.keyId)) return 'a checkpoint needs signature and keyId';
  if (!(form === 1 && prevHash === null) && !(form === 2 && text(prevHash) && HASH.test(prevHash)))
    return 'a checkpoint needs form, 1 (with a null prevHash) or 2 (with prevHash, 64 hex digits)';
  return {
    seq: String(seq),
    createdAt,
    heads: heads as Checkpoint['heads'],
    signature: o.signature,
    keyId: o.keyId,
    form,
    prevHash,
  };
}

/** Reads an export; a line that is not one of its kinds stops with its number. */
export function parseExport(content: string, file: string): ParsedExport {
  let days: ParsedExport['days'];
  const rows: ExportRow[] = [];
  const checkpoints: Checkpoint[] = [];
  const keys: JWK[] = [];
  const lines = content.split('\n');
  lines.forEach((line, i) => {
    if (line.trim() === '') return;
    const refuse = (why: string): never => {
      throw new AuditExportError(`${file}, line ${i + 1}: not a line of an audit export: ${why}`);
    };
    let o: unknown;
    try {
      o = JSON.parse(line) as unknown;
    } catch {
      return refuse('not JSON');
    }
    if (!isObject(o)) return refuse('not a JSON object');
    if (o.type === 'export') {
      if (!text(o.from) || !text(o.to) || days !== undefined)
        return refuse('one export line, with from and to');
      days = { from: o.from, to: o.to };
    } else if (o.type === 'row') {
      const row = parseRow(o);
      if (typeof row === 'string') return refuse(row);
      rows.push(row);
    } else if (o.type === 'checkpoint') {
      const checkpoint = parseCheckpoint(o, checkpoints.length + 1);
      if (typeof checkpoint === 'string') return refuse(checkpoint);
      checkpoints.push(checkpoint);
    } else if (o.type === 'key') {
      const jwk = o.jwk;
      if (!isObject(jwk) || !text(jwk.kty)) return refuse('a key line holds a public JWK');
      keys.push(jwk);
    } else {
      return refuse('its type is none of export, row, checkpoint and key');
    }
  });
  return { ...(days === undefined ? {} : { days }), rows, checkpoints, keys };
}

export interface ExportVerification {
  readonly days: { readonly from: string; readonly to: string } | undefined;
  readonly chains: number;
  readonly rows: number;
  readonly checkpoints: number;
  readonly unsignedCheckpoints: number;
  readonly broken?: Break;
}

/**
 * Checks an export with `keys` (the auditor's, by `kid`; none for an export of unsigned checkpoints):
 * the run of checkpoints, each linked to the one before and its signature holding, then each chain
 * of the exported days, whole from its first row, against every head the checkpoints recorded for it.
 * An export is taken from one snapshot, so each chain must end exactly at its last head, and a chain
 * no checkpoint names was not sealed by refhub.
 */
export async function checkExport(parsed: ParsedExport, keys: readonly JWK[]): Promise<ExportVerification> {
  const rowDays = parsed.rows.map((r) => dayOfChain(r.chain)).sort();
  const [first, last] = [rowDays[0], rowDays.at(-1)];
  const days =
    parsed.days ?? (first === undefined || last === undefined ? undefined : { from: first, to: last });
  const inDays = (chain: string) =>
    days !== undefined && dayOfChain(chain) >= days.from && dayOfChain(chain) <= days.to;
  const base = { days, checkpoints: parsed.checkpoints.length };

  const checked = await checkCheckpoints(parsed.checkpoints, {
    keys: keys.length === 0 ? undefined : keys,
    whole: false,
    unsignedHint:
      ' (an export of days before the trail was signed, and not adopted, is checked without a key)',
  });
  if (checked.broken !== undefined)
    return { ...base, chains: 0, rows: 0, unsignedCheckpoints: checked.unsigned, broken: checked.broken };

  const byChain = new Map<string, ExportRow[]>();
  for (const row of parsed.rows) byChain.set(row.chain, [...(byChain.get(row.chain) ?? []), row]);
  const chains = [...new Set([...byChain.keys(), ...[...checked.heads.keys()].filter(inDays)])].sort();
  let rows = 0;
  const result = (broken?: Break): ExportVerification => ({
    ...base,
    chains: chains.length,
    rows,
    unsignedCheckpoints: checked.unsigned,
    ...(broken === undefined ? {} : { broken }),
  });
  for (const chain of chains) {
    const heads = checked.heads.get(chain) ?? [];
    if (!inDays(chain))
      return result({
        chain,
        problem: `the chain is not of the days exported, ${days?.from} to ${days?.to}`,
      });
    if (heads.length === 0)
      return result({
        chain,
        problem:
          'no checkpoint in the export names the chain: its checkpoints were removed, or it was made up',
      });
    const checkedChain = checkChain(chain, byChain.get(chain) ?? [], heads);
    rows += checkedChain.rows;
    if (checkedChain.broken !== undefined) return result(checkedChain.broken);
  }
  return result();
}

/**
 * The keys of `lists` together, each `kid` once: two different keys under one `kid` cannot both check
 * the checkpoints that name it.
 */
export function mergeKeys(...lists: (readonly JWK[])[]): JWK[] {
  const keys: JWK[] = [];
  for (const key of lists.flat()) {
    const same = keys.find((k) => k.kid === key.kid);
    if (same === undefined) keys.push(key);
    else if (same.x !== key.x)
      throw new AuditExportError(
        `two different public keys have the kid ${JSON.stringify(key.kid ?? null)}: each key needs a kid of its own`,
      );
  }
  return keys;
}

/** The public keys a key file holds (`value`, its JSON): one public Ed25519 JWK, or a JWKS of them. */
export function publicKeysIn(value: unknown, file: string): JWK[] {
  const keys: unknown[] = isObject(value) && Array.isArray(value.keys) ? value.keys : [value];
  if (keys.length === 0 || keys.some((k) => !isObject(k) || k.kty !== 'OKP' || k.crv !== 'Ed25519'))
    throw new AuditExportError(`--key ${file}: must hold a public Ed25519 JWK, or a JWKS of them`);
  return keys.map((k) => publicJwkOf(k as JWK));
}

/**
 * Writes the export of the days `from` to `to` (YYYY-MM-DD) a line at a time with `writeLine`: the
 * line naming the days, the rows, the checkpoints, then the public keys.
 */
export async function writeExport(
  chain: Pick<AuditChain, 'exportTrail' | 'publicKeys'>,
  days: { readonly from: string; readonly to: string },
  writeLine: (line: string) => Promise<void>,
): Promise<void> {
  if (days.from > days.to) throw new AuditExportError('--from must not be after --to');
  await writeLine(JSON.stringify({ type: 'export', from: days.from, to: days.to }));
  await chain.exportTrail(days.from, days.to, (item: ExportItem) =>
    writeLine(item.type === 'row' ? rowLine(item.row) : checkpointLine(item.checkpoint)),
  );
  for (const jwk of chain.publicKeys) await writeLine(JSON.stringify({ type: 'key', jwk }));
}

/**
 * The keys an export is checked with: those given (`--key`), or else the ones the export holds.
 * Signed checkpoints with no key to check them are refused.
 */
export function keysToCheck(parsed: ParsedExport, given: readonly JWK[] | undefined): JWK[] {
  const keys = mergeKeys(given ?? parsed.keys.map((k) => publicJwkOf(k)));
  if (parsed.checkpoints.some((c) => c.signature !== null) && keys.length === 0)
    throw new AuditExportError(
      "the export's checkpoints are signed, and there is no public key to check them with: give one with --key",
    );
  return keys;
}
