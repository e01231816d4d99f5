// Counts in what a command prints, with the noun in the right number: "1 forward", "2 forwards",
// "0 forwards". Every message that prints a count goes through this one function, so none says
// "1 forwards" or "check(s)".
const RULES = new Intl.PluralRules('en');

/** `count` and its noun: `plural(1, 'delivery', 'deliveries')` is "1 delivery". */
export function plural(count: number, singular: string, pluralForm = `${singular}s`): string {
  return `${count} ${RULES.select(count) === 'one' ? singular : pluralForm}`;
}
