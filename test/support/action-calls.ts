// The API call behind each action of allowedActions/blockedActions (docs/api.md, "Allowed and
// blocked actions"), with a valid body: a test calls an action as a client would after reading it.
import type { InjectOptions } from 'fastify';
import { REQUESTER } from './referral-routes.ts';
import type { TestParty } from './test-app.ts';

export type ActionName =
  | 'edit'
  | 'submit'
  | 'delete'
  | 'back-to-draft'
  | 'cancel'
  | 'accept'
  | 'reject'
  | 'request-action'
  | 'upsert-appointment'
  | 'complete'
  | 'acknowledge-outcome'
  | 'add-note'
  | 'add-attachment';

/** What varies in a valid call: the texts it sends and the appointment it writes. */
export interface ActionInput {
  readonly text: string;
  readonly appointmentId: string;
  readonly appointmentStatus: 'scheduled' | 'actualized' | 'no-show' | 'cancelled';
  readonly startAt: string;
}

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
      return post('back-to-draft');
    case 'cancel':
      return post('cancel', { cancelNote: input.text });
    case 'accept':
      return post('accept');
    case 'reject':
      return post('reject', { reason: input.text });
    case 'request-action':
      return post('request-action', { reason: input.text });
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
