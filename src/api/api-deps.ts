// What the HTTP layer is given, so that it constructs nothing itself. `ApiDeps` lists the services and
// seams its routes and plugins call; the composition root passes its context, which has them all.
// `ApiParts` are the objects that keep state for one app (failure counts, the web session gate, the
// ops pages): the root builds them for each app it builds. Each route and plugin declares the `Pick`
// of these it uses. This file is apart from app.ts so that a route can name its deps without an
// import cycle back to the app that registers it.
import type { Config } from '../config.ts';
import type { Store } from '../db/database.ts';
import type { Stores } from '../db/stores.ts';
import type { Clock } from '../domain/clock.ts';
import type { DisplayTime } from '../domain/display-time.ts';
import type { Logger } from '../logger.ts';
import type { Metrics } from '../observability/metrics.ts';
import type { QueueProducer } from '../queue/producer.ts';
import type { AccessReport } from '../services/audit/access-report.service.ts';
import type { OpsOverviewService } from '../services/admin-overview.service.ts';
import type { ApiKeyService } from '../services/api-key.service.ts';
import type { Attachments } from '../services/attachments/attachments.service.ts';
import type { CatalogService } from '../services/catalog/catalog.service.ts';
import type { ClientCredentials } from '../services/client-credentials/client-credentials.service.ts';
import type { ScannerPing } from '../services/doctor-checks.ts';
import type { EventFeed } from '../services/events.service.ts';
import type { ReferralFhir } from '../services/fhir.service.ts';
import type { EhrForwarding } from '../services/forwarding.service.ts';
import type { LinkMinter } from '../services/links/minter.ts';
import type { LinkRedemption } from '../services/links/redemption.service.ts';
import type { LinkService } from '../services/links/links.service.ts';
import type { ReferralCommands } from '../services/referrals/commands.ts';
import type { ReferralQueries } from '../services/referrals/queries.ts';
import type { RateLimits } from '../services/rate-limits.service.ts';
import type { WaitTimes } from '../services/wait-times.service.ts';
import type { WebhookSubscriptions } from '../services/webhooks/webhooks.service.ts';
import type { AdminAudit } from './admin/admin-audit.ts';
import type { OpsAuth } from './admin/ops-auth.ts';
import type { QueueBoard } from './admin/queue-board.ts';
import type { FailureLimiter } from './failure-limiter.ts';
import type { UploadBudget } from './upload-budget.ts';
import type { SessionGate } from './web/session-gate.ts';

export interface ApiDeps {
  readonly config: Config;
  readonly logger: Logger;
  /** The capability-named stores: what the routes and plugins read and write through. */
  readonly stores: Stores;
  /**
   * Which engine the database runs on and how to ask it, for `/doctor`'s checks, and its connections
   * in use, for readiness.
   */
  readonly store: Pick<Store, 'engine' | 'connections' | 'probe'>;
  readonly clock: Clock;
  /** Times people read on the web pages, in DISPLAY_TIME_ZONE. */
  readonly displayTime: DisplayTime;
  readonly metrics: Metrics;
  /** Asked only by readiness and the doctor; the producer reaches the queues on first use. */
  readonly queues: Pick<QueueProducer, 'health' | 'backend'>;
  /** Set when the process begins to stop: readiness answers "draining". */
  readonly lifecycle: { readonly draining: boolean };
  readonly apiKeys: Pick<ApiKeyService, 'authenticate'>;
  /** Signed client credentials: the token endpoint, and the access tokens it issued. */
  readonly clientCredentials: Pick<ClientCredentials, 'issueToken' | 'authenticate'>;
  /** Mints a link again when a keyed request is replayed. */
  readonly linkMinter: Pick<LinkMinter, 'mintOne'>;
  readonly referralQueries: ReferralQueries;
  readonly referralCommands: ReferralCommands;
  readonly referralFhir: ReferralFhir;
  readonly attachments: Attachments;
  /** Asks the malware scanner for an answer, for `/doctor`. */
  readonly pingScanner: ScannerPing;
  readonly links: LinkService;
  readonly linkRedemption: Pick<LinkRedemption, 'redeem'>;
  readonly catalog: Pick<
    CatalogService,
    'listOfferings' | 'findOffering' | 'listOutcomeCodes' | 'listReasonCodes' | 'listPriorityCodes'
  >;
  readonly ehrForwarding: Pick<EhrForwarding, 'submissions' | 'formOfAttempt'>;
  readonly eventFeed: EventFeed;
  readonly webhookSubscriptions: WebhookSubscriptions;
  /** A patient's access report: who read or changed the patient's referrals. */
  readonly accessReport: AccessReport;
  /** The offerings' wait times, for the API and the web form. */
  readonly waitTimes: Pick<WaitTimes, 'forOffering' | 'acceptedHints'>;
  /** Each client's rate limit, its buckets shared by every API process. */
  readonly rateLimits: Pick<RateLimits, 'take'>;
}

/** The hosted form's own state: its session gate, and the count of unknown link tokens per address. */
export interface WebParts {
  readonly gate: SessionGate;
  readonly linkFailures: FailureLimiter;
  /** The app's upload budget, shared with the API's attachment route. */
  readonly uploads: UploadBudget;
}

/** The ops pages' own state: the queue board, the overview, their audit and the sign-in. */
export interface AdminParts {
  readonly board: QueueBoard;
  readonly overview: OpsOverviewService;
  readonly audit: AdminAudit;
  readonly auth: OpsAuth;
}

/** The objects that keep state for one app, built by the composition root with the app. */
export interface ApiParts {
  /** Unknown API keys per client address. */
  readonly apiKeyFailures: FailureLimiter;
  /** The bytes of uploads the app holds at once, the web form's included. */
  readonly uploads: UploadBudget;
  readonly web: WebParts;
  readonly admin: AdminParts;
}
