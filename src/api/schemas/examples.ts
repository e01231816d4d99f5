// The examples the OpenAPI document gives for every request: each parameter's and each body's. The
// docs page fills "Try it out" with them, so they are real values of the demo installation that
// `npm start` sets up (catalog/demo.json and the demo keys of composition/demo-setup.ts): the sender
// Bukit Timah Family Clinic (hci:S1234A), the provider Central General Hospital (hci:S9001Z), its
// offering `cgh-gastro`. Without them Swagger UI invents values from the schemas (random text for a
// pattern, "string", today's date of birth) that refhub refuses.
//
// They are added to the document alone (openapi.ts's transform), never to the schemas the validator
// compiles. test/api/openapi-examples.test.ts fails for an operation whose body or parameter has no
// example, for an example its schema refuses, and for an example request the demo installation
// would turn away.
import { v5 as uuidv5 } from 'uuid';

/** The demo sender and the demo provider, as a request names the institution it acts for. */
export const EXAMPLE_SENDER = { institutionIdType: 'hci', institutionId: 'S1234A' } as const;
export const EXAMPLE_PROVIDER = { institutionIdType: 'hci', institutionId: 'S9001Z' } as const;
const SENDER_PERSON = 'dr.lim@bukittimah.example';
const PROVIDER_PERSON = 'dr.wong@centralgeneral.example';
/** An offering of the demo provider. */
export const EXAMPLE_OFFERING = 'cgh-gastro';

/** Example identifiers: a referral, a webhook subscription and its delivery, an EHR attempt. */
const REFERRAL_ID = '01970a4d-0b1a-7c2d-9e30-0123456789ab';
const SUBSCRIPTION_ID = '01970a50-2d3c-7e4f-8a51-23456789abcd';
const EVENT_ID = '01970a4e-1c2b-7d3e-8f40-123456789abc';
const ATTEMPT_ID = '01970a52-4e5f-7a60-9b72-3456789abcde';
const ATTACHMENT_ID = '01970a53-5f60-7b71-8c83-456789abcdef';

/** The parameters whose example is the same in every operation, by name. */
const PARAMETERS: Readonly<Record<string, unknown>> = {
  institutionIdType: EXAMPLE_SENDER.institutionIdType,
  institutionId: EXAMPLE_SENDER.institutionId,
  requesterIdentifier: SENDER_PERSON,
  referralId: REFERRAL_ID,
  subscriptionId: SUBSCRIPTION_ID,
  attemptId: ATTEMPT_ID,
  appointmentId: 'APPT-20270301-01',
  eventId: EVENT_ID,
  attachmentId: ATTACHMENT_ID,
  'Content-Disposition': 'attachment; filename="ecg-report.txt"',
  // The ETag of a referral as created; send the one you last read.
  'If-Match': 'W/"1"',
  status: ['draft', 'pending'],
  role: 'sender',
  offset: 0,
  pageSize: 10,
  sort: 'updatedAt',
  additionalField: ['ehrForm'],
  // The feed's first position (base64url of `0.0`): every event kept.
  after: 'MC4w',
  limit: 100,
  wait: 0,
};

/** The patient and referrer of the examples: fictitious, in the formats refhub takes. */
const REFERRAL_CONTENT = {
  offeringId: EXAMPLE_OFFERING,
  referrerName: 'Dr Lim Wei Ming',
  referrerIdType: 'mcr',
  referrerId: 'M12345A',
  referrerEmail: SENDER_PERSON,
  referrerContactNumber: '64561234',
  patientUin: 'S1234567D',
  patientName: 'Tan Ah Kow',
  patientPhoneNumber: '91234567',
  dob: '1960-02-29',
  patientGender: 'Male',
  nationality: 'SG',
  residentialStatus: 'SC',
  clinicalInfo: 'Dyspepsia for 3 months, not relieved by antacids.',
  isUrgent: false,
  priority: 'routine',
};

const bySender = { ...EXAMPLE_SENDER, requesterIdentifier: SENDER_PERSON };
const byProvider = { ...EXAMPLE_PROVIDER, requesterIdentifier: PROVIDER_PERSON };
const asProvider = { ...byProvider };
const subscription = {
  url: 'https://his.bukittimah.example/refhub/events',
  eventTypes: ['referral.accepted', 'referral.cancelled'],
  description: 'Referral status updates',
};

interface OperationExamples {
  /** Parameters whose example differs from PARAMETERS in this operation. */
  readonly parameters?: Readonly<Record<string, unknown>>;
  readonly body?: unknown;
}

/** The examples of each operation, by operationId. A POST's Idempotency-Key is added below. */
const OPERATIONS: Readonly<Record<string, OperationExamples>> = {
  listReferrals: { parameters: { priority: ['routine'] } },
  listWorklists: {},
  getWorklist: { parameters: { worklistName: 'needs-action' } },
  searchReferrals: {
    body: { status: ['pending'], role: 'sender', pageSize: 10, patientUin: 'S1234567D' },
  },
  getReferral: {},
  createReferral: { body: { ...bySender, ...REFERRAL_CONTENT } },
  updateReferral: {
    body: { ...bySender, clinicalInfo: 'Dyspepsia for 3 months; weight loss of 3 kg.', priority: 'urgent' },
  },
  deleteReferral: {},
  submitReferral: { body: bySender },
  cancelReferral: {
    body: {
      ...bySender,
      reasonCode: 'no-longer-needed',
      cancelNote: 'Patient recovered.',
      cancelledByName: 'Dr Lim Wei Ming',
    },
  },
  returnReferralToDraft: {
    body: { ...bySender, reasonCode: 'details-to-correct', comment: 'The date of birth was wrong.' },
  },
  // A referral pending acceptance at cgh-gastro, handed on to Eastside Regional Hospital's cardiology.
  redirectReferral: {
    parameters: asProvider,
    body: {
      ...byProvider,
      offeringId: 'erh-cardio',
      reasonCode: 'wrong-service',
      comment: 'The symptoms point to a cardiac cause; our cardiology colleagues at Eastside will see him.',
      redirectedByName: 'Dr Wong Mei Ling',
    },
  },
  acknowledgeReferralOutcome: { body: { ...bySender, acknowledgedByName: 'Dr Lim Wei Ming' } },
  addReferralNote: {
    body: {
      ...bySender,
      content: 'The patient prefers morning appointments.',
      authorName: 'Dr Lim Wei Ming',
    },
  },
  acceptReferral: { parameters: asProvider, body: { ...byProvider, acceptedByName: 'Dr Wong Mei Ling' } },
  rejectReferral: {
    parameters: asProvider,
    body: {
      ...byProvider,
      reasonCode: 'manage-in-primary-care',
      reason: 'Please refer to the polyclinic first.',
      rejectedByName: 'Dr Wong Mei Ling',
    },
  },
  requestSenderAction: {
    parameters: asProvider,
    body: {
      ...byProvider,
      reasonCode: 'more-information-needed',
      reason: 'Please add the results of the recent blood tests.',
      requestedByName: 'Dr Wong Mei Ling',
    },
  },
  completeReferral: {
    parameters: asProvider,
    body: {
      ...byProvider,
      outcomeCode: 'seen-follow-up',
      summary:
        'Gastroscopy on 14 January: mild antral gastritis, biopsies taken (CLO test negative). ' +
        'Continue omeprazole 20 mg daily for 8 weeks; review in clinic in 3 months.',
      completedByName: 'Dr Wong Mei Ling',
    },
  },
  listOutcomeCodes: { parameters: asProvider },
  listReasonCodes: { parameters: { ...asProvider, action: 'reject' } },
  listPriorities: { parameters: { ...bySender, offeringId: EXAMPLE_OFFERING } },
  getWaitTimes: { parameters: { ...bySender, offeringId: EXAMPLE_OFFERING } },
  upsertAppointment: {
    parameters: asProvider,
    body: {
      ...byProvider,
      status: 'scheduled',
      startAt: '2027-03-01T01:30:00.000Z',
      location: 'Clinic 2C, Level 2',
    },
  },
  upsertLink: {
    body: {
      ...bySender,
      offeringId: EXAMPLE_OFFERING,
      patientUin: 'S1234567D',
      patientName: 'Tan Ah Kow',
      dob: '1960-02-29',
      nationality: 'SG',
      clinicalInfo: 'Dyspepsia for 3 months.',
    },
  },
  // The file itself is the body: here a short text file, as `curl --data-binary @ecg-report.txt` sends it.
  addAttachment: { body: 'ECG 12-lead: sinus rhythm, rate 72. QTc 410 ms. No ST changes.' },
  listAttachments: {},
  getAttachment: {},
  getAttachmentContent: {},
  removeAttachment: {},
  listEhrSubmissions: {},
  getEhrSentForm: {},
  getReferralFhir: {},
  listEvents: {},
  listWebhookSubscriptions: {},
  createWebhookSubscription: { body: subscription },
  getWebhookSubscription: {},
  updateWebhookSubscription: { body: { eventTypes: ['referral.accepted'], enabled: true } },
  deleteWebhookSubscription: {},
  rotateWebhookSecret: {},
  sendWebhookTest: {},
  listWebhookAttempts: {},
  // asOf: a later page's, as the first page's metadata gave it.
  getPatientAccessReport: { parameters: { patientUin: 'S1234567D', asOf: '48213' } },
  searchPatientAccessReport: { body: { ...bySender, patientUin: 'S1234567D', pageSize: 10 } },
};

// Idempotency-Key: one per operation, so that trying one operation after another with their examples
// never reuses a key (422 idempotency_key_reused); trying the same one again replays its answer.
const IDEMPOTENCY_NAMESPACE = '4f1c9a7e-2b8d-5e3f-9a6c-0d1e2f3a4b5c';

/** The example of a parameter of `operationId`, or undefined when there is none. */
export function parameterExample(operationId: string, name: string): unknown {
  if (name === 'Idempotency-Key') return uuidv5(operationId, IDEMPOTENCY_NAMESPACE);
  const own = OPERATIONS[operationId]?.parameters;
  return own !== undefined && name in own ? own[name] : PARAMETERS[name];
}

/** The example request body of `operationId`, or undefined when there is none. */
export function bodyExample(operationId: string): unknown {
  return OPERATIONS[operationId]?.body;
}

type SchemaNode = Readonly<Record<string, unknown>>;

function withParameterExamples(operationId: string, part: unknown): unknown {
  const properties = (part as { properties?: Record<string, SchemaNode> } | undefined)?.properties;
  if (properties === undefined) return part;
  return {
    ...(part as SchemaNode),
    properties: Object.fromEntries(
      Object.entries(properties).map(([name, schema]) => {
        const example = parameterExample(operationId, name);
        return [name, example === undefined ? schema : { ...schema, examples: [example] }];
      }),
    ),
  };
}

/** The route schema as the document shows it, with the examples of its operation. */
export function withExamples<S>(schema: S): S {
  const route = schema as SchemaNode | undefined;
  const operationId = route?.operationId;
  if (route === undefined || typeof operationId !== 'string') return schema;
  const body = bodyExample(operationId);
  return {
    ...route,
    ...(route.params === undefined ? {} : { params: withParameterExamples(operationId, route.params) }),
    ...(route.querystring === undefined
      ? {}
      : { querystring: withParameterExamples(operationId, route.querystring) }),
    ...(route.headers === undefined ? {} : { headers: withParameterExamples(operationId, route.headers) }),
    ...(route.body === undefined || body === undefined
      ? {}
      : { body: { ...(route.body as SchemaNode), examples: [body] } }),
  } as S;
}
