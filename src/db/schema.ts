// Kysely's view of the tables created by the migrations in ./migrations.
import type { ColumnType, Generated } from 'kysely';
import type { AttachmentScanState, FormAttachment } from '../domain/attachments.ts';

export type { AttachmentScanState };

type Timestamp = ColumnType<Date, Date, Date>;

export interface SystemsTable {
  name: string;
  created_at: Generated<Date>;
}

export interface InstitutionsTable {
  id_type: string;
  id: string;
  name: string;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
}

export interface OfferingsTable {
  id: string;
  name: string;
  category: string;
  description: string;
  specialty: string;
  ehr_code: string;
  institution_id_type: string;
  institution_id: string;
  system: string;
  cancellable: boolean;
  active: boolean;
  /** The priority codes it takes (migration 0023); null: every code in use. */
  priorities: ColumnType<string[] | null, string[] | null | undefined, string[] | null>;
  /** Its triage service levels, working days by priority code (migration 0024); null: none. */
  triage_within: ColumnType<Record<string, number> | null, string | null | undefined, string | null>;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
}

export interface ApiKeysTable {
  id: string;
  prefix: string;
  /** `api-key`: a secret presented as `ApiKey …`; `client`: signed client credentials, no secret. */
  kind: Generated<'api-key' | 'client'>;
  /** The SHA-256 of an API key; null for a client. */
  secret_hash: string | null;
  system: string;
  role: string;
  label: string | null;
  created_at: Generated<Date>;
  revoked_at: Date | null;
  /** The client's own rate limit (both set, or neither: the installation's default). */
  rate_limit_per_second: number | null;
  rate_limit_burst: number | null;
}

/** One client's rate-limit bucket where the queues are in the database (domain/rate-limits.ts). */
export interface RateLimitBucketsTable {
  client_id: string;
  /** The bucket's theoretical arrival time, epoch milliseconds. */
  tat_ms: number;
}

export interface ClientKeysTable {
  api_key_id: string;
  /** JSON: the client's JWKS, given inline; null when it is fetched from `jwks_url`. */
  jwks: ColumnType<{ keys: unknown[] } | null, string | null, string | null>;
  jwks_url: string | null;
  updated_at: Timestamp;
}

export interface ClientAssertionsTable {
  api_key_id: string;
  jti: string;
  expires_at: Timestamp;
}

export interface AccessTokensTable {
  token_hash: string;
  api_key_id: string;
  institution_id_type: string;
  institution_id: string;
  scopes: string[];
  issued_at: Timestamp;
  expires_at: Timestamp;
}

export interface ApiKeyInstitutionsTable {
  api_key_id: string;
  institution_id_type: string;
  institution_id: string;
}

export interface ReferralsTable {
  id: string;
  version: Generated<number>;
  status: string;
  sender_id_type: string;
  sender_id: string;
  sender_system: string;
  provider_id_type: string | null;
  provider_id: string | null;
  offering_id: string | null;
  patient_uin: string | null;
  /** The blind index of `patient_uin` (domain/data-keys.ts), which is sealed. */
  patient_uin_index: string | null;
  patient_name: string | null;
  patient_dob: string | null;
  patient_gender: string | null;
  patient_nationality: string | null;
  patient_phone_number: string | null;
  patient_residential_status: string | null;
  referrer_id: string | null;
  referrer_id_type: string | null;
  referrer_name: string | null;
  referrer_email: string | null;
  referrer_contact_number: string | null;
  clinical_info: string | null;
  /**
   * The patient, referrer and clinical columns above sealed together (db/data-keys/data-keys.repository.ts),
   * which are then null; null in a row written before, which holds them in those columns.
   */
  personal_data: string | null;
  is_urgent: Generated<boolean>;
  /** The priority's code, words and FHIR priority as the catalog had them when set (migration 0023). */
  priority: ColumnType<string | null, string | null | undefined, string | null>;
  priority_display: ColumnType<string | null, string | null | undefined, string | null>;
  priority_fhir: ColumnType<string | null, string | null | undefined, string | null>;
  /** When its triage is due, set at each submission (migration 0024); null: no service level. */
  triage_due_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  /** When `referral.triage-overdue` was recorded for the current due time; null: not yet. */
  triage_overdue_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  ehr_state: Generated<string>;
  ehr_attempts: Generated<number>;
  ehr_last_attempt_at: Date | null;
  ehr_sha256: string | null;
  ehr_due_version: ColumnType<number | null, number | null | undefined, number | null>;
  ehr_forwarded_version: ColumnType<number | null, number | null | undefined, number | null>;
  /** The ledger attempt an operator's replay repeats, until an attempt settles the forward (0029). */
  ehr_replay_of: ColumnType<string | null, string | null | undefined, string | null>;
  /** The referral this one carries on after a redirect, and the one it was redirected to (migration 0025). */
  redirected_from: ColumnType<string | null, string | null | undefined, string | null>;
  redirected_to: ColumnType<string | null, string | null | undefined, string | null>;
  /** When it was archived and the name of the archive that holds its record (migration 0028); else null. */
  archived_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  archive_name: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: Timestamp;
  updated_at: Timestamp;
  submitted_at: Date | null;
  deleted_at: Date | null;
}

export interface AppointmentsTable {
  referral_id: string;
  id: string;
  status: string;
  start_at: Timestamp;
  /** Null only once its referral is archived (migration 0028), whose parts are never read again. */
  location: ColumnType<string, string, string | null>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface NotesTable {
  id: string;
  referral_id: string;
  content: string;
  author_name: string | null;
  author_institution_id_type: string;
  author_institution_id: string;
  requester_identifier: string | null;
  system: string;
  created_at: Timestamp;
}

export interface AttachmentsTable {
  id: string;
  referral_id: string;
  number: number;
  /** Null only once its referral is archived (migration 0028), whose parts are never read again. */
  file_name: ColumnType<string, string, string | null>;
  media_type: string;
  size_bytes: number;
  sha256: string;
  scan_state: AttachmentScanState;
  scan_signature: string | null;
  scanned_at: Timestamp | null;
  added_by: 'sender' | 'provider';
  author_institution_id_type: string;
  author_institution_id: string;
  requester_identifier: string | null;
  system: string;
  created_at: Timestamp;
  /** For a file a successor carries, the attachment whose stored bytes it reads (migration 0025). */
  content_of: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface OutcomeCodesTable {
  code: string;
  display: string;
  summary_required: boolean;
  active: boolean;
  position: number;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
}

export interface PriorityCodesTable {
  code: string;
  display: string;
  fhir_priority: string;
  active: boolean;
  position: number;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
}

export interface PublicHolidaysTable {
  /** A date; read it as `day::text` ("YYYY-MM-DD"): the drivers differ in what they make of a date. */
  day: ColumnType<string, string, string>;
  name: string;
  active: boolean;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
}

export interface ReasonCodesTable {
  code: string;
  display: string;
  actions: string[];
  comment_required: boolean;
  active: boolean;
  position: number;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
}

export interface ReferralOutcomesTable {
  referral_id: string;
  code: string;
  display: string;
  summary: string | null;
  /** JSON: the IDs of the provider's attachments that are part of the outcome, in the order given. */
  attachment_ids: ColumnType<string[], string, string>;
  completed_by_name: string | null;
  requester_identifier: string | null;
  system: string;
  completed_at: Timestamp;
  acknowledged_by_name: string | null;
  acknowledged_at: Timestamp | null;
}

export interface AttachmentContentsTable {
  attachment_id: string;
  content: Buffer;
}

export interface TimelineEventsTable {
  seq: Generated<string>;
  id: string;
  referral_id: string;
  type: string;
  system: string;
  /** Null only once its referral is archived (migration 0028): the sentence quotes what people typed. */
  description: ColumnType<string, string, string | null>;
  produced_at: Timestamp;
  /** The reason's code and words (migration 0022); null for events without one. */
  reason_code: ColumnType<string | null, string | null | undefined, string | null>;
  reason_display: ColumnType<string | null, string | null | undefined, string | null>;
  /** For a step copied in at a redirect, the referral it was taken on (migration 0025); else null. */
  from_referral_id: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface AuditEventsTable {
  seq: Generated<string>;
  id: string;
  occurred_at: Timestamp;
  request_id: string;
  api_key_id: string | null;
  system: string | null;
  institution_id_type: string | null;
  institution_id: string | null;
  requester_identifier: string | null;
  action: string;
  outcome: 'success' | 'denied';
  referral_ids: ColumnType<string[], string[] | undefined, string[]>;
  /**
   * The institution a refused request named when its credential may not act for it (both or neither);
   * `institution_*` then names the credential's own (api/request-audit.ts).
   */
  claimed_institution_id_type: string | null;
  claimed_institution_id: string | null;
  /** Set by the sealer (audit-chain.repository.ts), all six together; null until it has run. */
  chain: string | null;
  chain_index: number | null;
  prev_hash: string | null;
  row_hash: string | null;
  sealed_at: Date | null;
  /** Which form of the row's content `row_hash` covers (domain/audit-chain.ts): 1 before 0020, then 2. */
  hash_form: number | null;
}

export interface AuditChainHeadsTable {
  chain: string;
  chain_index: number;
  row_hash: string;
}

export interface AuditCheckpointsTable {
  seq: Generated<string>;
  created_at: Timestamp;
  /** JSON: the head of each chain the round sealed, `{ [chain]: { index, hash } }`. */
  heads: ColumnType<Record<string, { index: number; hash: string }>, string, string>;
  /** A compact JWS (EdDSA) of the checkpoint, by AUDIT_SIGNING_KEY; null where none is set. */
  signature: string | null;
  key_id: string | null;
  /** What the signature covers (services/audit/audit-chain-check.ts): 1 before 0020, then 2. */
  form: number;
  /** Form 2: the hash of the checkpoint before it (64 zeros for the first); null in form 1. */
  prev_hash: string | null;
}

export interface DataKeysTable {
  id: string;
  purpose: 'fields' | 'blind-index';
  kek_id: string;
  /** The key, wrapped by the key-encryption key `kek_id` (never stored in the clear). */
  wrapped: string;
  created_at: Timestamp;
  /** For a fields key: when every sealed value was last found under it (or a newer key). */
  swept_at: Date | null;
}

export interface IdempotencyKeysTable {
  api_key_id: string;
  key: string;
  request_hash: string;
  state: 'in-progress' | 'completed';
  response_status: number | null;
  response_headers: ColumnType<Record<string, string> | null, string | null, string | null>;
  response_body: string | null;
  created_at: Timestamp;
  expires_at: Timestamp;
}

export interface OutboxTable {
  id: Generated<string>;
  topic: string;
  referral_id: string;
  version: number;
  request_id: string;
  created_at: Timestamp;
  available_at: Timestamp;
  attempts: Generated<number>;
  last_error: string | null;
  processed_at: Date | null;
}

export interface LinkTokensTable {
  id: string;
  token_hash: string;
  referral_id: string;
  action: string;
  institution_id_type: string;
  institution_id: string;
  requester_identifier: string;
  api_key_id: string | null;
  created_at: Timestamp;
  expires_at: Timestamp;
  used_at: Date | null;
}

export interface EhrSubmissionsTable {
  id: string;
  referral_id: string;
  message_id: string;
  version: number;
  attempt: number;
  attempted_at: Timestamp;
  outcome: 'delivered' | 'retrying' | 'failed';
  http_status: number | null;
  error_code: string | null;
  sha256: string | null;
  ehr_reference: string | null;
  duration_ms: number;
  request_id: string;
  /** The attempt an operator's replay repeated (migration 0029); no foreign key, see there. */
  replay_of: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface EhrFormsTable {
  message_id: string;
  referral_id: string;
  version: number;
  form_type: string;
  sha256: string;
  /** Null only once its referral is archived (migration 0028): the form is in the archive. */
  html: ColumnType<string, string, string | null>;
  /** The files sent with the form (FormAttachment[]), as JSON. */
  attachments: ColumnType<FormAttachment[], string, never>;
  created_at: Timestamp;
}

/** One forward waiting for a worker, in its institution's backlog (migration 0021, queue/forward.queue.ts). */
export interface ForwardBacklogTable {
  institution: string;
  job_id: string;
  added_at: Date;
}

export interface EhrCircuitTable {
  name: string;
  state: 'closed' | 'open';
  failures: Generated<number>;
  window_started_at: Date | null;
  opened_at: Date | null;
  probe_at: Date | null;
  probe_interval_ms: number | null;
  probing_until: Date | null;
  updated_at: Timestamp;
}

export interface ReminderNotificationsTable {
  id: string;
  referral_id: string;
  kind: string;
  recipient_id_type: string;
  recipient_id: string;
  pending_since: Timestamp;
  sequence: number;
  firing_key: string;
  sent_at: Timestamp;
}

/** An offering's wait times, as the last computation wrote them (migration 0026). */
export interface WaitTimesTable {
  offering_id: string;
  computed_at: Timestamp;
  window_start: Timestamp;
  window_end: Timestamp;
  accepted_referrals: number;
  accepted_p50_seconds: number | null;
  accepted_p90_seconds: number | null;
  appointment_referrals: number;
  appointment_p50_seconds: number | null;
  appointment_p90_seconds: number | null;
  decided_referrals: number;
  declined_share: number | null;
}

/** An incident of a condition refhub watches (migration 0030, domain/incidents.ts). */
export interface IncidentsTable {
  id: string;
  condition: string;
  opened_at: Timestamp;
  resolved_at: Date | null;
  evidence: ColumnType<Record<string, number | boolean | string>, string, string>;
  evidence_at: Timestamp;
  opened_sent_at: Date | null;
  resolved_sent_at: Date | null;
  send_attempts: Generated<number>;
  next_send_at: Date | null;
}

/** A month of a partitioned table archived and dropped by retention (migration 0027). */
export interface RetentionArchivesTable {
  table_name: string;
  /** `YYYY-MM`, UTC. */
  month: string;
  /** The archive's directory. */
  archive: string;
  manifest_sha256: string;
  rows: ColumnType<string, string, string>;
  dropped_at: Timestamp;
}

/** A run of retention, scheduled or from the CLI (migration 0033); at most one unfinished. */
export interface RetentionRunsTable {
  id: string;
  started_by: string;
  started_at: Timestamp;
  heartbeat_at: Timestamp;
  finished_at: Date | null;
  outcome: 'succeeded' | 'failed' | 'abandoned' | null;
  summary: ColumnType<Record<string, number | string> | null, string | null, string | null>;
}

export interface InstallationSecretsTable {
  name: string;
  value: string;
  created_at: Generated<Date>;
}

export interface ReferralEventsTable {
  position: Generated<string>;
  xid: Generated<string>;
  id: string;
  referral_id: string;
  referral_version: number;
  type: string;
  system: string;
  description: string;
  occurred_at: Timestamp;
  sender_id_type: string;
  sender_id: string;
  provider_id_type: string | null;
  provider_id: string | null;
  reason_code: ColumnType<string | null, string | null | undefined, string | null>;
  reason_display: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface WebhookSubscriptionsTable {
  id: string;
  institution_id_type: string;
  institution_id: string;
  url: string;
  event_types: string[] | null;
  description: string | null;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Date | null;
  disabled_at: Date | null;
  disabled_reason: 'by-institution' | 'gone' | 'failing' | null;
  failing_since: Date | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface WebhookAttemptsTable {
  id: string;
  subscription_id: string;
  event_id: string;
  event_type: string;
  attempt: number;
  attempted_at: Timestamp;
  outcome: 'delivered' | 'retrying' | 'failed';
  http_status: number | null;
  duration_ms: number;
  error_code: string | null;
  /** The attempt an operator's replay repeated (migration 0029); no foreign key, see there. */
  replay_of: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface WebhookRelayTable {
  name: string;
  xid: string;
  position: string;
  updated_at: Timestamp;
}

/** An operator's replay of ledger rows: who, the filter, the counts (migration 0029). */
export interface LedgerReplaysTable {
  id: string;
  request_id: string;
  ledger: 'forwards' | 'webhooks';
  requested_at: Timestamp;
  api_key_id: string | null;
  requester_identifier: string | null;
  filter: ColumnType<Record<string, unknown>, string, string>;
  matched: number;
  replayed: number;
  skipped: ColumnType<Record<string, number>, string, string>;
}

export interface Database {
  systems: SystemsTable;
  institutions: InstitutionsTable;
  offerings: OfferingsTable;
  api_keys: ApiKeysTable;
  api_key_institutions: ApiKeyInstitutionsTable;
  client_keys: ClientKeysTable;
  client_assertions: ClientAssertionsTable;
  access_tokens: AccessTokensTable;
  referrals: ReferralsTable;
  appointments: AppointmentsTable;
  notes: NotesTable;
  attachments: AttachmentsTable;
  attachment_contents: AttachmentContentsTable;
  outcome_codes: OutcomeCodesTable;
  reason_codes: ReasonCodesTable;
  priority_codes: PriorityCodesTable;
  public_holidays: PublicHolidaysTable;
  referral_outcomes: ReferralOutcomesTable;
  timeline_events: TimelineEventsTable;
  audit_events: AuditEventsTable;
  audit_chain_heads: AuditChainHeadsTable;
  audit_checkpoints: AuditCheckpointsTable;
  idempotency_keys: IdempotencyKeysTable;
  data_keys: DataKeysTable;
  outbox: OutboxTable;
  link_tokens: LinkTokensTable;
  installation_secrets: InstallationSecretsTable;
  ehr_submissions: EhrSubmissionsTable;
  reminder_notifications: ReminderNotificationsTable;
  wait_times: WaitTimesTable;
  incidents: IncidentsTable;
  retention_archives: RetentionArchivesTable;
  retention_runs: RetentionRunsTable;
  rate_limit_buckets: RateLimitBucketsTable;
  ehr_forms: EhrFormsTable;
  ehr_circuit: EhrCircuitTable;
  forward_backlog: ForwardBacklogTable;
  referral_events: ReferralEventsTable;
  webhook_subscriptions: WebhookSubscriptionsTable;
  webhook_attempts: WebhookAttemptsTable;
  webhook_relay: WebhookRelayTable;
  ledger_replays: LedgerReplaysTable;
}
