// How many bytes of EHR forms this process's forward jobs hold at once (EHR_FORMS_IN_FLIGHT_MIB).
// A form is usually about 20 KiB, but the largest referral the API allows renders to about 2.4 MiB,
// and a job holds it several times over while the EHR answers (the form, the request body, the copy
// kept for retries). Sixteen such jobs at once would hold about 150 MiB. A job asks the budget for its
// form's bytes before it keeps and sends it, and gives them back when it is done; one that does not
// fit waits its turn, in order, without holding its form. A form larger than the whole budget goes
// alone, when nothing else holds any of it.
import { createByteBudget, type ByteBudget } from '../../domain/byte-budget.ts';

/** EHR_FORMS_IN_FLIGHT_MIB's default: three of the largest forms at once, any number of typical ones. */
export const FORMS_IN_FLIGHT_BYTES = 32 * 1024 * 1024;

/** Bytes a job holds per byte of its form: the form, the request body, the copy kept, the JSON of the body. */
export const FORM_COPIES_IN_FLIGHT = 4;

/** The forward jobs' budget (src/domain/byte-budget.ts). */
export type FormBudget = ByteBudget;

export function createFormBudget(limitBytes: number): FormBudget {
  return createByteBudget(limitBytes);
}
