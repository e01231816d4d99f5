// The logger's redaction is the second line of defence: no code logs bodies or patient fields, but a
// careless call that passes one must still not write it.
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../src/logger.ts';
import { CANARY, CANARY_MARKERS } from './support/fixtures/patients.ts';
import { repeatedKeys } from './support/json-keys.ts';

function capture() {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  return { logger: createLogger({ logLevel: 'info', env: 'test' }, sink), lines };
}

describe('the repeated-key scanner of the log-line tests', () => {
  it('finds a repeated key in a raw line, where JSON.parse would keep only the last', () => {
    expect(repeatedKeys('{"a":1,"worker":"w","b":{"worker":"x"},"worker":"w"}')).toEqual(['worker']);
    expect(repeatedKeys('{"a":"{\\"a\\":1}","b":[{"a":1},{"a":2}],"c":"x,\\"a"}')).toEqual([]);
  });
});

describe('log redaction', () => {
  it('hides patient fields, top-level and one level down', () => {
    const { logger, lines } = capture();
    logger.info(
      { patientName: CANARY.patientName, referral: { patientUin: CANARY.patientUin, dob: CANARY.dob } },
      'x',
    );
    logger.info(
      { input: { patientPhoneNumber: CANARY.patientPhoneNumber, clinicalInfo: CANARY.clinicalInfo } },
      'y',
    );
    logger.info({ patient: { name: CANARY.patientName } }, 'z');
    const text = lines.join('');
    for (const marker of CANARY_MARKERS) expect(text).not.toContain(marker);
    expect(text).toContain('[redacted]');
  });

  it('hides credentials, cookies, link tokens, bodies and database error details', () => {
    const { logger, lines } = capture();
    logger.info(
      {
        req: { headers: { authorization: 'ApiKey rfh_test_secret', cookie: 'refhub_session=abc' } },
        res: { headers: { 'set-cookie': 'refhub_session=abc' } },
        token: 'link-token-value',
        link: { token: 'link-token-value' },
        body: '{"patientName":"x"}',
        err: { detail: 'Key (patient_uin)=(S7777777Q) already exists.' },
      },
      'request',
    );
    const text = lines.join('');
    for (const secret of [
      'rfh_test_secret',
      'refhub_session=abc',
      'link-token-value',
      'patientName',
      'S7777777Q',
    ]) {
      expect(text).not.toContain(secret);
    }
  });
});
