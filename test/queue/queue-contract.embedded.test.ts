// The queue contract (test/support/queue-contract.ts) on the embedded default: BullMQ's PostgreSQL
// backend over PGlite's one session, in this process, with no server. The other backends' run:
// queue-contract.int.test.ts.
import { describeQueueContract } from '../support/queue-contract.ts';

describeQueueContract([['postgres', 'pglite']]);
