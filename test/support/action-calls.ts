// The API call behind each action of allowedActions/blockedActions (docs/api.md, "Allowed and
// blocked actions"), with a valid body: a test calls an action as a client would after reading it.
import fs from 'node:fs';
import type { InjectOptions } from 'fastify';
import { DEMO_CATALOG_FILE } from '../../src/composition/demo-setup.ts';
import { REQUESTER } from './referral-routes.ts';
import type { TestParty } from './test-app.ts';

export type ActionName =
  | 'edit'
  | 'submit'
  | 'delete'
  | 'back-to-draft'
  | 'cancel'
  | 'redirect'
  | 'accept'
  | 'reject'
  | 'request-action'
  | 'upsert-appointment'
  | 'complete'
  | 'acknowledge-outcome'
  | 'add-note'
  | 'add-attachment';

/** What varies in a valid call: the texts it sends, the reason it gives and the appointment it writes. */
export interface ActionInput {
  readonly text: string;
  readonly appointmentId: string;
  readonly appointmentStatus: 'scheduled' | 'actualized' | 'no-show' | 'cancelled';
  readonly startAt: string;
  /**
   * For an action that takes a reason: which of the demo catalog's codes for it to give (an index,
   * taken modulo their number), beside the text; undefined gives the text alone.
   */
  readonly reasonPick?: number | undefined;
}

/** The operations that take a coded reason, as the API names them. */
export type ReasonedAction = Extract<
  ActionName,
  'back-to-draft' | 'cancel' | 'redirect' | 'reject' | 'request-action'
>;

const DEMO_REASONS = (
  JSON.parse(fs.readFileSync(DEMO_CATALOG_FILE, 'utf8')) as {
    reasons: { code: string; display: string; actions: string[] }[];
  }
).reasons;

/** The demo catalog's reason for `action` that `pick` chooses, or undefined without a pick. */
export function reasonOf(
  action: ReasonedAction,
  pick: number | undefined,
): { readonly code: string; readonly display: string } | undefined {
  if (pick === undefined) return undefined;
  const codes = DEMO_REASONS.filter((r) => r.actions.includes(action));
  const chosen = codes[pick % codes.length];
  return chosen === undefined ? undefined : { code: chosen.code, display: chosen.display };
}

/** The offering the redirect of a test referral hands it on to: another provider's (Eastside's). */
export const REDIRECT_OFFERING = 'erh-cardio';

export const DEFAULT_ACTION_INPUT: ActionInput = {
  text: 'Patient recovered',
  appointmentId: 'appt-1',
  appointmentStatus: 'scheduled',
  startAt: new Date(Date.now() + 30 * 86_400_000).toISOString(),
};

/** The success status of each action's call. */
export const SUCCESS_STATUS: Readonly<Record<ActionName, number>> = {
  edit: 200,
  submit: 200,
  delete: 200,
  'back-to-draft': 200,
  cancel: 200,
  redirect: 200,
  accept: 200,
  reject: 200,
  'request-action': 200,
  'upsert-appointment': 200,
  complete: 200,
  'acknowledge-outcome': 200,
  'add-note': 201,
  'add-attachment': 201,
};

export function actionRequest(
  action: ActionName,
  id: string,
  as: TestParty,
  input: ActionInput = DEFAULT_ACTION_INPUT,
): InjectOptions {
  const url = `/api/v1/referrals/${id}`;
  const coded = (reasoned: ReasonedAction) => {
    const reason = reasonOf(reasoned, input.reasonPick);
    return reason === undefined ? {} : { reasonCode: reason.code };
  };
  const post = (path: string, body: Record<string, unknown> = {}): InjectOptions => ({
    method: 'POST',
    url: `${url}/${path}`,
    payload: { ...as.institution, ...body },
  });
  switch (action) {
    case 'edit':
      return { method: 'PATCH', url, payload: { ...as.institution, clinicalInfo: input.text } };
    case 'submit':
      return post('submit');
    case 'delete':
      return { method: 'DELETE', url, query: { ...as.institution } };
    case 'back-to-draft':
      return post('back-to-draft', { ...coded('back-to-draft'), comment: input.text });
    case 'cancel':
      return post('cancel', { ...coded('cancel'), cancelNote: input.text });
    case 'redirect':
      // The test referrals are for cgh-gastro (Central General Hospital): to Eastside's cardiology,
      // which takes every priority. A redirect always gives a code: the first one without a pick.
      return post('redirect', {
        offeringId: REDIRECT_OFFERING,
        reasonCode: reasonOf('redirect', input.reasonPick ?? 0)?.code,
        comment: input.text,
      });
    case 'accept':
      return post('accept');
    case 'reject':
      return post('reject', { ...coded('reject'), reason: input.text });
    case 'request-action':
      return post('request-action', { ...coded('request-action'), reason: input.text });
    case 'upsert-appointment':
      return {
        method: 'PUT',
        url: `${url}/appointments/${input.appointmentId}`,
        payload: {
          ...as.institution,
          status: input.appointmentStatus,
          startAt: input.startAt,
          location: input.text,
        },
      };
    case 'complete':
      return post('complete', { outcomeCode: 'seen-discharged', summary: input.text });
    case 'acknowledge-outcome':
      return post('acknowledge-outcome');
    case 'add-note':
      return post('notes', { content: input.text });
    case 'add-attachment':
      return {
        method: 'POST',
        url: `${url}/attachments`,
        query: { ...as.institution },
        headers: { 'content-type': 'text/plain', 'content-disposition': 'attachment; filename="notes.txt"' },
        payload: input.text,
      };
  }
}

/** The GET of a referral as `as` reads it. */
export function getRequest(id: string, as: TestParty): InjectOptions {
  return {
    method: 'GET',
    url: `/api/v1/referrals/${id}`,
    query: { ...as.institution, requesterIdentifier: REQUESTER },
  };
}
