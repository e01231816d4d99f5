// A BullMQ worker must listen to its `error` events (an unheard one would crash the process). During an
// outage of the queues it emits one for every failed call, many a second: they are logged as one
// outage, one line when it starts and one with the count when the queues are reachable again.
import type { Worker } from 'bullmq';
import { createOutageLog, type Logger } from '../logger.ts';
import { outageName, type QueueBackend } from '../queue/backend.ts';

export function logWorkerErrors(worker: Worker, backend: QueueBackend, logger: Logger): void {
  // The worker's logger names the worker already (composition/background.ts binds `worker`); a line
  // that named it again would carry the key twice. A logger without it gets it bound once.
  const log = Object.hasOwn(logger.bindings(), 'worker') ? logger : logger.child({ worker: worker.name });
  const outage = createOutageLog(log, {
    dependency: outageName(backend),
    down: `${worker.name} worker error: the queues cannot be reached; jobs wait`,
    up: `${worker.name} worker: the queues are reachable again`,
  });
  worker.on('error', (error) => {
    outage.failed({ err: { message: error.message } });
  });
  backend.onRestored(() => {
    outage.recovered();
  });
}
