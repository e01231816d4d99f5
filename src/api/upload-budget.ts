// The bytes of uploads an API app holds at once (ATTACHMENT_UPLOADS_IN_FLIGHT_MIB), one budget for
// the API's attachment route and the web form's, so that together they stay within the setting.
// An upload takes its share before its body is read, and gives it back when its answer is sent or
// its connection is gone: one past the budget waits, unread, for room; one larger than the whole
// budget goes alone (domain/byte-budget.ts).
import type { FastifyReply } from 'fastify';
import { createByteBudget } from '../domain/byte-budget.ts';

/**
 * The copies of an upload's bytes held at once while it is stored: the body, read into one buffer,
 * and the statement that writes it, whose bytea parameter the database driver sends as hex text (twice
 * the bytes) in a protocol message as large again. Measured by the bench's `uploads` scenario.
 */
export const UPLOAD_COPIES_IN_FLIGHT = 5;

export interface UploadBudget {
  /** Takes room for an upload of `bytes` (waiting for it), until `reply` is sent or its connection closes. */
  holdFor(reply: FastifyReply, bytes: number): Promise<void>;
}

export function createUploadBudget(limitMib: number): UploadBudget {
  const budget = createByteBudget(limitMib * 1024 * 1024);
  return {
    async holdFor(reply, bytes) {
      const release = await budget.take(UPLOAD_COPIES_IN_FLIGHT * bytes);
      reply.raw.once('close', release);
    },
  };
}
