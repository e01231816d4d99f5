// The queue contract (test/support/queue-contract.ts) with the queues in PostgreSQL (BullMQ's
// PostgreSQL backend) and in Redis. The embedded set-up's run needs no server:
// queue-contract.embedded.test.ts.
import { describeQueueContract } from '../support/queue-contract.ts';

describeQueueContract([
  ['postgres', 'postgres'],
  ['redis', 'pglite'],
]);
