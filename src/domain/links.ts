// Which buttons (`links[]`) a party gets for a referral in a given status (contract §6), as the
// lifecycle table allows: the sender's `edit` or `respond` exactly while it may update the referral.
import { DRAFT, senderChangeMode } from './lifecycle.ts';
import type { LinkAction } from './referral-view.ts';
import { STATUSES, type Party, type Status } from './statuses.ts';

/** The system a clinician acts as in the web form a one-time link opened. */
export const WEB_FORM_SYSTEM = 'Manual';

export const LINK_LABELS: Readonly<Record<LinkAction, string>> = {
  edit: 'Continue editing',
  respond: 'Respond to request',
  print: 'Print referral',
  view: 'View referral',
};

export function linkActionsFor(status: Status, parties: readonly Party[]): LinkAction[] {
  const actions: LinkAction[] = [];
  const change = parties.includes('sender') ? senderChangeMode(status) : undefined;
  if (change !== undefined) actions.push(change);
  // Once submitted, there is a referral letter to print.
  if (status !== DRAFT) actions.push('print');
  actions.push('view');
  return actions;
}

/** The link a link upsert hands out: the one that lets the sender change the referral now. */
export function upsertLinkAction(status: Status): LinkAction | undefined {
  return senderChangeMode(status);
}

/**
 * `linkActionsFor` turned around: for each action, the statuses in which the sender gets its link,
 * and those in which another party does. A read that stores its links in the statement that reads the
 * referral's status offers each action with these, and the statement keeps the ones that apply.
 */
export const LINK_STATUSES: Readonly<Record<LinkAction, { asSender: Status[]; asOther: Status[] }>> = (() => {
  const table = Object.fromEntries(
    (Object.keys(LINK_LABELS) as LinkAction[]).map((action) => [
      action,
      { asSender: [] as Status[], asOther: [] as Status[] },
    ]),
  ) as Record<LinkAction, { asSender: Status[]; asOther: Status[] }>;
  for (const status of STATUSES) {
    for (const action of linkActionsFor(status, ['sender'])) table[action].asSender.push(status);
    for (const action of linkActionsFor(status, ['provider'])) table[action].asOther.push(status);
  }
  return table;
})();
