// What `refhub reconcile` prints after its pass: that nothing needed repair, or what it put back, each
// count with its noun in the right number. Attachment scans are named only where the reconciler looks
// for them (ATTACHMENT_SCANNER is set), so a line never vouches for scans nobody checked.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { reconcile, repairsLine } from '../../src/cli/reconcile.command.ts';

const none = { forwardsRequeued: 0, scansRequeued: 0, schedulersRebuilt: 0 };

describe('refhub reconcile', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('says there was nothing to repair, naming attachment scans only where it looked for them', () => {
    expect(repairsLine(none, false)).toBe(
      'Nothing to repair: every due forward has a live job and every reminder schedule exists.',
    );
    expect(repairsLine(none, true)).toBe(
      'Nothing to repair: every due forward and every attachment waiting for its scan has a live job, ' +
        'and every reminder schedule exists.',
    );
  });

  it('counts what it put back', () => {
    expect(repairsLine({ forwardsRequeued: 2, scansRequeued: 1, schedulersRebuilt: 0 }, true)).toBe(
      'Re-enqueued 2 forwards and 1 attachment scan, and rebuilt 0 reminder schedules.',
    );
    expect(repairsLine({ forwardsRequeued: 0, scansRequeued: 3, schedulersRebuilt: 1 }, true)).toBe(
      'Re-enqueued 0 forwards and 3 attachment scans, and rebuilt 1 reminder schedule.',
    );
    expect(repairsLine({ forwardsRequeued: 1, scansRequeued: 0, schedulersRebuilt: 2 }, false)).toBe(
      'Re-enqueued 1 forward and rebuilt 2 reminder schedules.',
    );
  });

  it('prints the line for the pass it made', async () => {
    const written: string[] = [];
    vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      written.push(String(chunk));
      return true;
    });
    await reconcile({
      reconciler: { reconcileOnce: () => Promise.resolve({ ...none, scansRequeued: 1 }) },
      scansAttachments: true,
    });
    expect(written).toEqual([
      'Re-enqueued 0 forwards and 1 attachment scan, and rebuilt 0 reminder schedules.\n',
    ]);
  });
});
