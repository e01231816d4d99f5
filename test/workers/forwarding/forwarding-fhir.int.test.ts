// The FHIR view of a referral the real forward worker delivered to a real EHR (the sandbox EHR, as a
// separate process, over HTTP): its AuditEvent names the message the EHR received and carries the
// SHA-256 of the exact form bytes, which are the ehrForm a client reads at that version.
import { createHash } from 'node:crypto';
import type { AuditEvent } from '@medplum/fhirtypes';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBridgeApp, eventually, startEhr, type BridgeApp } from '../../support/bridge.ts';
import { APP_ENGINES } from '../../support/engines.ts';
import { loadFhirR4 } from '../../support/fhir-validation.ts';
import { readFhir, resourcesOf } from '../../support/fhir-view.ts';
import { CANARY } from '../../support/fixtures/patients.ts';
import type { SandboxEhrProcess } from '../../support/sandbox-ehr-process.ts';
import { call, createDraft } from '../../support/scenarios.ts';

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

describe.each(APP_ENGINES)('the FHIR view of a forwarded referral on %s', (engine) => {
  let ehr: SandboxEhrProcess;
  let t: BridgeApp;

  beforeAll(async () => {
    loadFhirR4();
    ehr = await startEhr();
    t = await createBridgeApp(engine, ehr, { env: { EHR_MAX_ATTEMPTS: '3' } });
  });
  afterAll(async () => {
    await t.close();
    await ehr.stop();
  });

  it('records the delivery as an AuditEvent with the SHA-256 of the form the EHR received', async () => {
    const draft = await createDraft(t, CANARY);
    await call(t, t.sender, 'POST', `/api/v1/referrals/${draft.id}/submit`, {});
    const sent = (await call(
      t,
      t.sender,
      'GET',
      `/api/v1/referrals/${draft.id}?requesterIdentifier=dr.lim@example.org&institutionIdType=hci&institutionId=S1234A&additionalField=ehrForm`,
    )) as { version: number; ehrForm: string };

    t.startBackground();
    const [delivery] = await eventually('the delivery', async () => {
      const list = await ehr.deliveries({ referralId: draft.id });
      return list.length > 0 ? list : undefined;
    });
    const { bundle } = await eventually('the AuditEvent', async () => {
      const read = await readFhir(t, t.provider, draft.id);
      return resourcesOf<AuditEvent>(read.bundle, 'AuditEvent').length > 0 ? read : undefined;
    });

    const [event] = resourcesOf<AuditEvent>(bundle, 'AuditEvent');
    expect(event?.outcome).toBe('0');
    const form = event?.entity?.find((e) => e.what?.identifier?.value === `${draft.id}.v${sent.version}`);
    expect(form?.detail).toContainEqual({ type: 'sha256', valueString: sha256(sent.ehrForm) });
    expect(delivery?.sha256).toBe(sha256(sent.ehrForm));
    const reference = event?.entity?.find(
      (e) => e.what?.identifier?.system === 'urn:refhub:fhir:NamingSystem:ehr-reference',
    );
    expect(reference?.what?.identifier?.value).toBe(delivery?.reference);
  });
});
