// The form behind `edit` and `respond` links: GET shows it, POST saves it ("Save draft") or saves and
// submits it ("Submit"), through the same referral commands as the API (update, then submit), so the
// same validation, lifecycle, timeline, outbox and audit apply. Success redirects (303), so a reload
// never posts twice; an error shows the form again, holding what the person typed.
//
// A save is checked against the version the page was drawn from (If-Match): if the referral changed
// meanwhile, nothing is overwritten and the person is told.
//
// The form also attaches files (a multipart POST of its own, read in a scope of its own with the
// multipart parser and the upload limits) and removes them (from a draft), through the same
// attachments service as the API. Both answer a redirect back to the form, or the form again saying
// why a file was refused; they carry the session's token like every post of the form.
import type { FastifyInstance, FastifyReply } from 'fastify';
import multipart from '@fastify/multipart';
import type { ApiDeps } from '../api-deps.ts';
import type { UploadBudget } from '../upload-budget.ts';
import type { ReferralView } from '../../domain/referral-view.ts';
import { isStatus } from '../../domain/statuses.ts';
import {
  AttachmentNotFoundError,
  AttachmentRefusedError,
  IncompleteReferralError,
  InvalidTransitionError,
  LimitExceededError,
  UploadsBusyError,
  ValidationError,
  VersionMismatchError,
} from '../../errors.ts';
import type { SummaryError } from '../../render/pages/form-controls.ts';
import type { Choice } from '../../render/pages/referral-form-fields.ts';
import { renderReferralFormPage, type Notice } from '../../render/pages/referral-form.page.ts';
import { renderSubmittedPage } from '../../render/pages/submitted.page.ts';
import { createReferralFieldsCheck } from '../../services/referrals/fields.ts';
import {
  blankEntries,
  changesFrom,
  EDITABLE_FIELDS,
  formErrors,
  readForm,
  tokenOf,
  valuesOf,
  type FormValues,
} from './form-input.ts';
import {
  busyWords,
  FILE_NAME_FIELD,
  NO_FILE_WORDS,
  noRoom,
  readUpload,
  refusalWords,
  tooLargeWords,
  tooManyWords,
  uploadLimits,
} from './attachments-upload.ts';
import { filesRemovable, formPageModel, modeFor, type FormMode } from './form-page.ts';
import { attachmentIdOf, referralIdOf, notEditable } from './referral-pages.ts';
import type { OpenSession, SessionGate } from './session-gate.ts';
import { sendPage, WebPageError } from './web-pages.ts';

const SAVED: Notice = {
  tone: 'success',
  title: 'Draft saved',
  text: 'Nothing has been sent to the provider yet.',
};

const REMOVED: Notice = { tone: 'success', title: 'File removed' };

/** The notice a redirect back to the form asks for (`?saved=1`, `?attached=1`, `?removed=1`). */
function noticeOf(query: unknown, attached: Notice): Notice | undefined {
  const asked = query as Record<string, unknown>;
  if (asked.saved === '1') return SAVED;
  if (asked.attached === '1') return attached;
  if (asked.removed === '1') return REMOVED;
  return undefined;
}

export type FormRoutesDeps = Pick<
  ApiDeps,
  'catalog' | 'referralQueries' | 'referralCommands' | 'displayTime' | 'attachments' | 'config' | 'waitTimes'
>;

export function formRoutes(
  deps: FormRoutesDeps,
  gate: SessionGate,
  uploads: UploadBudget,
  countries: readonly Choice[],
) {
  const checkFields = createReferralFieldsCheck();
  const maxBytes = deps.config.attachmentMaxBytes;
  const { settings } = deps.attachments;
  const fileRules = {
    types: settings.types,
    maxBytes,
    perReferral: settings.perReferral,
    scanned: settings.scanned,
  };
  const attachedNotice: Notice = {
    tone: 'success',
    title: 'File attached',
    ...(settings.scanned ? { text: 'It can be opened once the malware scan finds it clean.' } : {}),
  };

  async function showForm(
    reply: FastifyReply,
    status: number,
    open: OpenSession,
    view: ReferralView,
    mode: FormMode,
    extra: {
      values?: FormValues;
      errors?: readonly SummaryError[];
      notice?: Notice;
      version?: number;
      uploadError?: string;
    } = {},
  ): Promise<FastifyReply> {
    const catalog = mode === 'edit' ? await deps.catalog.listOfferings() : [];
    const waitHints = mode === 'edit' ? await deps.waitTimes.acceptedHints() : new Map<string, string>();
    const files = await deps.attachments.list(open.caller, view.id);
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
          ...(extra.uploadError === undefined ? {} : { uploadError: extra.uploadError }),
          catalog,
          waitHints,
          countries,
          display: deps.displayTime,
          files,
          fileRules,
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

  return async (app: FastifyInstance) => {
    app.get('/form/:referralId', { schema: { hide: true } }, async (request, reply) => {
      const id = referralIdOf(request.params);
      const open = await gate.open(request, id, 'form');
      const { view, mode } = await editable(open, id);
      const notice = noticeOf(request.query, attachedNotice);
      return showForm(reply, 200, open, view, mode, notice === undefined ? {} : { notice });
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
          priority: view.priority?.display ?? null,
          submittedAt:
            view.submittedAt === undefined ? 'Not submitted' : deps.displayTime.dateTime(view.submittedAt),
          sessionEnds: deps.displayTime.time(open.session.expiresAt),
        }),
      );
    });

    // Removing a file: a plain form post with the session's token, from a draft only.
    app.post(
      '/form/:referralId/attachments/:attachmentId/remove',
      { schema: { hide: true } },
      async (request, reply) => {
        const id = referralIdOf(request.params);
        const attachmentId = attachmentIdOf(request.params);
        const open = await gate.open(request, id, 'form');
        gate.checkPost(request, open.session, tokenOf(request.body));
        try {
          await deps.attachments.remove(open.caller, id, attachmentId);
        } catch (error) {
          const again = async (status: number, message: string) => {
            const { view, mode } = await editable(open, id);
            return showForm(reply, status, open, view, mode, { errors: [{ field: null, message }] });
          };
          if (error instanceof AttachmentNotFoundError) return again(404, FILE_GONE);
          // Still open to the sender, but submitted once (a page drawn while it was a draft): the file
          // stays. A referral the sender can no longer change gets that page (web-errors.ts).
          if (error instanceof InvalidTransitionError) {
            const status = error.extra.currentStatus;
            if (typeof status === 'string' && isStatus(status) && modeFor(status) !== undefined) {
              return again(409, FILE_KEPT);
            }
          }
          throw error;
        }
        return reply.redirect(`/form/${id}?removed=1`, 303);
      },
    );

    // Attaching a file: multipart, in a scope of its own, so no other route of the form takes it.
    await app.register(async (files) => {
      await files.register(multipart, { limits: uploadLimits(maxBytes) });

      files.post('/form/:referralId/attachments', { schema: { hide: true } }, async (request, reply) => {
        const id = referralIdOf(request.params);
        const open = await gate.open(request, id, 'form');
        // A post from another site is refused before any of it is read.
        gate.checkOrigin(request);
        const refused = async (status: number, uploadError: string) => {
          const { view, mode } = await editable(open, id);
          return showForm(reply, status, open, view, mode, { uploadError });
        };
        const busy = (refusal: UploadsBusyError) => {
          void reply.header('Retry-After', String(refusal.retryAfterSeconds ?? 1));
          return refused(503, busyWords(refusal));
        };
        // Room in the app's upload budget, shared with the API and its shares (api/upload-budget.ts):
        // the post claims its length (the file and the token) before any of it is read.
        const declared = Number(request.headers['content-length']);
        const claim =
          Number.isSafeInteger(declared) && declared >= 0 ? Math.min(declared, maxBytes) : maxBytes;
        const { institution } = open.caller;
        // A post that finds no room is still read to its end, its token checked and its file dropped.
        const body = await uploads
          .admit(
            reply,
            { credential: open.caller.apiKeyId, institution: `${institution.idType}/${institution.id}` },
            claim,
          )
          .catch((error: unknown) => {
            if (error instanceof UploadsBusyError) return noRoom(error);
            throw error;
          });

        const upload = await readUpload(request, body, maxBytes, (token) => {
          gate.checkPost(request, open.session, token);
        });
        if (upload.kind === 'none') return refused(400, NO_FILE_WORDS);
        if (upload.kind === 'too-large') return refused(413, tooLargeWords(fileRules));
        if (upload.kind === 'busy') return busy(upload.refusal);
        const { view, mode } = await editable(open, id);
        try {
          await deps.attachments.add(open.caller, id, { ...upload.file, fileNameField: FILE_NAME_FIELD });
        } catch (error) {
          if (error instanceof AttachmentRefusedError) {
            return showForm(reply, error.status, open, view, mode, {
              uploadError: refusalWords(error, fileRules),
            });
          }
          if (error instanceof LimitExceededError) {
            return showForm(reply, 409, open, view, mode, {
              uploadError: tooManyWords(fileRules, filesRemovable(view.status)),
            });
          }
          throw error;
        }
        return reply.redirect(`/form/${id}?attached=1`, 303);
      });
    });
  };
}

const FILE_GONE = 'That file is no longer attached: it was removed already, perhaps in another tab.';

const FILE_KEPT =
  'Files cannot be removed once the referral has been submitted: the provider may already have them.';

/** The referral changed after the page was drawn: nothing was saved; the entries are kept. */
const CHANGED_MEANWHILE: SummaryError = {
  field: null,
  message:
    'Someone else changed this referral while you were editing, so your changes were not saved. ' +
    'Your entries are shown below: save again to replace the other changes with yours, or open the ' +
    'referral again from your clinic system to start from the latest details.',
};
