// The HTTP headers of the API as schemas: the request headers an operation honours (If-Match,
// Idempotency-Key) and the response headers it sends (ETag, API-Version, X-Request-Id, rate limits,
// Retry-After, Idempotent-Replayed, Location).
//
// The request headers are checked by the code that honours them (http.ts `ifMatchOf`, the idempotency
// plugin), with their own error messages. So their route schemas accept any text, and the exact
// format is given to the document alone, with `documentedAs`.
import { Type } from 'typebox';
import { documentedAs } from './documented.ts';

const IfMatch = Type.String({
  description:
    'The `ETag` of the referral as last read, such as `W/"3"` (or its strong form `"3"`). The change is made only if the referral is ' +
    'still at that version; otherwise 412 `version_mismatch`. Without it the change is made whatever the version.',
});

const IdempotencyKey = documentedAs(
  Type.String({
    description:
      'A key the client chooses for this request, such as a UUID. Retrying with the same key and body ' +
      'within 24 hours replays the first response (`Idempotent-Replayed: true`) instead of acting twice; ' +
      'the same key with another body is 422 `idempotency_key_reused`; while the first request still runs, 409.',
  }),
  Type.String({ minLength: 1, maxLength: 255, pattern: '^[\\x21-\\x7E]+$' }),
);

/** A POST that changes a referral: both guards apply. */
export const GuardedPostHeaders = Type.Object({
  'If-Match': Type.Optional(IfMatch),
  'Idempotency-Key': Type.Optional(IdempotencyKey),
});

/** A POST that honours Idempotency-Key (every POST does) but not If-Match. */
export const PostHeaders = Type.Object({ 'Idempotency-Key': Type.Optional(IdempotencyKey) });

/** A PUT, PATCH or DELETE of a referral. Idempotency-Key is honoured on POST only. */
export const GuardedHeaders = Type.Object({ 'If-Match': Type.Optional(IfMatch) });

/** Response headers, as @fastify/swagger reads them: a schema whose description becomes the header's. */
export const ResponseHeader = {
  ETag: Type.String({
    description:
      'The version of the referral as a weak ETag, such as `W/"3"`: it changes with every change to the ' +
      "referral, not with the bridge's bookkeeping. Send it back as `If-Match` to guard a change.",
  }),
  Location: Type.String({ description: 'The path of what was created: the referral, or the attachment.' }),
  'API-Version': Type.String({
    description: 'The version of the interface that answered, such as `0.0.71`.',
  }),
  'X-Request-Id': Type.String({
    description: 'The request ID: the one the client sent in `X-Request-Id` (if well-formed), or a new one.',
  }),
  'RateLimit-Policy': Type.String({
    description:
      "The client's rate limit (draft-ietf-httpapi-ratelimit-headers-11): one policy, `default`, of `q` " +
      'requests at once, earned back at the sustained rate over `w` seconds (`q` ÷ `w` requests a second). ' +
      'The client is the API key, or the client of the access token.',
    examples: ['"default";q=50;w=5'],
  }),
  RateLimit: Type.String({
    description:
      "The client's service limit now (draft-ietf-httpapi-ratelimit-headers-11): `r` requests it may send " +
      'at once, and `t` seconds until its whole burst is back; on a 429, `r=0` and `t` is `Retry-After`.',
    examples: ['"default";r=49;t=1'],
  }),
  'Retry-After': Type.Integer({ description: 'Seconds to wait before retrying.' }),
  'Webhook-Subscriptions-Disabled': Type.String({
    description:
      'Present while a webhook subscription of an institution this key acts for is disabled by refhub (its ' +
      'receiver answered 410, or deliveries kept failing): the subscription IDs, comma-separated. Enable it ' +
      'again (`enabled: true`) or delete it.',
  }),
  'Idempotent-Replayed': Type.Literal('true', {
    description:
      'Present when this is the stored response to an earlier request with the same Idempotency-Key.',
  }),
};
