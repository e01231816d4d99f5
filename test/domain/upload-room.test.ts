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

  it('never lets the bodies arriving all wait for each other, and leaves a slow one to finish last', async () => {
    const room = createUploadRoom(LIMITS);
    const slow = room.open({ credential: 'k1', institution: 'hci/A' });
    const quick = room.open({ credential: 'k2', institution: 'hci/B' });
    await slow.claim(60);
    await quick.claim(60);
    await slow.arrive(10);
    // 50 more for quick leaves 40 free: quick can finish (10 to go), then slow (50) in what quick
    // gives back.
    await quick.arrive(50);
    // 35 more for slow would leave 5 free, short of what either still needs: both would wait for
    // each other's room. It waits, and quick is not held back by it.
    const slowBody = slow.arrive(35);
    expect(await settled(slowBody)).toBe(false);
    await quick.arrive(10);
    await quick.store(300);
    await slowBody;
    expect(room.held).toBe(300 + 45);
  });

  it('gives any block that keeps every body able to arrive, whoever asked first', async () => {
    const room = createUploadRoom(LIMITS);
    const [a, b, c] = ['A', 'B', 'C'].map((id, i) =>
      room.open({ credential: `k${i}`, institution: `hci/${id}` }),
    );
    for (const hold of [a!, b!, c!]) await hold.claim(60);
    await a!.arrive(30);
    await b!.arrive(30);
    // 35 more for c leaves 5 free, short of what any of them still needs (30, 30, 25).
    const cBody = c!.arrive(35);
    expect(await settled(cBody)).toBe(false);
    // a's smaller block keeps the rule (a can finish in what is free, then b, then c): it is given.
    expect(await settled(a!.arrive(5))).toBe(true);
    a!.release();
    await cBody;
  });

  it('stores in the order asked: a smaller store waits behind a larger one asked first', async () => {
    const room = createUploadRoom({ ...LIMITS, totalBytes: 400 });
    const holds = ['A', 'B', 'C'].map((id, i) =>
      room.open({ credential: `k${i}`, institution: `hci/${id}` }),
    );
    for (const hold of holds) {
      await hold.claim(30);
      await hold.arrive(30);
    }
    await holds[0]!.store(300);
    // 360 held of 400: the larger store waits, and the smaller, which would fit, waits behind it.
    const big = holds[1]!.store(150);
    const small = holds[2]!.store(60);
    expect(await settled(big)).toBe(false);
    expect(await settled(small)).toBe(false);
    // A claim, which needs no room of the total, is not held back by them.
    expect(await settled(room.open({ credential: 'k9', institution: 'hci/Z' }).claim(100))).toBe(true);
    holds[0]!.release();
    await big;
    await small;
    expect(room.held).toBe(150 + 60);
  });

  it('lets a store larger than the total go when nothing else holds any of it', async () => {
    const room = createUploadRoom(LIMITS);
    const alone = room.open({ credential: 'k1', institution: 'hci/A' });
    const other = room.open({ credential: 'k2', institution: 'hci/B' });
    await alone.claim(50);
    await alone.arrive(50);
    await other.claim(10);
    await other.arrive(10);
    const big = alone.store(700);
    expect(await settled(big)).toBe(false);
    other.release();
    await big;
    expect(room.held).toBe(700);
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
