// The requests fault tests send to a running `refhub api`: drafts whose clinical information carries a
// marker (so a test can count, through the API, how many referrals one logical create produced),
// Idempotency-Keys for them, the paths of the calls a clinic system makes, and the create-and-submit
// sequence that starts a forward.
import { messageIdOf } from '../../src/domain/ids.ts';
import { PATIENT } from './fixtures/patients.ts';
import { jsonOf, type ApiOutcome, type RefhubClient } from './refhub-client.ts';

/** Bukit Timah Family Clinic, the sender every fault test acts for. */
export const SENDER_INSTITUTION = { institutionIdType: 'hci', institutionId: 'S1234A' } as const;
export const REQUESTER_IDENTIFIER = 'dr.tan@example.org';

/** A complete draft to cgh-gastro, told apart from every other by `marker`. */
export function draftBody(marker: string): Record<string, unknown> {
  return {
    ...SENDER_INSTITUTION,
    offeringId: 'cgh-gastro',
    ...PATIENT,
    clinicalInfo: `Dyspepsia for 3 months. Request ${marker}.`,
  };
}

/** The marker `draftBody` put into a referral's clinical information, or undefined. */
export function markerOf(clinicalInfo: unknown): string | undefined {
  return typeof clinicalInfo === 'string' ? /Request (\S+)\.$/.exec(clinicalInfo)?.[1] : undefined;
}

export interface KeyedCreate {
  /** The Idempotency-Key, unique to this run. */
  readonly key: string;
  readonly marker: string;
  readonly body: Record<string, unknown>;
}

/** `count` creates, each with an Idempotency-Key and a body of its own. */
export function keyedCreates(count: number, run: string): KeyedCreate[] {
  return Array.from({ length: count }, (_, i) => {
    const marker = `${run}-${String(i).padStart(3, '0')}`;
    return { key: `create-${marker}`, marker, body: draftBody(marker) };
  });
}

export const CREATE_PATH = '/api/v1/referrals';
export const submitPath = (id: string) => `/api/v1/referrals/${id}/submit`;
export const readPath = (id: string) =>
  `/api/v1/referrals/${id}?${new URLSearchParams({ requesterIdentifier: REQUESTER_IDENTIFIER, ...SENDER_INSTITUTION }).toString()}`;
/** The sender's referrals, newest first, up to the largest page. */
export const listPath = (offset = 0) =>
  `/api/v1/institutions/${SENDER_INSTITUTION.institutionIdType}/${SENDER_INSTITUTION.institutionId}/referrals?role=sender&pageSize=1000&offset=${offset}`;

/** Whether an outcome is an answer with a 2xx status. */
export function succeeded(outcome: ApiOutcome): boolean {
  return outcome.kind === 'answer' && outcome.status >= 200 && outcome.status < 300;
}

function described(outcome: ApiOutcome): string {
  return outcome.kind === 'answer' ? `${outcome.status} ${outcome.body.slice(0, 300)}` : outcome.code;
}

export interface SubmittedReferral {
  readonly id: string;
  /** The message ID its submitted version is forwarded under. */
  readonly messageId: string;
}

/** Creates a draft and submits it, as a clinic system does; throws with the answer if either fails. */
export async function createAndSubmit(
  client: RefhubClient,
  base: string,
  marker: string,
): Promise<SubmittedReferral> {
  const created = await client.send(base, 'POST', CREATE_PATH, { body: draftBody(marker) });
  const draft = jsonOf(created) as { id: string } | undefined;
  if (created.kind !== 'answer' || created.status !== 201 || draft === undefined) {
    throw new Error(`creating draft ${marker} answered ${described(created)}`);
  }
  const submitted = await client.send(base, 'POST', submitPath(draft.id), {
    body: { ...SENDER_INSTITUTION },
  });
  const referral = jsonOf(submitted) as { id: string; version: number } | undefined;
  if (submitted.kind !== 'answer' || submitted.status !== 200 || referral === undefined) {
    throw new Error(`submitting ${draft.id} answered ${described(submitted)}`);
  }
  return { id: referral.id, messageId: messageIdOf(referral.id, referral.version) };
}

/** Creates and submits `count` referrals, `concurrency` at a time; every request must succeed. */
export async function submitMany(
  client: RefhubClient,
  base: string,
  count: number,
  run: string,
  concurrency = 8,
): Promise<SubmittedReferral[]> {
  const out: SubmittedReferral[] = [];
  for (let start = 0; start < count; start += concurrency) {
    const batch = Array.from({ length: Math.min(concurrency, count - start) }, (_, k) => start + k);
    out.push(...(await Promise.all(batch.map((i) => createAndSubmit(client, base, `${run}-${i}`)))));
  }
  return out;
}

/** Each referral's `ehrForwarding.state`, read through the API. */
export async function forwardingStates(
  client: RefhubClient,
  base: string,
  ids: readonly string[],
): Promise<Map<string, string>> {
  const states = new Map<string, string>();
  for (const id of ids) {
    const read = await client.send(base, 'GET', readPath(id));
    states.set(
      id,
      (jsonOf(read) as { ehrForwarding?: { state: string } } | undefined)?.ehrForwarding?.state ??
        described(read),
    );
  }
  return states;
}
