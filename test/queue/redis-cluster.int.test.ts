// The queues on a Redis Cluster of three primaries (REDIS_CLUSTER_NODES): each queue's keys under a
// hash tag of its own, so the queues land on more than one node, and every submitted referral goes
// through the outbox relay and the workers to the sandbox EHR exactly once. The test runs a cluster of
// its own (test/support/redis-topologies.ts).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queueKeyPrefix } from '../../src/queue/prefix-claim.ts';
import { FORWARD_QUEUE, QUEUE_NAMES, WAIT_TIMES_QUEUE } from '../../src/queue/registry.ts';
import {
  createBridgeApp,
  eventually,
  forwardingStates,
  startEhr,
  submitReferrals,
  type BridgeApp,
} from '../support/bridge.ts';
import { ask, startRedisCluster, type RedisCluster } from '../support/redis-topologies.ts';
import type { SandboxEhrProcess } from '../support/sandbox-ehr-process.ts';

const SUBMITS = 20;

describe('the queues on a Redis Cluster', () => {
  let ehr: SandboxEhrProcess;
  let cluster: RedisCluster;
  let t: BridgeApp | undefined;

  beforeAll(async () => {
    [ehr, cluster] = await Promise.all([startEhr(), startRedisCluster()]);
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await Promise.all([cluster.close(), ehr.stop()]);
  });

  it(`spreads the queues over the nodes and forwards ${SUBMITS} submits exactly once`, async () => {
    // A prefix whose forward queue and wait-times queue hash to different primaries, so that the
    // keys a run writes must be found on two nodes (which slot a tag takes depends on the prefix).
    const placed = async () => {
      const candidate = `cluster-${randomUUID()}`;
      return {
        prefix: candidate,
        forwardNode: await cluster.nodeOf(queueKeyPrefix(candidate, FORWARD_QUEUE)),
        waitTimesNode: await cluster.nodeOf(queueKeyPrefix(candidate, WAIT_TIMES_QUEUE)),
      };
    };
    let chosen = await placed();
    while (chosen.forwardNode === chosen.waitTimesNode) chosen = await placed();
    const { prefix, forwardNode, waitTimesNode } = chosen;

    const app = await createBridgeApp('postgres', ehr, {
      env: { REDIS_CLUSTER_NODES: cluster.nodes, QUEUE_PREFIX: prefix },
    });
    t = app;
    expect(app.ctx.queues.backend.address).toBe(`Redis Cluster at ${cluster.nodes}`);
    const health = await app.ctx.queues.health();
    expect(health.problem).toBeUndefined();
    expect(health.detail).toBe('a cluster of 3 primaries, maxmemory-policy noeviction');

    const background = app.startBackground();
    await Promise.all(background.workers.map((worker) => worker.waitUntilReady()));
    const ids = await submitReferrals(app, SUBMITS);
    await eventually(
      `all ${SUBMITS} forwarded`,
      async () => {
        const states = await forwardingStates(app, ids);
        return states.forwarded === SUBMITS ? states : undefined;
      },
      app.forwardWithinMs,
    );
    const deliveries = await ehr.deliveries();
    expect(deliveries).toHaveLength(SUBMITS);
    expect(new Set(deliveries.map((d) => d.referralId))).toEqual(new Set(ids));
    expect((await ehr.requests()).total).toBe(SUBMITS);

    // Every key of one queue is on one node, the node its tag hashes to; the queues are on two.
    const tagsByNode = new Map<number, Set<string>>();
    for (const port of cluster.ports) {
      const keys = (await ask(port, 'KEYS', `{${prefix}*`)) as string[];
      tagsByNode.set(port, new Set(keys.map((key) => /^\{[^}]*\}/.exec(key)?.[0] ?? key)));
    }
    const nodesOf = (tag: string) =>
      [...tagsByNode].filter(([, tags]) => tags.has(tag)).map(([port]) => port);
    expect(nodesOf(queueKeyPrefix(prefix, FORWARD_QUEUE))).toEqual([forwardNode]);
    expect(nodesOf(queueKeyPrefix(prefix, WAIT_TIMES_QUEUE))).toEqual([waitTimesNode]);
    // The claim has the installation's own tag, apart from every queue's.
    expect(nodesOf(`{${prefix}}`)).toEqual([await cluster.nodeOf(`{${prefix}}`)]);
    const queueTags = new Set(QUEUE_NAMES.map((name) => queueKeyPrefix(prefix, name)));
    const withQueues = [...tagsByNode.values()].filter((tags) => [...tags].some((tag) => queueTags.has(tag)));
    expect(withQueues.length).toBeGreaterThan(1);
  }, 180_000);
});
