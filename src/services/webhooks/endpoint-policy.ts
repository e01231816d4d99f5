// Which URLs a webhook subscription may point to, checked when a subscription is created or its URL
// changes, as EHR_URL is at start: `https` (plain `http` only outside production), no credentials
// in the URL, and a host whose every address is public unless WEBHOOK_ALLOWED_ADDRESSES names it.
// Outside production loopback addresses pass too (a developer's receiver on their own machine), and so
// does a host that does not resolve yet; private, link-local, metadata and every other non-public
// address need the allowance in every mode, or any key could aim the test event into refhub's network.
// The delivery client checks the addresses again when it connects (DNS may change).
import { nonPublicAddressReason, type HostLookup } from '../outbound-address.ts';
import { ValidationError } from '../../errors.ts';

export interface EndpointPolicy {
  readonly production: boolean;
  readonly allowed: ReadonlySet<string>;
  readonly lookup?: HostLookup | undefined;
}

export const MAX_URL_LENGTH = 2048;

/** The URL as it will be stored, or a 400 naming `path` and why. */
export async function checkEndpointUrl(raw: string, policy: EndpointPolicy, path: string): Promise<string> {
  const refuse = (message: string): never => {
    throw new ValidationError([{ path, message }]);
  };
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return refuse('is not an absolute URL');
  }
  const schemes = policy.production ? ['https:'] : ['https:', 'http:'];
  if (!schemes.includes(url.protocol)) {
    refuse(policy.production ? 'must use https' : 'must use https or http');
  }
  if (url.username !== '' || url.password !== '') refuse('must not carry a user name or password');
  if (url.hash !== '') refuse('must not have a fragment');
  const leeway = policy.production ? {} : { loopback: true, unresolved: true };
  const reason = await nonPublicAddressReason(url, policy.allowed, policy.lookup, leeway);
  if (reason !== null) {
    refuse(
      `must reach a public address${policy.production ? '' : ' or loopback'}: ${reason} ` +
        '(an operator may allow it in WEBHOOK_ALLOWED_ADDRESSES)',
    );
  }
  return url.toString();
}
