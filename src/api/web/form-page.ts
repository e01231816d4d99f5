// Builds what the form page shows from the referral as the services return it: the mode, the
// provider's request, the services to choose from, the files and the times, in the display zone.
import type { AttachmentView } from '../../domain/attachments.ts';
import type { DisplayTime } from '../../domain/display-time.ts';
import { isAllowed, senderChangeMode } from '../../domain/lifecycle.ts';
import type { OfferingView, ReferralView } from '../../domain/referral-view.ts';
import type { Status } from '../../domain/statuses.ts';
import type { OfferingRecord } from '../../db/catalog.repository.ts';
import type { SummaryError } from '../../render/pages/form-controls.ts';
import type { Choice } from '../../render/pages/referral-form-fields.ts';
import type { OfferingChoice } from '../../render/pages/offering-choice.ts';
import type { Notice, ReferralFormModel } from '../../render/pages/referral-form.page.ts';
import { fileItems, fileUpload, type FileRules } from './attachments-items.ts';
import type { FormValues } from './form-input.ts';
import type { WebSession } from './session.ts';

export type FormMode = 'edit' | 'respond';

/** The form's mode for a status, or undefined when the sender can no longer change the referral. */
export function modeFor(status: Status): FormMode | undefined {
  return senderChangeMode(status);
}

/** Whether the sender may remove files now: from a draft only (the lifecycle table's rule). */
export function filesRemovable(status: Status): boolean {
  return isAllowed('remove-attachment', 'sender', { status, offeringCancellable: true });
}

function choiceOf(offering: OfferingView, inactive: boolean, waitHint?: string): OfferingChoice {
  return {
    ...(waitHint === undefined ? {} : { waitHint }),
    id: offering.id,
    name: offering.name,
    category: offering.category,
    description: offering.description,
    specialty: offering.specialty,
    providerName: offering.institution.name,
    inactive,
  };
}

/**
 * The active services, and the referral's own service even if it has since been deactivated, each with
 * how soon it usually accepts referrals where its wait times have enough data (`waitHints`).
 */
export function offeringChoices(
  catalog: readonly OfferingRecord[],
  currentId: string | null,
  waitHints: ReadonlyMap<string, string> = new Map(),
): OfferingChoice[] {
  return catalog
    .filter((o) => o.active || o.id === currentId)
    .map((o) => choiceOf(o, !o.active, waitHints.get(o.id)));
}

/** The latest request from the provider, which the sender is responding to. */
function providerRequest(view: ReferralView, display: DisplayTime): ReferralFormModel['providerRequest'] {
  const event = view.timelineEvents.findLast((e) => e.type === 'referral.sender-action-required');
  return event === undefined
    ? null
    : { text: event.description, at: display.dateTime(event.producedAt), reason: event.reason ?? null };
}

export interface FormPageInput {
  readonly nonce: string;
  readonly view: ReferralView;
  readonly mode: FormMode;
  readonly session: WebSession;
  readonly csrfToken: string;
  readonly values: FormValues;
  readonly errors?: readonly SummaryError[];
  readonly notice?: Notice;
  /** The version the next save is checked against; the view's own unless a save moved it on. */
  readonly version?: number;
  readonly catalog: readonly OfferingRecord[];
  /** "Usually accepted within 3 days" by offering, for those whose wait times have enough data. */
  readonly waitHints?: ReadonlyMap<string, string>;
  readonly countries: readonly Choice[];
  readonly display: DisplayTime;
  readonly files: readonly AttachmentView[];
  readonly fileRules: FileRules & { readonly scanned: boolean };
  /** Why the last file was refused, shown by the file input and in the summary. */
  readonly uploadError?: string;
}

export function formPageModel(input: FormPageInput): ReferralFormModel {
  const { view, mode } = input;
  const removable = filesRemovable(view.status);
  return {
    nonce: input.nonce,
    mode,
    referralId: view.id,
    version: input.version ?? view.version,
    status: view.status,
    senderName: view.sender.name,
    person: input.session.requesterIdentifier,
    lastSaved: input.display.dateTime(view.updatedAt),
    priority: view.priority?.display ?? null,
    sessionEnds: input.display.time(input.session.expiresAt),
    csrfToken: input.csrfToken,
    action: `/form/${view.id}`,
    values: input.values,
    // The service has no control to link to while it is fixed: its errors stand in the summary alone.
    errors: [
      ...(input.errors ?? []).map((e) =>
        mode === 'respond' && e.field === 'offeringId' ? { field: null, message: e.message } : e,
      ),
      ...(input.uploadError === undefined ? [] : [{ field: 'file' as const, message: input.uploadError }]),
    ],
    ...(input.notice === undefined ? {} : { notice: input.notice }),
    offerings:
      mode === 'edit' ? offeringChoices(input.catalog, view.offering?.id ?? null, input.waitHints) : [],
    fixedOffering: view.offering === null ? null : choiceOf(view.offering, false),
    providerRequest: mode === 'respond' ? providerRequest(view, input.display) : null,
    countries: input.countries,
    files: {
      items: fileItems(input.files, input.display, { download: 'form', removable }),
      upload: view.allowedActions.includes('add-attachment')
        ? fileUpload(view.id, input.fileRules, input.uploadError)
        : null,
      scanned: input.fileRules.scanned,
      removable,
    },
  };
}
