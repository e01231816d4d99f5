// How many bytes of EHR forms this process's forward jobs hold at once (EHR_FORMS_IN_FLIGHT_MIB).
// A form is usually about 20 KiB, but the largest referral the API allows renders to about 2.4 MiB,
// and a job holds it several times over while the EHR answers (the form, the request body, the copy
// kept for retries). Sixteen such jobs at once would hold about 150 MiB. A job asks the budget for its
// form's bytes before it keeps and sends it, and gives them back when it is done; one that does not
// fit waits its turn, in order, without holding its form. A form larger than the whole budget goes
// alone, when nothing else holds any of it.

/** EHR_FORMS_IN_FLIGHT_MIB's default: three of the largest forms at once, any number of typical ones. */
export const FORMS_IN_FLIGHT_BYTES = 32 * 1024 * 1024;

/** Bytes a job holds per byte of its form: the form, the request body, the copy kept, the JSON of the body. */
export const FORM_COPIES_IN_FLIGHT = 4;

export interface FormBudget {
  /** Takes `bytes` now if they fit (or nothing is held), returning how to give them back. */
  tryTake(bytes: number): (() => void) | undefined;
  /** Takes `bytes` once they fit, after every job that asked earlier. */
  take(bytes: number): Promise<() => void>;
  /** Bytes held now. */
  readonly held: number;
  /** Jobs waiting for room. */
  readonly waiting: number;
}

export function createFormBudget(limitBytes: number): FormBudget {
  let held = 0;
  const queue: { bytes: number; grant: (release: () => void) => void }[] = [];
  const fits = (bytes: number) => held === 0 || held + bytes <= limitBytes;
  const grant = (bytes: number): (() => void) => {
    held += bytes;
    let given = false;
    return () => {
      if (given) return;
      given = true;
      held -= bytes;
      // In order: the first in line goes as soon as it fits, and nobody overtakes it.
      for (let next = queue[0]; next !== undefined && fits(next.bytes); next = queue[0]) {
        queue.shift();
        next.grant(grant(next.bytes));
      }
    };
  };
  const tryTake = (bytes: number) => (queue.length === 0 && fits(bytes) ? grant(bytes) : undefined);
  return {
    tryTake,
    take(bytes) {
      const now = tryTake(bytes);
      if (now !== undefined) return Promise.resolve(now);
      return new Promise((resolve) => {
        queue.push({ bytes, grant: resolve });
      });
    },
    get held() {
      return held;
    },
    get waiting() {
      return queue.length;
    },
  };
}
