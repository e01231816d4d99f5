// The EHR's circuit. When the EHR fails again and again (network errors, 408, 429, 5xx), sending every
// due form into it only adds load and burns each forward's attempts. After `failures` failures in a
// row within `windowMs`, the circuit opens: forwarding pauses, and jobs are put back on the queue
// without an attempt (nothing is lost, nothing is counted as failed). One forward at a time probes
// the EHR, at growing intervals (from `probeBaseMs`, doubling, at most `probeMaxMs`); the first answer
// that shows the EHR is there again closes the circuit, and the waiting forwards go on at once.
//
// The state is one database row shared by every worker (db/forwarding/circuit.ts). A worker reads
// it at most once a second while it is closed, and writes it only when something changes (a failure,
// a transition, the first answer after failures), so a healthy EHR costs no write. Every transition
// is logged, counted, shown on /admin and audited.
import { v7 as uuidv7 } from 'uuid';
import type { Clock } from '../../domain/clock.ts';
import { auditEventOf, systemActor } from '../../domain/audit.ts';
import type { CircuitRow } from '../../db/forwarding/circuit.ts';
import type { CapabilityStores, Stores } from '../../db/stores.ts';
import type { Logger } from '../../logger.ts';
import type { Metrics } from '../../observability/metrics.ts';
import type { EhrAnswer } from './ehr-client.ts';
import { ehrAnswered } from './forward-policy.ts';

export interface CircuitSettings {
  /** Failures in a row that open the circuit; 0 keeps it closed for good. */
  readonly failures: number;
  readonly windowMs: number;
  readonly probeBaseMs: number;
  readonly probeMaxMs: number;
  /** How long one probe may take before another worker may probe (an attempt's deadline and more). */
  readonly probeLeaseMs: number;
}

export type Admission =
  | { readonly kind: 'send' }
  /** The one forward that tries the open circuit's EHR. */
  | { readonly kind: 'probe' }
  | { readonly kind: 'wait'; readonly until: Date };

export interface EhrCircuit {
  /** Whether a forward may be sent now. */
  admit(): Promise<Admission>;
  /** What the EHR answered a forward that was admitted (`probe` when it was the probe). */
  observe(answer: EhrAnswer, probe: boolean): Promise<void>;
  /** The circuit as it is now, for /admin. */
  read(): Promise<CircuitRow>;
}

export interface CircuitDeps {
  /** The circuit's row, and the audit trail its transitions are written to in the same transaction. */
  readonly stores: Pick<Stores, 'forwarding' | 'transaction'>;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly metrics: Pick<Metrics, 'ehrCircuitChanged'>;
  readonly settings: CircuitSettings;
  /** Called once this worker closed the circuit (to let the forwards that wait go at once). */
  readonly onClosed?: () => Promise<void>;
  readonly random?: () => number;
}

const CACHE_MS = 1_000;
const AUDIT_ACTIONS = { open: 'ehr.circuit.opened', closed: 'ehr.circuit.closed' } as const;

export function createEhrCircuit(deps: CircuitDeps): EhrCircuit {
  const { settings } = deps;
  const random = deps.random ?? Math.random;
  let cached: { readonly row: CircuitRow; readonly at: number } | undefined;

  const now = () => deps.clock.now();
  const repo = () => deps.stores.forwarding.circuit;

  async function current(): Promise<CircuitRow> {
    const at = now().getTime();
    if (cached !== undefined && at - cached.at < CACHE_MS) return cached.row;
    const row = await repo().read();
    cached = { row, at };
    return row;
  }

  /** Runs a transition with its audit row; logs and counts it when this worker made it. */
  async function transition(
    to: 'open' | 'closed',
    change: (tx: Pick<CapabilityStores, 'forwarding'>) => Promise<boolean>,
  ) {
    const at = now();
    const made = await deps.stores.transaction(async (tx) => {
      if (!(await change(tx))) return false;
      // No request caused it: the change is its own, under a request ID made for it.
      const actor = systemActor(`ehr-circuit.${uuidv7()}`);
      await tx.audit.record(auditEventOf(actor, AUDIT_ACTIONS[to], [], at));
      return true;
    });
    cached = undefined;
    if (!made) return false;
    deps.metrics.ehrCircuitChanged(to);
    if (to === 'open') {
      deps.logger.warn(
        { circuit: 'ehr', failures: settings.failures, probeInSeconds: settings.probeBaseMs / 1000 },
        'ehr circuit opened: the EHR keeps failing; forwarding pauses and probes it',
      );
    } else {
      deps.logger.info({ circuit: 'ehr' }, 'ehr circuit closed: the EHR answers again; forwarding resumes');
      await deps.onClosed?.();
    }
    return true;
  }

  /** Not all at once: the forwards that wait spread over a second after the probe time. */
  const after = (at: Date) => new Date(at.getTime() + Math.round(random() * 1_000));

  return {
    async admit() {
      const row = await current();
      if (row.state === 'closed') return { kind: 'send' };
      const at = now();
      if (row.probeAt !== null && at < row.probeAt) return { kind: 'wait', until: after(row.probeAt) };
      if (await repo().claimProbe(at, new Date(at.getTime() + settings.probeLeaseMs))) {
        cached = undefined;
        return { kind: 'probe' };
      }
      // Another worker probes now: look again when its probe has had time to answer.
      return { kind: 'wait', until: after(new Date(at.getTime() + Math.min(settings.probeBaseMs, 5_000))) };
    },

    async observe(answer, probe) {
      if (settings.failures === 0) return;
      const at = now();
      if (ehrAnswered(answer)) {
        const row = await current();
        if (row.state === 'open' || probe) {
          await transition('closed', (tx) => tx.forwarding.circuit.close(at));
        } else if (row.failures > 0) {
          await repo().resetFailures(at);
          cached = undefined;
        }
        return;
      }
      if (probe) {
        const row = await repo().read();
        const interval = Math.min((row.probeIntervalMs ?? settings.probeBaseMs) * 2, settings.probeMaxMs);
        await repo().reschedule(at, interval);
        cached = undefined;
        deps.logger.warn(
          { circuit: 'ehr', probeInSeconds: interval / 1000 },
          'ehr circuit probe failed: the EHR still fails',
        );
        return;
      }
      const failures = await repo().countFailure(at, new Date(at.getTime() - settings.windowMs));
      cached = undefined;
      if (failures !== undefined && failures >= settings.failures) {
        await transition('open', (tx) => tx.forwarding.circuit.open(at, settings.probeBaseMs));
      }
    },

    read: () => repo().read(),
  };
}
