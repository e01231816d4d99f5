// Which buttons (`links[]`) a party gets for a referral in a given status (contract §6).
import type { LinkAction } from './referral-view.ts';
import type { Party, Status } from './statuses.ts';

export const LINK_LABELS: Readonly<Record<LinkAction, string>> = {
  edit: 'Continue editing',
  respond: 'Respond to request',
  print: 'Print referral',
  view: 'View referral',
};

export function linkActionsFor(status: Status, parties: readonly Party[]): LinkAction[] {
  const actions: LinkAction[] = [];
  if (parties.includes('sender')) {
    if (status === 'draft') actions.push('edit');
    if (status === 'sender-action-required') actions.push('respond');
  }
  if (status !== 'draft') actions.push('print');
  actions.push('view');
  return actions;
}

/** The link a link upsert hands out: the one that lets the sender change the referral now. */
export function upsertLinkAction(status: Status): LinkAction | undefined {
  if (status === 'draft') return 'edit';
  if (status === 'sender-action-required') return 'respond';
  return undefined;
}
