// The forms sent to the EHR, one per message ID (a referral version): the bytes every retry of the
// message sends, that a Get of the version returns, and that prove the ledger's hashes afterwards.
// The form is the patient's data, and so is the name of each file it lists: both are sealed (the
// ledger's hash stays that of the bytes sent, which are the form opened).
import type { FormAttachment } from '../../domain/attachments.ts';
import { openColumns, sealColumns, type DataKeys } from '../data-keys/data-keys.repository.ts';
import type { Executor } from '../executor.ts';

export interface StoredForm {
  readonly messageId: string;
  readonly referralId: string;
  readonly version: number;
  readonly formType: string;
  readonly sha256: string;
  readonly html: string;
  /** The files sent with the form, each as a document of its own. */
  readonly attachments: readonly FormAttachment[];
}

const FORM_COLUMNS = [
  'message_id',
  'referral_id',
  'version',
  'form_type',
  'sha256',
  'html',
  'attachments',
] as const;

export function ehrFormRepository(db: Executor, keys: DataKeys) {
  const opened = async (row: Row | undefined) =>
    row && keys.reading(db, (cipher) => toForm(openColumns('ehr_forms', row, cipher)));

  return {
    /**
     * Keeps `form` as the bytes of its message ID, unless bytes are kept for it already; returns the
     * kept ones either way.
     */
    async keep(form: StoredForm, now: Date): Promise<StoredForm> {
      const sealed = sealColumns(
        'ehr_forms',
        { message_id: form.messageId },
        { html: form.html, attachments: form.attachments },
        await keys.cipher(db),
      );
      const inserted = await db
        .insertInto('ehr_forms')
        .values({
          message_id: form.messageId,
          referral_id: form.referralId,
          version: form.version,
          form_type: form.formType,
          sha256: form.sha256,
          html: sealed.html,
          attachments: JSON.stringify(sealed.attachments),
          created_at: now,
        })
        .onConflict((oc) => oc.column('message_id').doNothing())
        .returning('message_id')
        .execute();
      if (inserted.length === 1) return form;
      return (await this.byMessageId(form.messageId)) ?? form;
    },

    async byMessageId(messageId: string): Promise<StoredForm | undefined> {
      return opened(
        await db
          .selectFrom('ehr_forms')
          .select(FORM_COLUMNS)
          .where('message_id', '=', messageId)
          .executeTakeFirst(),
      );
    },

    /** The form sent for a referral version, if one was. */
    async ofVersion(referralId: string, version: number): Promise<StoredForm | undefined> {
      return opened(
        await db
          .selectFrom('ehr_forms')
          .select(FORM_COLUMNS)
          .where('referral_id', '=', referralId)
          .where('version', '=', version)
          .executeTakeFirst(),
      );
    },
  };
}

// A type, not an interface: openColumns takes a record.
type Row = {
  message_id: string;
  referral_id: string;
  version: number;
  form_type: string;
  sha256: string;
  html: string;
  attachments: FormAttachment[];
};

function toForm(row: Row): StoredForm {
  return {
    messageId: row.message_id,
    referralId: row.referral_id,
    version: row.version,
    formType: row.form_type,
    sha256: row.sha256,
    html: row.html,
    attachments: row.attachments,
  };
}
