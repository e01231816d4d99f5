// The doctor's scanner check against a real ClamAV daemon (test/support/clamd-server.ts): clamd at
// ATTACHMENT_SCANNER answers, or the check fails naming the address and why (nobody listening, a
// listener that never answers), never anything of an attachment. Without a scanner it says in words
// that refhub scans nothing, and fails only where production would refuse to start.
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pingScanner } from '../../src/composition/context.ts';
import { scannerCheck, SCANNER_PING_TIMEOUT_MS } from '../../src/services/doctor-checks.ts';
import { startClamd, type ClamdServer } from '../support/clamd-server.ts';
import { freePort, LOOPBACK } from '../support/free-port.ts';

const settings = (attachmentScanner: string | undefined) => ({
  env: 'development' as const,
  attachmentScanner,
  attachmentsScannedElsewhere: false,
});

describe('the doctor’s scanner check', () => {
  let clamd: ClamdServer;
  beforeAll(async () => {
    clamd = await startClamd();
  }, 60_000);
  afterAll(async () => {
    await clamd.stop();
  });

  it('passes when clamd at ATTACHMENT_SCANNER answers', async () => {
    expect(await scannerCheck(settings(clamd.address), pingScanner)).toEqual({
      name: 'scanner',
      status: 'passed',
      detail: `clamd at ${clamd.address} answers`,
    });
  });

  it('fails naming the address when nobody listens there', async () => {
    const address = `clamd://${LOOPBACK}:${await freePort()}`;
    expect(await scannerCheck(settings(address), pingScanner)).toEqual({
      name: 'scanner',
      status: 'failed',
      detail:
        `clamd at ${address}: nothing accepts connections there, or the host does not resolve ` +
        '(scanner_unreachable); attachments wait for their scan until it answers',
    });
  });

  it('fails naming the address when what listens there never answers', async () => {
    const held: net.Socket[] = [];
    const silent = net.createServer((socket) => held.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, LOOPBACK, resolve));
    const { port } = silent.address() as net.AddressInfo;
    try {
      const check = await scannerCheck(settings(`clamd://${LOOPBACK}:${port}`), pingScanner);
      expect(check).toEqual({
        name: 'scanner',
        status: 'failed',
        detail:
          `clamd at clamd://${LOOPBACK}:${port}: no answer within ${SCANNER_PING_TIMEOUT_MS / 1000} s ` +
          '(scanner_timeout); attachments wait for their scan until it answers',
      });
    } finally {
      for (const socket of held) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });

  it('says in words that refhub scans nothing when no scanner is set, and fails that in production', async () => {
    const ping = () => Promise.reject(new Error('no scanner to ask'));
    expect(await scannerCheck(settings(undefined), ping)).toEqual({
      name: 'scanner',
      status: 'passed',
      detail: 'unset: attachments are not scanned for malware, never in production',
    });
    expect(await scannerCheck({ ...settings(undefined), env: 'production' }, ping)).toMatchObject({
      status: 'failed',
      detail: 'unset: attachments are not scanned for malware, never in production',
    });
    expect(
      await scannerCheck(
        { ...settings(undefined), env: 'production', attachmentsScannedElsewhere: true },
        ping,
      ),
    ).toEqual({
      name: 'scanner',
      status: 'passed',
      detail: 'unset: attachments are scanned before they reach refhub (ATTACHMENT_SCANNING=elsewhere)',
    });
  });
});
