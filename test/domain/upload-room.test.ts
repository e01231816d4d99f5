// The rules of the room uploads take: claims within each credential's and institution's share, bodies
// arriving within their own part of the room, storing in the part kept for it, in order, and nothing
// held once an upload is released.
import { describe, expect, it } from 'vitest';
import { createUploadRoom, NoRoomError, type UploadHold } from '../../src/domain/upload-room.ts';

const LIMITS = { totalBytes: 600, arrivingBytes: 100, perCredentialBytes: 100, perInstitutionBytes: 150 };

/** Whether `promise` has settled, after everything already queued has run. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  void promise.then(
    () => (done = true),
    () => (done = true),
  );
  await new Promise((resolve) => setImmediate(resolve));
  return done;
}

function refusal(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => expect.fail('the request was granted'),
    (error: unknown) => error,
  );
}

describe('the room for uploads', () => {
  it('keeps the claims of a credential within its share, without holding back another credential', async () => {
    const room = createUploadRoom(LIMITS);
    const first = room.open({ credential: 'k1', institution: 'hci/A' });
    await first.claim(80);
    const second = room.open({ credential: 'k1', institution: 'hci/A' });
    const waiting = second.claim(30);
    expect(await settled(waiting)).toBe(false);
    // Another key of the same institution fits its 150.
    const colleague = room.open({ credential: 'k2', institution: 'hci/A' });
    await colleague.claim(60);
    // Claims hold no bytes of the total: nothing has arrived.
    expect(room.held).toBe(0);
    first.release();
    await waiting;
    expect(room.waiting).toBe(0);
  });

  it('keeps the claims of an institution within its share, across its credentials', async () => {
    const room = createUploadRoom(LIMITS);
    await room.open({ credential: 'k1', institution: 'hci/A' }).claim(100);
    const third = room.open({ credential: 'k3', institution: 'hci/A' });
    const waiting = third.claim(60);
    expect(await settled(waiting)).toBe(false);
    await room.open({ credential: 'k4', institution: 'hci/B' }).claim(100);
    third.giveUp();
    const error = await refusal(waiting);
    expect(error).toBeInstanceOf(NoRoomError);
    expect((error as NoRoomError).shortage).toBe('institution');
  });

  it('names the credential’s share first when both are full', async () => {
    const room = createUploadRoom(LIMITS);
    await room.open({ credential: 'k1', institution: 'hci/A' }).claim(100);
    await room.open({ credential: 'k2', institution: 'hci/A' }).claim(50);
    const again = room.open({ credential: 'k1', institution: 'hci/A' });
    const waiting = again.claim(10);
    again.giveUp();
    expect(((await refusal(waiting)) as NoRoomError).shortage).toBe('credential');
  });

  it('lets bodies arrive within their part of the room, and never into the part kept for storing', async () => {
    const room = createUploadRoom(LIMITS);
    const a = room.open({ credential: 'k1', institution: 'hci/A' });
    const b = room.open({ credential: 'k2', institution: 'hci/B' });
    await a.claim(100);
    await b.claim(100);
    await a.arrive(70);
    const blocked = b.arrive(40);
    expect(await settled(blocked)).toBe(false);
    expect(room.held).toBe(70);
    b.giveUp();
    expect(((await refusal(blocked)) as NoRoomError).shortage).toBe('server');
    // a's body arrived: it is stored in the room kept for that (5 × 70 of the 600), and gives back its
    // place among arriving bodies, so b's may arrive meanwhile.
    await a.store(350);
    expect(room.held).toBe(350);
    await b.arrive(90);
    expect(room.held).toBe(440);
  });

  it('never keeps a body that has arrived from being stored by bodies still arriving', async () => {
    const room = createUploadRoom(LIMITS);
    const first = room.open({ credential: 'k1', institution: 'hci/A' });
    const second = room.open({ credential: 'k2', institution: 'hci/B' });
    for (const hold of [first, second]) {
      await hold.claim(50);
      await hold.arrive(50);
    }
    await first.store(250);
    // A slow body fills the room for arriving bodies again…
    const slow = room.open({ credential: 'k3', institution: 'hci/C' });
    await slow.claim(100);
    await slow.arrive(50);
    const late = room.open({ credential: 'k4', institution: 'hci/D' });
    await late.claim(10);
    const lateBody = late.arrive(10);
    expect(await settled(lateBody)).toBe(false);
    // …and the second body is stored all the same, from the room kept for that; the place it leaves
    // among arriving bodies goes to the next one.
    await second.store(250);
    await lateBody;
    expect(room.held).toBe(250 + 250 + 50 + 10);
  });

  it('grants in order within a pool, but lets a request pass one held back by a pool it does not need', async () => {
    const room = createUploadRoom(LIMITS);
    const a = room.open({ credential: 'k1', institution: 'hci/A' });
    await a.claim(100);
    await a.arrive(60);
    const big = room.open({ credential: 'k2', institution: 'hci/B' });
    await big.claim(100);
    const bigBody = big.arrive(50);
    const small = room.open({ credential: 'k3', institution: 'hci/C' });
    await small.claim(10);
    // 60 held of the 100 for arriving bodies: 10 would fit, but the 50 asked first.
    const smallBody = small.arrive(10);
    expect(await settled(smallBody)).toBe(false);
    // A claim (the shares alone) is not held back by the arriving bodies' queue.
    const other = room.open({ credential: 'k4', institution: 'hci/D' });
    expect(await settled(other.claim(100))).toBe(true);
    a.release();
    await bigBody;
    await smallBody;
    expect(room.held).toBe(60);
  });

  it('lets a request larger than a pool go when nothing else holds any of it', async () => {
    const room = createUploadRoom(LIMITS);
    const alone = room.open({ credential: 'k1', institution: 'hci/A' });
    await alone.claim(500);
    await alone.arrive(100);
    const other = room.open({ credential: 'k2', institution: 'hci/B' });
    await other.claim(10);
    const otherBody = other.arrive(10);
    expect(await settled(otherBody)).toBe(false);
    alone.release();
    await otherBody;
  });

  it('gives everything back on release, ends a request still waiting, and forgets empty shares', async () => {
    const room = createUploadRoom(LIMITS);
    const holds: UploadHold[] = [];
    for (let i = 0; i < 3; i++) holds.push(room.open({ credential: 'k1', institution: 'hci/A' }));
    await holds[0]!.claim(100);
    await holds[0]!.arrive(100);
    const waiting = holds[1]!.claim(100);
    holds[1]!.release();
    expect(await refusal(waiting)).toBeInstanceOf(NoRoomError);
    holds[0]!.release();
    holds[0]!.release(); // once only
    expect(room.held).toBe(0);
    expect(room.waiting).toBe(0);
    // A released upload asks for nothing more.
    expect(await refusal(holds[1]!.claim(1))).toBeInstanceOf(NoRoomError);
    // The share was emptied and is whole again for the next upload.
    await holds[2]!.claim(100);
    holds[2]!.release();
  });

  it('tells the listener what the total holds after each change', async () => {
    const seen: number[] = [];
    const room = createUploadRoom(LIMITS, (held) => seen.push(held));
    const hold = room.open({ credential: 'k1', institution: undefined });
    await hold.claim(50);
    await hold.arrive(50);
    await hold.store(250);
    hold.release();
    expect(seen).toEqual([0, 50, 250, 0]);
  });
});
