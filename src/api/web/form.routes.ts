// The form behind `edit` and `respond` links: GET shows it, POST saves it ("Save draft") or saves and
// submits it ("Submit"), through the same referral commands as the API (update, then submit), so the
// same validation, lifecycle, timeline, outbox and audit apply. Success redirects (303), so a reload
// never posts twice; an error shows the form again, holding what the person typed.
//
// A save is checked against the version the page was drawn from (If-Match): if the referral changed
// meanwhile, nothing is overwritten and the person is told.
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { ApiDeps } from '../api-deps.ts';
import type { ReferralView } from '../../domain/referral-view.ts';
import { IncompleteReferralError, ValidationError, VersionMismatchError } from '../../errors.ts';
import type { SummaryError } from '../../render/pages/form-controls.ts';
import type { Choice } from '../../render/pages/referral-form-fields.ts';
import { renderReferralFormPage, type Notice } from '../../render/pages/referral-form.page.ts';
import { renderSubmittedPage } from '../../render/pages/submitted.page.ts';
import { createReferralFieldsCheck } from '../../services/referral-fields.ts';
import {
  blankEntries,
  changesFrom,
  EDITABLE_FIELDS,
  formErrors,
  readForm,
  valuesOf,
  type FormValues,
} from './form-input.ts';
import { formPageModel, modeFor, type FormMode } from './form-page.ts';
import { referralIdOf, notEditable } from './referral-pages.ts';
import type { OpenSession, SessionGate } from './session-gate.ts';
import { sendPage, WebPageError } from './web-pages.ts';

const SAVED: Notice = {
  tone: 'success',
  title: 'Draft saved',
  text: 'Nothing has been sent to the provider yet.',
};

export type FormRoutesDeps = Pick<
  ApiDeps,
  'catalog' | 'referralQueries' | 'referralCommands' | 'displayTime'
>;

export function formRoutes(deps: FormRoutesDeps, gate: SessionGate, countries: readonly Choice[]) {
  const checkFields = createReferralFieldsCheck();

  async function showForm(
    reply: FastifyReply,
    status: number,
    open: OpenSession,
    view: ReferralView,
    mode: FormMode,
    extra: { values?: FormValues; errors?: readonly SummaryError[]; notice?: Notice; version?: number } = {},
  ): Promise<FastifyReply> {
    const catalog = mode === 'edit' ? await deps.catalog.listOfferings() : [];
    return sendPage(reply, status, (nonce) =>
      renderReferralFormPage(
        formPageModel({
          nonce,
          view,
          mode,
          session: open.session,
          csrfToken: gate.csrfToken(open.session),
          values: extra.values ?? valuesOf(view),
          ...(extra.errors === undefined ? {} : { errors: extra.errors }),
          ...(extra.notice === undefined ? {} : { notice: extra.notice }),
          ...(extra.version === undefined ? {} : { version: extra.version }),
          catalog,
          countries,
          display: deps.displayTime,
        }),
      ),
    );
  }

  /** The referral for an open session, when the sender may still change it. */
  async function editable(open: OpenSession, id: string): Promise<{ view: ReferralView; mode: FormMode }> {
    const view = await deps.referralQueries.get(open.caller, id, { ehrForm: false });
    const mode = modeFor(view.status);
    if (mode === undefined) throw notEditable(view.status);
    return { view, mode };
  }

  return (app: FastifyInstance) => {
    app.get('/form/:referralId', { schema: { hide: true } }, async (request, reply) => {
      const id = referralIdOf(request.params);
      const open = await gate.open(request, id, 'form');
      const { view, mode } = await editable(open, id);
      const saved = (request.query as Record<string, unknown>).saved === '1';
      return showForm(reply, 200, open, view, mode, saved ? { notice: SAVED } : {});
    });

    app.post('/form/:referralId', { schema: { hide: true } }, async (request, reply) => {
      const id = referralIdOf(request.params);
      const open = await gate.open(request, id, 'form');
      const posted = readForm(request.body);
      gate.checkPost(request, open.session, posted.csrfToken);
      if (posted.version === undefined) {
        throw new WebPageError(400, 'The form could not be read', [
          'Nothing was saved. Go back and try again.',
        ]);
      }
      const { view, mode } = await editable(open, id);
      const again = (status: number, extra: Parameters<typeof showForm>[5]) =>
        showForm(reply, status, open, view, mode, { values: posted.values, ...extra });
      // Drawn from the referral as it is now, so its status, version and "last saved" are current.
      const changedMeanwhile = async () => {
        const fresh = await editable(open, id);
        return showForm(reply, 409, open, fresh.view, fresh.mode, {
          values: posted.values,
          errors: [CHANGED_MEANWHILE],
        });
      };

      const changes = changesFrom(valuesOf(view), posted.values, EDITABLE_FIELDS[mode]);
      const invalid = checkFields({ ...changes, ...blankEntries(posted.values, EDITABLE_FIELDS[mode]) });
      if (invalid.length > 0) return again(400, { errors: formErrors(invalid, 'schema') });

      let version = posted.version;
      try {
        if (Object.keys(changes).length > 0) {
          const updated = await deps.referralCommands.update(open.caller, id, changes, posted.version);
          version = updated.version;
        }
      } catch (error) {
        if (error instanceof ValidationError) {
          return again(400, { errors: formErrors(error.errors ?? [], 'service') });
        }
        if (error instanceof VersionMismatchError) return changedMeanwhile();
        throw error;
      }
      if (posted.intent === 'save') return reply.redirect(`/form/${id}?saved=1`, 303);

      const savedFirst: Notice = {
        tone: 'warn',
        title: 'Not submitted yet',
        text:
          mode === 'edit'
            ? 'Your changes are saved as a draft. Fix the problems below, then submit again.'
            : 'Your changes are saved. Fix the problems below, then submit again.',
      };
      try {
        await deps.referralCommands.submit(open.caller, id, version);
      } catch (error) {
        if (error instanceof IncompleteReferralError) {
          return again(422, {
            errors: formErrors(error.errors ?? [], 'submit'),
            notice: savedFirst,
            version,
          });
        }
        if (error instanceof ValidationError) {
          return again(400, {
            errors: formErrors(error.errors ?? [], 'service'),
            notice: savedFirst,
            version,
          });
        }
        if (error instanceof VersionMismatchError) return changedMeanwhile();
        throw error;
      }
      return reply.redirect(`/form/${id}/submitted`, 303);
    });

    app.get('/form/:referralId/submitted', { schema: { hide: true } }, async (request, reply) => {
      const id = referralIdOf(request.params);
      const open = await gate.open(request, id, 'form');
      const view = await deps.referralQueries.get(open.caller, id, { ehrForm: false });
      return sendPage(reply, 200, (nonce) =>
        renderSubmittedPage({
          nonce,
          referralId: view.id,
          status: view.status,
          senderName: view.sender.name,
          person: open.session.requesterIdentifier,
          patientName: view.patient.name ?? 'Not provided',
          serviceName: view.offering?.name ?? 'Not chosen',
          providerName: view.offering?.institution.name ?? 'the provider',
          urgent: view.isUrgent,
          submittedAt:
            view.submittedAt === undefined ? 'Not submitted' : deps.displayTime.dateTime(view.submittedAt),
          sessionEnds: deps.displayTime.time(open.session.expiresAt),
        }),
      );
    });
  };
}

/** The referral changed after the page was drawn: nothing was saved; the entries are kept. */
const CHANGED_MEANWHILE: SummaryError = {
  field: null,
  message:
    'Someone else changed this referral while you were editing, so your changes were not saved. ' +
    'Your entries are shown below: save again to replace the other changes with yours, or open the ' +
    'referral again from your clinic system to start from the latest details.',
};
