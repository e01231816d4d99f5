// A referral's attachments (docs/attachments.md). Adding or removing one is a change to the referral,
// run by the mutation runner like a note: the tenancy check, the lifecycle table, the compare-and-set
// on the version, the timeline, the outbox (which queues the scan) and the audit row, with the file's
// rows, in one statement. The file is judged by its bytes before it is stored, and its content is
// handed out only once the scanner found it clean. Every read is audited before anything leaves.
import { createHash } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';
import {
  isReadable,
  mediaTypeWords,
  sizeWords,
  type AttachmentType,
  type AttachmentAdded,
  type AttachmentView,
} from '../../domain/attachments.ts';
import type { Clock } from '../../domain/clock.ts';
import { decide } from '../../domain/lifecycle.ts';
import { timeline } from '../../domain/timeline.ts';
import {
  AttachmentNotFoundError,
  AttachmentPendingScanError,
  AttachmentRefusedError,
  AttachmentRejectedError,
  LimitExceededError,
  ReferralNotFoundError,
} from '../../errors.ts';
import type { AttachmentRecord } from '../../db/attachments.repository.ts';
import { auditEventOf } from '../../domain/audit.ts';
import { type ReferralRecord } from '../../db/referrals/rows.ts';
import type { Stores } from '../../db/stores.ts';
import { fileNameRefusal, inspectAttachment, type FileNameRefusal } from './inspection.ts';
import type { PdfCheck } from './pdf.ts';
import type { Caller } from '../caller.ts';
import { actorName, institutionName, personIn, statusInput } from '../referrals/commands.ts';
import { createMutationRunner } from '../referrals/mutation.ts';

export interface AttachmentSettings {
  readonly maxBytes: number;
  readonly perReferral: number;
  readonly types: ReadonlySet<AttachmentType>;
  /** A scanner checks each file before it can be read; without one, files are kept `not-scanned`. */
  readonly scanned: boolean;
}

export interface AttachmentsDeps {
  readonly stores: Pick<Stores, 'referrals' | 'attachments' | 'audit'>;
  readonly clock: Clock;
  readonly settings: AttachmentSettings;
  /** Judges a PDF's content with qpdf (pdf.ts), a few at a time. */
  readonly checkPdf: PdfCheck;
}

/** A file as the client sent it. */
export interface Upload {
  readonly bytes: Buffer;
  readonly fileName: string;
  /** The media type the client declared, if any: checked against the bytes, never trusted. */
  readonly declaredType: string | undefined;
  /** Where the name was sent (a header, a form field), for a refusal's `errors[]`. */
  readonly fileNameField: string;
}

const FILE_NAME_RULES: Readonly<Record<FileNameRefusal, string>> = {
  empty: 'The file name is empty.',
  'too-long': 'The file name is longer than 255 bytes.',
  path: 'The file name holds a path (/ or \\); send the name alone.',
  'dot-name': 'The file name may not be . or ..',
  'control-characters': 'The file name holds control or direction characters.',
};

export function toAttachmentView(referral: ReferralRecord, a: AttachmentRecord): AttachmentView {
  return {
    id: a.id,
    referralId: a.referralId,
    number: a.number,
    fileName: a.fileName,
    mediaType: a.mediaType,
    sizeBytes: a.sizeBytes,
    sha256: a.sha256,
    scanState: a.scanState,
    available: isReadable(a.scanState),
    ...(a.scannedAt === null ? {} : { scannedAt: a.scannedAt.toISOString() }),
    addedBy: a.addedBy,
    authorInstitution: { ...a.authorInstitution, name: institutionName(referral, a.authorInstitution) },
    createdAt: a.createdAt.toISOString(),
  };
}

export function createAttachments(deps: AttachmentsDeps) {
  const mutate = createMutationRunner({ referrals: deps.stores.referrals, clock: deps.clock });

  /** The referral if the caller may see it, with the read's audit row stored first. */
  async function readAudited(caller: Caller, referralId: string, action: string): Promise<ReferralRecord> {
    const record = await deps.stores.referrals.findVisible(referralId, caller.institution);
    if (!record) throw new ReferralNotFoundError(referralId);
    await deps.stores.audit.record(auditEventOf(caller, action, [referralId], deps.clock.now()));
    return record;
  }

  async function found(referralId: string, attachmentId: string): Promise<AttachmentRecord> {
    const attachment = await deps.stores.attachments.find(referralId, attachmentId);
    if (!attachment) throw new AttachmentNotFoundError(attachmentId);
    return attachment;
  }

  return {
    settings: deps.settings,

    async add(
      caller: Caller,
      referralId: string,
      upload: Upload,
      ifMatch?: number,
    ): Promise<AttachmentAdded> {
      const nameRefusal = fileNameRefusal(upload.fileName);
      if (nameRefusal !== undefined) {
        throw new AttachmentRefusedError(
          400,
          'file-name',
          FILE_NAME_RULES[nameRefusal],
          upload.fileNameField,
        );
      }
      const id = uuidv7();
      const sha256 = createHash('sha256').update(upload.bytes).digest('hex');
      // The bytes are judged once the caller may add to this referral, and only once.
      let inspected: Promise<string> | undefined;
      const mediaTypeOf = () =>
        (inspected ??= inspectAttachment(
          upload.bytes,
          {
            fileName: upload.fileName,
            ...(upload.declaredType === undefined ? {} : { mediaType: upload.declaredType }),
          },
          deps.settings.types,
          deps.checkPdf,
        ).then((inspection) => {
          if (!inspection.ok) {
            const { status, reason, detail } = inspection.refusal;
            throw new AttachmentRefusedError(status, reason, detail, 'body');
          }
          return inspection.mediaType;
        }));
      let view: AttachmentAdded | undefined;
      return mutate(
        caller,
        referralId,
        'add-attachment',
        ifMatch,
        async ({ record, party, now }) => {
          const decision = decide('add-attachment', party, statusInput(record));
          const mediaType = await mediaTypeOf();
          // Read with the referral's version: a file added since then changed the version, so this
          // change's compare-and-set fails and the count is read again.
          const others = await deps.stores.attachments.list(record.id);
          if (others.length >= deps.settings.perReferral) {
            throw new LimitExceededError(
              `A referral can have at most ${deps.settings.perReferral} attachments.`,
            );
          }
          const attachment = {
            id,
            referralId: record.id,
            number: Math.max(0, ...others.map((a) => a.number)) + 1,
            fileName: upload.fileName,
            mediaType,
            sizeBytes: upload.bytes.length,
            sha256,
            scanState: deps.settings.scanned ? ('pending-scan' as const) : ('not-scanned' as const),
            addedBy: party,
            authorInstitution: caller.institution,
            requesterIdentifier: caller.requesterIdentifier,
            system: caller.system,
            createdAt: now,
          };
          view = {
            ...toAttachmentView(record, { ...attachment, scanSignature: null, scannedAt: null }),
            // The change writes the next version, or fails its compare-and-set and is planned again.
            referralVersion: record.version + 1,
          };
          return {
            decision,
            events: [
              timeline.attachmentAdded(
                actorName(record, party, personIn(caller)),
                mediaTypeWords(mediaType),
                sizeWords(attachment.sizeBytes),
              ),
            ],
            children: {
              changes: [{ kind: 'add-attachment', attachment, content: upload.bytes }],
              parts: (before) => before,
            },
          };
        },
        () => {
          if (view === undefined) throw new Error(`attachment ${id} is missing from its answer`);
          return { result: view, links: [] };
        },
      );
    },

    async remove(
      caller: Caller,
      referralId: string,
      attachmentId: string,
      ifMatch?: number,
    ): Promise<AttachmentView> {
      let removed: AttachmentView | undefined;
      return mutate(
        caller,
        referralId,
        'remove-attachment',
        ifMatch,
        async ({ record, party }) => {
          const decision = decide('remove-attachment', party, statusInput(record));
          const attachment = await deps.stores.attachments.find(record.id, attachmentId);
          if (!attachment) throw new AttachmentNotFoundError(attachmentId);
          removed = toAttachmentView(record, attachment);
          return {
            decision,
            events: [
              timeline.attachmentRemoved(
                actorName(record, party, personIn(caller)),
                mediaTypeWords(attachment.mediaType),
                sizeWords(attachment.sizeBytes),
              ),
            ],
            children: {
              changes: [{ kind: 'remove-attachment', attachmentId }],
              parts: (before) => before,
            },
          };
        },
        () => {
          if (removed === undefined) throw new Error(`attachment ${attachmentId} is missing from its answer`);
          return { result: removed, links: [] };
        },
      );
    },

    async list(caller: Caller, referralId: string): Promise<AttachmentView[]> {
      const record = await readAudited(caller, referralId, 'referral.read-attachments');
      const attachments = await deps.stores.attachments.list(referralId);
      return attachments.map((a) => toAttachmentView(record, a));
    },

    async get(caller: Caller, referralId: string, attachmentId: string): Promise<AttachmentView> {
      const record = await readAudited(caller, referralId, 'referral.read-attachments');
      return toAttachmentView(record, await found(referralId, attachmentId));
    },

    /**
     * The attachment and its content, a piece at a time, once it may be read: 409 while it waits for
     * its scan, 410 once the scan rejected it. The read is audited before the first byte leaves.
     */
    async content(
      caller: Caller,
      referralId: string,
      attachmentId: string,
    ): Promise<{ view: AttachmentView; content: AsyncIterable<Buffer> }> {
      const record = await deps.stores.referrals.findVisible(referralId, caller.institution);
      if (!record) throw new ReferralNotFoundError(referralId);
      const attachment = await found(referralId, attachmentId);
      if (attachment.scanState === 'pending-scan') throw new AttachmentPendingScanError();
      if (attachment.scanState === 'rejected') throw new AttachmentRejectedError();
      await deps.stores.audit.record(
        auditEventOf(caller, 'referral.read-attachment-content', [referralId], deps.clock.now()),
      );
      return {
        view: toAttachmentView(record, attachment),
        content: deps.stores.attachments.content(attachment.id, attachment.sizeBytes),
      };
    },
  };
}

export type Attachments = ReturnType<typeof createAttachments>;
