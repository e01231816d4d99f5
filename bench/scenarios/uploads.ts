// Uploads: ten files of the largest size (10 MiB) sent to one draft at once, to see that refhub's
// memory stays bounded while it takes them (ATTACHMENT_UPLOADS_IN_FLIGHT_MIB, docs/attachments.md).
// They come from one key that stands in for many clinics (the bench raises its shares to the whole
// budget); a file answered 503 is sent again after its Retry-After, as a clinic's system does.
// refhub's RSS is sampled every 50 ms from before the first upload to after the last answer; the row
// reports its peak above the RSS at rest. There is no baseline: the figure is judged against the
// bound the budget sets (every byte an upload keeps is counted in it before it is kept).
import { randomBytes } from 'node:crypto';
import { request } from 'undici';
import type { BenchEnv } from '../environment.ts';
import { jsonHeaders } from '../load.ts';
import { BENCH_REQUESTER } from '../seed.ts';
import type { ResultRow } from '../stats.ts';

/** The copies of an upload the API's budget counts while it is stored. */
const UPLOAD_COPIES = 5;
/** What the allocator may hold beyond the budget and the collector's due. */
const SLACK_MIB = 16;
/** Attempts per file, the first included: a 503 asks for another after its Retry-After. */
const ATTEMPTS = 30;

export interface UploadPlan {
  readonly files: number;
  readonly fileMiB: number;
  /** The process's ATTACHMENT_UPLOADS_IN_FLIGHT_MIB (its default unless the bench sets one). */
  readonly budgetMiB: number;
}

/** A file of `bytes` whose content is plain text (random hex), which refhub accepts as text. */
function textFile(bytes: number): Buffer {
  return Buffer.from(
    randomBytes(Math.ceil(bytes / 2))
      .toString('hex')
      .slice(0, bytes),
  );
}

export async function uploadsScenario(env: BenchEnv, plan: UploadPlan): Promise<ResultRow> {
  const { writer } = env.parties;
  const draftId = env.writePool.take();
  if (draftId === undefined) throw new Error('uploads: no draft left in the write pool');
  const query = new URLSearchParams({
    institutionIdType: writer.institution.idType,
    institutionId: writer.institution.id,
    requesterIdentifier: BENCH_REQUESTER,
  }).toString();
  const bytes = plan.fileMiB * 1024 * 1024;
  const files = Array.from({ length: plan.files }, () => textFile(bytes));
  const atRest = env.refhub.rssMiB();
  let peak = atRest;
  const timer = setInterval(() => {
    peak = Math.max(peak, env.refhub.rssMiB());
  }, 50);
  const began = performance.now();
  let retries = 0;
  let statuses: number[];
  try {
    statuses = await Promise.all(
      files.map(async (file, i) => {
        for (let attempt = 1; ; attempt++) {
          const response = await request(
            `${env.refhub.address}/api/v1/referrals/${draftId}/attachments?${query}`,
            {
              method: 'POST',
              headers: {
                authorization: jsonHeaders(writer.key).authorization ?? '',
                'content-type': 'text/plain',
                'content-disposition': `attachment; filename="file-${i + 1}.txt"`,
              },
              body: file,
              headersTimeout: 120_000,
              bodyTimeout: 120_000,
            },
          );
          await response.body.dump();
          if (response.statusCode !== 503 || attempt === ATTEMPTS) return response.statusCode;
          retries += 1;
          const seconds = Number(response.headers['retry-after'] ?? 1);
          await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
        }
      }),
    );
  } finally {
    clearInterval(timer);
  }
  const errors = statuses.filter((status) => status !== 201).length;
  peak = Math.max(peak, env.refhub.rssMiB());
  const seconds = (performance.now() - began) / 1000;
  const growth = peak - atRest;
  // Every byte an upload keeps is counted in the budget before it is kept (api/upload-budget.ts):
  // its body as it arrives, five copies while it is stored. The copies of the upload stored last are
  // given back to the budget at once but to the system only when the collector next runs, so one
  // store's copies may still be resident beside the budget; above that, the allocator's slack.
  const collectorsDue = UPLOAD_COPIES * plan.fileMiB;
  const bound = plan.budgetMiB + collectorsDue + SLACK_MIB;
  return {
    scenario: 'uploads',
    unit: 'MiB/s',
    refhub: {
      rate: (plan.files * plan.fileMiB) / seconds,
      p50: Number.NaN,
      tail: Number.NaN,
      rssMiB: peak,
      errors,
    },
    baseline: null,
    baselineName: 'none (memory while uploading)',
    rounds: 1,
    goal: {
      text:
        `RSS above rest ≤ the upload budget + one stored upload's ${UPLOAD_COPIES} copies awaiting the ` +
        `collector + ${SLACK_MIB} MiB (${bound} MiB)`,
      met: errors === 0 && growth <= bound,
    },
    note:
      `${plan.files} files of ${plan.fileMiB} MiB at once to one draft, ${retries} sent again after a ` +
      `503; RSS ${atRest.toFixed(0)} → peak ${peak.toFixed(0)} MiB (+${growth.toFixed(0)}); ` +
      `${seconds.toFixed(1)} s in all`,
  };
}
