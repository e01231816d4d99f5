// refhub values as FHIR primitive values. FHIR is stricter than refhub's API in a few places: a string
// must hold something besides whitespace, a `code` has no leading, trailing or doubled spaces, and a
// date's year starts at 0001. A value FHIR cannot carry is left out of the element (never altered),
// so the view stays valid and never says something refhub did not store.
import type { CodeableConcept, Coding, Extension } from '@medplum/fhirtypes';
import { FHIR_SYSTEMS } from './fhir-systems.ts';

/** The value, if FHIR can carry it as a `string` (it has a non-whitespace character). */
export function fhirString(value: string | null | undefined): string | undefined {
  return value !== null && value !== undefined && value.trim() !== '' ? value : undefined;
}

const CODE = /^[^\s]+( [^\s]+)*$/;

/** The value, if it is a valid FHIR `code`. */
export function fhirCode(value: string | null | undefined): string | undefined {
  return value !== null && value !== undefined && CODE.test(value) ? value : undefined;
}

const DATE = /^(\d(\d(\d[1-9]|[1-9]0)|[1-9]00)|[1-9]000)-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$/;

/** A `YYYY-MM-DD` date, if FHIR's `date` accepts it. */
export function fhirDate(value: string | null | undefined): string | undefined {
  return value !== null && value !== undefined && DATE.test(value) ? value : undefined;
}

/** A Coding, or nothing when the code cannot be carried. */
export function codingOf(system: string, code: string | null | undefined, display?: string): Coding[] {
  const valid = fhirCode(code);
  return valid === undefined ? [] : [{ system, code: valid, ...(display ? { display } : {}) }];
}

/** For a required element refhub has no value for: `_element: { extension: [dataAbsent] }`. */
export function dataAbsentUnknown(): { extension: Extension[] } {
  return { extension: [{ url: FHIR_SYSTEMS.dataAbsentReason, valueCode: 'unknown' }] };
}

/** `{ key: value }` when the value is present, else `{}`: for spreading optional elements. */
export function present<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}

/** A CodeableConcept of the codings and text that are present, or undefined when nothing is. */
export function codeableConceptOf(coding: readonly Coding[], text?: string): CodeableConcept | undefined {
  if (coding.length === 0 && text === undefined) return undefined;
  return { ...(coding.length === 0 ? {} : { coding: [...coding] }), ...present('text', text) };
}
