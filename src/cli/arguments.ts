// Commander's parsers for what an operator types after `refhub`: each turns an argument into the
// value a command takes, or refuses it with what was expected. They check the shape only; whether a
// key, referral or event exists is the command's to find out.
import { InvalidArgumentError } from 'commander';
import type { InstitutionRef } from '../domain/access.ts';
import { isUuid } from '../domain/ids.ts';
import { ROLES, type Role } from '../domain/statuses.ts';

/** `--institution idType:id`, repeatable: each one adds to the list. */
export function institutionArg(value: string, previous: InstitutionRef[] = []): InstitutionRef[] {
  const [idType, id, ...rest] = value.split(':');
  if (
    idType === undefined ||
    id === undefined ||
    rest.length > 0 ||
    !/^[a-z]+$/.test(idType) ||
    !/^[A-Za-z0-9._-]{1,64}$/.test(id)
  ) {
    throw new InvalidArgumentError('expected idType:id, for example hci:S1234A');
  }
  return [...previous, { idType, id }];
}

export function roleArg(value: string): Role {
  if (!(ROLES as readonly string[]).includes(value))
    throw new InvalidArgumentError(`expected ${ROLES.join(', ')}`);
  return value as Role;
}

/** A UUID naming `what`, in lower case. */
export function uuidArg(what: string) {
  return (value: string): string => {
    if (!isUuid(value)) throw new InvalidArgumentError(`expected ${what} (a UUID)`);
    return value.toLowerCase();
  };
}

export function instantArg(value: string): Date {
  const at = new Date(value);
  if (!/^\d{4}-\d{2}-\d{2}T/.test(value) || Number.isNaN(at.getTime())) {
    throw new InvalidArgumentError('expected an ISO 8601 time, for example 2026-06-04T03:00:00Z');
  }
  return at;
}

/** `--port`: a whole number from 0 (any free port) to 65535. */
export function portArg(value: string): number {
  if (!/^\d{1,5}$/.test(value) || Number(value) > 65_535) {
    throw new InvalidArgumentError('expected a port number from 0 to 65535');
  }
  return Number(value);
}

/** `--token`: printable ASCII without spaces, as a bearer token must be. */
export function tokenArg(value: string): string {
  if (!/^[\x21-\x7e]{1,512}$/.test(value)) {
    throw new InvalidArgumentError('expected 1 to 512 printable characters without spaces');
  }
  return value;
}

/** `--since`, `--from`, `--to`: a day, YYYY-MM-DD, as the chains are named (UTC). */
export function dayArg(value: string): string {
  const at = new Date(`${value}T00:00:00Z`);
  if (!/^\d{4}-\d{2}-\d{2}$/.test(value) || Number.isNaN(at.getTime()) || !at.toISOString().startsWith(value))
    throw new InvalidArgumentError('expected a day, YYYY-MM-DD (UTC), for example 2026-11-26');
  return value;
}

/** `--role` of a client: it acts for a clinic's or a hospital's system, never for the operators. */
export function clientRoleArg(value: string): 'sender' | 'provider' {
  if (value !== 'sender' && value !== 'provider')
    throw new InvalidArgumentError('expected sender or provider');
  return value;
}

/** `--per-second`: requests a second, a number such as 10 or 0.5 (the service checks its bounds). */
export function perSecondArg(value: string): number {
  if (!/^\d+(\.\d+)?$/.test(value))
    throw new InvalidArgumentError('expected a number, for example 10 or 0.5');
  return Number(value);
}

/** `--burst`: a whole number of requests (the service checks its bounds). */
export function burstArg(value: string): number {
  if (!/^\d{1,9}$/.test(value)) throw new InvalidArgumentError('expected a whole number, for example 50');
  return Number(value);
}
