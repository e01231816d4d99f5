// @refhub/client: a typed client for the refhub referral API.
export {
  createRefhubClient,
  type ApiKeyClientOptions,
  type ClientCredentialsClientOptions,
  type RefhubClient,
  type RefhubClientOptions,
} from './refhub-client.ts';
export type { AssertionAlgorithm, ClientCredentialsOptions } from './client-credentials.ts';
export { InstitutionClient } from './institution-client.ts';
export { ReferralHandle, type ReadOptions, type WriteOptions } from './referral-handle.ts';
export { RefhubNetworkError, RefhubProblemError, RefhubTokenError } from './problems.ts';
export type { AttemptReport, RetryPolicy } from './retrying-fetch.ts';
export type * from './models.ts';
export type { components, operations, paths } from './openapi.generated.ts';
