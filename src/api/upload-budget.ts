// The room uploads take in an API app's memory: one for the API's attachment route and the web form's,
// so that together they stay within ATTACHMENT_UPLOADS_IN_FLIGHT_MIB and each credential and each
// institution within its share (docs/attachments.md, "Storage"; the rules are domain/upload-room.ts).
//
// An upload claims its declared length from its shares before a byte of it is read; takes room for its
// body a block at a time from the room for arriving bodies, each before a byte is copied into it; and
// takes five times its size from the whole budget once it has arrived, before it is checked and stored.
// Whatever it waits for, it waits at most ATTACHMENT_UPLOAD_WAIT_MS, and is then answered 503
// `uploads_busy` with Retry-After, having stored nothing. It gives everything back when its answer
// has been sent or its connection is gone.
import type { FastifyReply } from 'fastify';
import type { Config } from '../config.ts';
import {
  createUploadRoom,
  NoRoomError,
  type UploadHold,
  type UploadParty,
  type UploadRoom,
} from '../domain/upload-room.ts';
import { UploadsBusyError } from '../errors.ts';
import type { Metrics } from '../observability/metrics.ts';

/**
 * The copies of an upload's bytes held at once while it is checked and stored: the body, sealed in
 * chunks and joined, and the statement that writes it, which the database driver builds in a buffer of
 * its own and copies into the message it sends. Measured by the bench's `uploads` scenario.
 */
export const UPLOAD_COPIES_IN_FLIGHT = 5;

/** The bytes of a body kept in one block: the room it takes as it arrives, a block at a time. */
export const UPLOAD_BLOCK_BYTES = 256 * 1024;

const MIB = 1024 * 1024;

export type UploadBudgetSettings = Pick<
  Config,
  | 'attachmentMaxBytes'
  | 'attachmentUploadsInFlightMib'
  | 'attachmentUploadsPerCredentialMib'
  | 'attachmentUploadsPerInstitutionMib'
  | 'attachmentUploadWaitMs'
>;

export interface UploadBudgetDeps {
  readonly config: UploadBudgetSettings;
  readonly metrics: Pick<Metrics, 'uploadRoom' | 'uploadRefused'>;
}

/** The body of one admitted upload, kept as it arrives. */
export interface UploadBody {
  /** Keeps a piece of the body, taking room a block at a time; UploadsBusyError without room. */
  keep(piece: Uint8Array): Promise<void>;
  /** The body as one buffer, once the room to check and store it is held; UploadsBusyError without. */
  whole(): Promise<Buffer>;
  /** Bytes kept so far. */
  readonly received: number;
}

export interface UploadBudget {
  /**
   * Admits an upload by `party` that may bring up to `claimBytes` (its declared length, or the size
   * limit): claims them from its shares, waiting for room at most ATTACHMENT_UPLOAD_WAIT_MS
   * (UploadsBusyError after). `exactLength`: the body is exactly `claimBytes` (its reader refuses
   * one longer). Everything it takes is given back once `reply` has been sent or its connection has
   * closed.
   */
  admit(
    reply: FastifyReply,
    party: UploadParty,
    claimBytes: number,
    exactLength?: boolean,
  ): Promise<UploadBody>;
}

export function createUploadBudget(deps: UploadBudgetDeps): UploadBudget {
  const { config, metrics } = deps;
  const maxBytes = config.attachmentMaxBytes;
  const totalBytes = config.attachmentUploadsInFlightMib * MIB;
  const room: UploadRoom = createUploadRoom(
    {
      totalBytes,
      arrivingBytes: totalBytes - UPLOAD_COPIES_IN_FLIGHT * maxBytes,
      perCredentialBytes: config.attachmentUploadsPerCredentialMib * MIB,
      perInstitutionBytes: config.attachmentUploadsPerInstitutionMib * MIB,
    },
    (held) => {
      metrics.uploadRoom(held, room.waiting);
    },
  );
  const waitMs = config.attachmentUploadWaitMs;
  const retryAfterSeconds = Math.max(1, Math.ceil(waitMs / 1000));

  return {
    async admit(reply, party, claimBytes, exactLength = false) {
      const hold: UploadHold = room.open(party);
      let gone = false;
      const giveBack = () => {
        gone = true;
        hold.release();
      };
      reply.raw.once('close', giveBack);
      if (reply.raw.destroyed) giveBack();

      // Waits for `asked` at most the setting's time; a refusal is counted and logged once, by the
      // room it lacked (never the file or its name).
      const within = async (asked: Promise<void>) => {
        const timer = setTimeout(() => {
          hold.giveUp();
        }, waitMs);
        try {
          await asked;
        } catch (error) {
          if (!(error instanceof NoRoomError)) throw error;
          if (!gone) {
            metrics.uploadRefused(error.shortage);
            reply.log.info({ lacked: error.shortage, waitMs }, 'upload refused: no room within its wait');
          }
          throw new UploadsBusyError(error.shortage, retryAfterSeconds);
        } finally {
          clearTimeout(timer);
        }
      };

      await within(hold.claim(Math.min(claimBytes, maxBytes)));
      // A body of a declared length is written into one buffer of that length: the system backs its
      // pages only as they are written, and it is handed on as it is, without a copy to join it. A
      // body of no declared length is kept in blocks, joined once it has arrived.
      let one: Buffer | undefined;
      const blocks: Buffer[] = [];
      let taken = 0;
      let received = 0;
      return {
        async keep(piece) {
          for (let at = 0; at < piece.length;) {
            if (received === taken) {
              // Within the claim, so that every upload admitted can arrive; a body longer than it
              // declared is refused by its reader before it gets here.
              const size = Math.min(UPLOAD_BLOCK_BYTES, Math.max(claimBytes - taken, piece.length - at));
              await within(hold.arrive(size));
              taken += size;
              if (exactLength) one ??= Buffer.allocUnsafe(claimBytes);
              else blocks.push(Buffer.allocUnsafe(size));
            }
            const copied = Math.min(taken - received, piece.length - at);
            const into = one ?? blocks[blocks.length - 1];
            const offset = one === undefined ? (into?.length ?? 0) - (taken - received) : received;
            into?.set(piece.subarray(at, at + copied), offset);
            at += copied;
            received += copied;
          }
        },
        async whole() {
          await within(hold.store(UPLOAD_COPIES_IN_FLIGHT * received));
          if (one !== undefined) return one.subarray(0, received);
          const only = blocks[0];
          if (blocks.length === 1 && only !== undefined && received === only.length) return only;
          const body = Buffer.concat(blocks, received);
          blocks.length = 0;
          return body;
        },
        get received() {
          return received;
        },
      };
    },
  };
}
