// A BullMQ worker must listen to its `error` events (an unheard one would crash the process). During a
// Redis outage it emits one for every failed call, many a second: they are logged as one outage, one
// line when it starts and one with the count when the worker's connection is ready again.
import type { Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { createOutageLog, type Logger } from '../logger.ts';

export function logWorkerErrors(worker: Worker, connection: Redis, logger: Logger): void {
  const outage = createOutageLog(logger, {
    dependency: 'redis',
    down: `${worker.name} worker error: the queues cannot be reached; jobs wait`,
    up: `${worker.name} worker: the queues are reachable again`,
  });
  worker.on('error', (error) => {
    outage.failed({ worker: worker.name, err: { message: error.message } });
  });
  connection.on('ready', () => {
    outage.recovered();
  });
}
