// The bytes of EHR forms a process's forward jobs hold at once: the budget alone, and a forward job
// that waits for it. A job holds its form several times over while the EHR answers, and the largest
// referral's form is 2.4 MiB, so without a bound sixteen jobs at once hold about 150 MiB.
import { describe, expect, it, vi } from 'vitest';
import { systemClock } from '../../../src/domain/clock.ts';
import type { EhrFormSource } from '../../../src/domain/referral-view.ts';
import { createLogger } from '../../../src/logger.ts';
import { EHR_FORM_CSP } from '../../../src/render/self-contained.ts';
import type { AttemptOutcome, EhrForwarding } from '../../../src/services/forwarding.service.ts';
import type { EhrCircuit } from '../../../src/workers/forwarding/ehr-circuit.ts';
import type { EhrAnswer, EhrClient } from '../../../src/workers/forwarding/ehr-client.ts';
import {
  createFormBudget,
  FORM_COPIES_IN_FLIGHT,
  FORMS_IN_FLIGHT_BYTES,
} from '../../../src/workers/forwarding/form-budget.ts';
import { forwardReferral } from '../../../src/workers/forwarding/forward-referral.ts';

describe('the form budget', () => {
  it('gives what fits at once, and gives it back', () => {
    const budget = createFormBudget(100);
    const first = budget.tryTake(60);
    const second = budget.tryTake(40);
    expect(first).toBeDefined();
    expect(second).toBeDefined();
    expect(budget.held).toBe(100);
    expect(budget.tryTake(1)).toBeUndefined();
    first!();
    first!();
    expect(budget.held).toBe(40);
  });

  it('lets the jobs that wait go in the order they asked, none overtaking the first', async () => {
    const budget = createFormBudget(100);
    const holding = budget.tryTake(90)!;
    const order: string[] = [];
    const big = budget.take(50).then((release) => {
      order.push('big');
      return release;
    });
    const small = budget.take(5).then((release) => {
      order.push('small');
      return release;
    });
    // 5 bytes would fit now, but the job before it is still waiting.
    expect(budget.tryTake(5)).toBeUndefined();
    expect(budget.waiting).toBe(2);
    holding();
    (await big)();
    (await small)();
    expect(order).toEqual(['big', 'small']);
    expect(budget.held).toBe(0);
  });

  it('lets a form larger than the whole budget go alone, once nothing else is held', async () => {
    const budget = createFormBudget(100);
    const small = budget.tryTake(10)!;
    const huge = budget.take(1_000);
    expect(budget.waiting).toBe(1);
    small();
    const release = await huge;
    expect(budget.held).toBe(1_000);
    expect(budget.tryTake(1)).toBeUndefined();
    release();
    expect(budget.held).toBe(0);
  });

  it('by default holds three of the largest forms at once (2.4 MiB each)', () => {
    const largest = FORM_COPIES_IN_FLIGHT * 2.4 * 1024 * 1024;
    expect(Math.floor(FORMS_IN_FLIGHT_BYTES / largest)).toBe(3);
  });
});

/** A self-contained document of about `size` characters, as the renderer writes one. */
function formOf(size: number): string {
  const csp = EHR_FORM_CSP.replaceAll("'", '&#39;');
  const shell = `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><meta http-equiv="Content-Security-Policy" content="${csp}"><title>Referral</title></head><body><p></p></body></html>`;
  return shell.replace('<p></p>', `<p>${'x'.repeat(Math.max(0, size - shell.length))}</p>`);
}

describe('a forward job', () => {
  it('waits for room without holding its form, and renders it again once the job before it is recorded', async () => {
    const size = 10_000;
    // Room for one such form's copies in flight, not for two.
    const budget = createFormBudget(FORM_COPIES_IN_FLIGHT * size * 1.5);
    const events: string[] = [];
    const answers = new Map<string, (answer: EhrAnswer) => void>();
    const source = {
      patient: { uin: 'S1234567D', name: 'Tan Ah Kow', dob: '1960-02-29' },
      offering: { ehrCode: 'GASTRO', specialty: 'Gastroenterology' },
    } as unknown as EhrFormSource;
    const forwarding = {
      plan: (referralId: string) =>
        Promise.resolve({ kind: 'send', record: { id: referralId, version: 2 }, source }),
      keepForm: (messageId: string, _id: string, _version: number, rendered: { html: string }) => {
        events.push(`keep ${messageId}`);
        return Promise.resolve({
          changed: false,
          form: { ...rendered, formType: 'letter', sha256: 'a'.repeat(64), attachments: [] },
        });
      },
      recordAttempt: (outcome: AttemptOutcome) => {
        events.push(`record ${outcome.messageId} ${outcome.outcome}`);
        return Promise.resolve();
      },
    } as unknown as EhrForwarding;
    const ehr = {
      url: 'https://ehr.example.org/referrals',
      send: (_body: Uint8Array, messageId: string) =>
        new Promise<EhrAnswer>((resolve) => {
          events.push(`send ${messageId}`);
          answers.set(messageId, resolve);
        }),
      close: () => Promise.resolve(),
    } as unknown as EhrClient;
    const circuit = {
      admit: () => Promise.resolve({ kind: 'send' }),
      observe: () => Promise.resolve(),
    } as unknown as EhrCircuit;
    const renders: string[] = [];
    const deps = {
      forwarding,
      ehr,
      circuit,
      renderEhrForm: () => {
        renders.push('render');
        return { html: formOf(size), formType: 'letter' };
      },
      clock: systemClock,
      logger: createLogger({ logLevel: 'silent', env: 'test' }),
      maxAttempts: 3,
      formBudget: budget,
    };
    const delivered: EhrAnswer = {
      kind: 'response',
      status: 201,
      reference: 'EHR-1',
      retryAfterMs: undefined,
    };

    const first = forwardReferral(deps, { referralId: 'first', requestId: 'r1' } as never, 1);
    await vi.waitFor(() => {
      expect(answers.has('first.v2')).toBe(true);
    });
    const second = forwardReferral(deps, { referralId: 'second', requestId: 'r2' } as never, 1);
    await vi.waitFor(() => {
      expect(budget.waiting).toBe(1);
    });
    // The second job rendered its form, found no room, and dropped it: nothing of it is kept or sent.
    expect(renders).toHaveLength(2);
    expect(events).toEqual(['keep first.v2', 'send first.v2']);

    answers.get('first.v2')!(delivered);
    await expect(first).resolves.toBe('delivered');
    await vi.waitFor(() => {
      expect(answers.has('second.v2')).toBe(true);
    });
    answers.get('second.v2')!(delivered);
    await expect(second).resolves.toBe('delivered');
    expect(renders).toHaveLength(3);
    expect(events).toEqual([
      'keep first.v2',
      'send first.v2',
      'record first.v2 delivered',
      'keep second.v2',
      'send second.v2',
      'record second.v2 delivered',
    ]);
    expect(budget.held).toBe(0);
  });
});
