// Every migration, in order. Names sort by their numeric prefix; never rename or edit a shipped one.
import type { Migration } from 'kysely/migration';
import * as m0001 from './0001-initial.ts';
import * as m0002 from './0002-ehr-bridge.ts';
import * as m0003 from './0003-installation-secrets.ts';
import * as m0004 from './0004-list-counts.ts';
import * as m0005 from './0005-keyed-writes-in-one-transaction.ts';
import * as m0006 from './0006-forwarding-forms-and-circuit.ts';
import * as m0007 from './0007-events-and-webhooks.ts';
import * as m0008 from './0008-refhub-system.ts';
import * as m0009 from './0009-change-notifications.ts';
import * as m0010 from './0010-one-statement-writes.ts';
import * as m0011 from './0011-outbox-pending-work.ts';
import * as m0012 from './0012-attachments.ts';
import * as m0013 from './0013-forms-carry-attachments.ts';
import * as m0014 from './0014-outcomes.ts';
import * as m0015 from './0015-client-credentials.ts';
import * as m0016 from './0016-audit-chain.ts';
import * as m0017 from './0017-field-encryption.ts';
import * as m0018 from './0018-personal-data-together.ts';
import * as m0019 from './0019-events-without-free-text.ts';
import * as m0020 from './0020-audit-claims-and-forms.ts';
import * as m0021 from './0021-forward-backlog.ts';
import * as m0022 from './0022-reason-codes.ts';
import * as m0023 from './0023-priorities.ts';
import * as m0024 from './0024-worklists.ts';
import * as m0025 from './0025-redirect.ts';
import * as m0026 from './0026-wait-times.ts';
import * as m0027 from './0027-retention-partitions.ts';
import * as m0028 from './0028-archived-referrals.ts';
import * as m0029 from './0029-ledger-search.ts';
import * as m0030 from './0030-incidents.ts';
import * as m0031 from './0031-rate-limits.ts';
import * as m0032 from './0032-forward-backlog-walks.ts';
import * as m0033 from './0033-retention-runs.ts';

export const migrations: Record<string, Migration> = {
  '0001-initial': m0001,
  '0002-ehr-bridge': m0002,
  '0003-installation-secrets': m0003,
  '0004-list-counts': m0004,
  '0005-keyed-writes-in-one-transaction': m0005,
  '0006-forwarding-forms-and-circuit': m0006,
  '0007-events-and-webhooks': m0007,
  '0008-refhub-system': m0008,
  '0009-change-notifications': m0009,
  '0010-one-statement-writes': m0010,
  '0011-outbox-pending-work': m0011,
  '0012-attachments': m0012,
  '0013-forms-carry-attachments': m0013,
  '0014-outcomes': m0014,
  '0015-client-credentials': m0015,
  '0016-audit-chain': m0016,
  '0017-field-encryption': m0017,
  '0018-personal-data-together': m0018,
  '0019-events-without-free-text': m0019,
  '0020-audit-claims-and-forms': m0020,
  '0021-forward-backlog': m0021,
  '0022-reason-codes': m0022,
  '0023-priorities': m0023,
  '0024-worklists': m0024,
  '0025-redirect': m0025,
  '0026-wait-times': m0026,
  '0027-retention-partitions': m0027,
  '0028-archived-referrals': m0028,
  '0029-ledger-search': m0029,
  '0030-incidents': m0030,
  '0031-rate-limits': m0031,
  '0032-forward-backlog-walks': m0032,
  '0033-retention-runs': m0033,
};
