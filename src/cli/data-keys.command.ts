// `refhub data-keys status|rotate`: the keys patient data is sealed with (docs/security.md, "Patient
// data encrypted field by field"). `rotate` wraps every data key with the first key of DATA_KEYS (so
// an older key-encryption key can then leave the ring), makes a new data key, and seals every value
// again under it while the service runs; interrupted, it is run again and goes on where the data
// says it stopped. Neither command prints a key or a value: IDs, tables and counts only.
import type { DataKeyRotation, SweepProgress } from '../services/data-keys.service.ts';
import type { DisplayTime } from '../domain/display-time.ts';
import { plural } from './plural.ts';
import { startProgress, type Progress } from './progress.ts';

export interface DataKeyCommandDeps {
  readonly dataKeyRotation: Pick<DataKeyRotation, 'status' | 'rotate'>;
  readonly displayTime: DisplayTime;
}

export async function dataKeysStatus(deps: DataKeyCommandDeps): Promise<void> {
  const status = await deps.dataKeyRotation.status();
  const lines = [
    `Active data key: ${status.activeKeyId}${status.swept ? '' : ' (a rotation to it is unfinished: run `refhub data-keys rotate`)'}`,
    '',
    'Keys (wrapped by a key-encryption key of DATA_KEYS):',
    ...status.keys.map(
      (k) =>
        `  ${k.id}  ${k.purpose === 'fields' ? 'fields     ' : 'blind index'}  wrapped by ${k.kekId}  made ${deps.displayTime.dateTime(k.createdAt)}`,
    ),
    '',
    'Rows not yet sealed under the active key:',
    ...Object.entries(status.stale).map(([table, n]) => `  ${table}: ${n}`),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

export async function rotateDataKeys(deps: DataKeyCommandDeps): Promise<void> {
  let progress: Progress | undefined;
  let table: string | undefined;
  const report = (p: SweepProgress) => {
    if (p.table !== table) {
      progress?.end();
      table = p.table;
      progress = startProgress(`Sealing ${p.table} under ${p.keyId}`);
    }
    progress?.report(p.done, p.total);
  };
  try {
    const result = await deps.dataKeyRotation.rotate(report);
    progress?.end();
    const lines = [
      result.resumed
        ? `Finished the unfinished rotation to data key ${result.keyId}.`
        : `Made data key ${result.keyId}; new values are sealed under it.`,
      ...(result.rewrapped > 0
        ? [`Wrapped ${plural(result.rewrapped, 'data key')} again with the first key of DATA_KEYS.`]
        : []),
      `Sealed ${plural(result.sealed, 'row')} again; every value is now under ${result.keyId}.`,
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    progress?.end();
  }
}
