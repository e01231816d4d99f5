// How a file's content is answered, from the API and from the web form alike: as its detected media
// type, saved rather than shown (`Content-Disposition: attachment` with its name), with its SHA-256 as
// `Content-Digest` (RFC 9530) and `ETag`, never sniffed, and in a sandbox that lets it run and reach
// nothing if a browser opens it all the same. The bytes stream from the database a piece at a time.
import { Readable } from 'node:stream';
import type { FastifyReply } from 'fastify';
import type { AttachmentView } from '../domain/attachments.ts';
import { contentDisposition } from '../services/attachments/inspection.ts';

/** `Content-Digest` (RFC 9530) of a SHA-256 given in hex. */
function contentDigest(sha256Hex: string): string {
  return `sha-256=:${Buffer.from(sha256Hex, 'hex').toString('base64')}:`;
}

export function sendAttachmentContent(
  reply: FastifyReply,
  file: { readonly view: AttachmentView; readonly content: AsyncIterable<Buffer> },
): FastifyReply {
  const { view, content } = file;
  const type = view.mediaType === 'text/plain' ? 'text/plain; charset=utf-8' : view.mediaType;
  return reply
    .type(type)
    .headers({
      'content-length': String(view.sizeBytes),
      'content-disposition': contentDisposition(view.fileName),
      'content-digest': contentDigest(view.sha256),
      etag: `"${view.sha256}"`,
      'x-content-type-options': 'nosniff',
      'content-security-policy': "sandbox; default-src 'none'",
    })
    .send(Readable.from(content));
}
