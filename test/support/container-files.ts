// Readers for the container files, for tests that check them without a container engine: a Dockerfile
// parser (instructions by stage, `\` continuations, exec form), a .dockerignore matcher, and compose's
// `${VAR…}` interpolation. Each covers the syntax those files use and fails loudly on what it does not
// know, so that a test never passes on a file it misread.

export interface Instruction {
  /** Upper-cased, as in `COPY`. */
  readonly keyword: string;
  /** Everything after the keyword, continuations joined with single spaces. */
  readonly args: string;
  readonly line: number;
}

export interface Stage {
  readonly image: string;
  readonly name: string | undefined;
  readonly instructions: readonly Instruction[];
}

/** The Dockerfile's build stages in order; instructions before the first FROM (ARG) are dropped. */
export function parseDockerfile(text: string): Stage[] {
  const instructions: Instruction[] = [];
  let pending: { parts: string[]; line: number } | undefined;
  text.split('\n').forEach((raw, index) => {
    const trimmed = raw.trim();
    // Comment lines are removed before continuations are joined, as Docker does.
    if (trimmed.startsWith('#')) return;
    if (trimmed === '' && pending === undefined) return;
    const continues = trimmed.endsWith('\\');
    const part = continues ? trimmed.slice(0, -1).trim() : trimmed;
    pending ??= { parts: [], line: index + 1 };
    if (part !== '') pending.parts.push(part);
    if (continues) return;
    const joined = pending.parts.join(' ');
    const match = /^(\S+)\s*(.*)$/s.exec(joined);
    if (match === null) throw new Error(`Dockerfile line ${pending.line}: cannot read "${joined}"`);
    if (/<<-?\w/.test(match[2]!))
      throw new Error(`Dockerfile line ${pending.line}: heredocs are not supported`);
    instructions.push({ keyword: match[1]!.toUpperCase(), args: match[2]!, line: pending.line });
    pending = undefined;
  });
  if (pending !== undefined) throw new Error(`Dockerfile line ${pending.line}: continuation at end of file`);

  const stages: { image: string; name: string | undefined; instructions: Instruction[] }[] = [];
  for (const instruction of instructions) {
    if (instruction.keyword === 'FROM') {
      const { rest } = flags(instruction.args);
      const match = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(rest);
      if (match === null) throw new Error(`Dockerfile line ${instruction.line}: cannot read FROM ${rest}`);
      stages.push({ image: match[1]!, name: match[2], instructions: [] });
    } else {
      stages.at(-1)?.instructions.push(instruction);
    }
  }
  return stages;
}

/** The JSON array of an exec-form instruction, or undefined for the shell form. */
export function execForm(args: string): string[] | undefined {
  if (!args.trimStart().startsWith('[')) return undefined;
  const parsed: unknown = JSON.parse(args);
  if (!Array.isArray(parsed) || !parsed.every((item) => typeof item === 'string')) {
    throw new Error(`not an array of strings: ${args}`);
  }
  return parsed;
}

/** Splits leading `--name=value` options (COPY --from=…, HEALTHCHECK --interval=…) from the rest. */
export function flags(args: string): { flags: Readonly<Record<string, string>>; rest: string } {
  const found: Record<string, string> = {};
  let rest = args.trim();
  let match: RegExpExecArray | null;
  while ((match = /^--([a-z-]+)(?:=(\S*))?\s*/.exec(rest)) !== null) {
    found[match[1]!] = match[2] ?? 'true';
    rest = rest.slice(match[0].length);
  }
  return { flags: found, rest };
}

/** `ENV A=1 B="2 3"` (a value unquoted, or double-quoted without escapes; the legacy `ENV A 1` form is refused). */
export function envPairs(args: string): Record<string, string> {
  const pairs: Record<string, string> = {};
  // A value is one word, or a double-quoted string that may hold spaces.
  for (const word of args.trim().match(/(?:[^\s"]+|"[^"]*")+/g) ?? []) {
    const match = /^([A-Za-z_][A-Za-z0-9_]*)=(?:"([^"]*)"|([^"'\s]*))$/.exec(word);
    if (match === null) throw new Error(`ENV: expected NAME=value, got "${word}"`);
    pairs[match[1]!] = match[2] ?? match[3]!;
  }
  return pairs;
}

/**
 * Whether .dockerignore keeps `file` (a path relative to the context, `/`-separated) out of the build
 * context. As in Docker: the last pattern that matches the path or one of its parent directories wins,
 * and `!` re-includes; `*` and `?` stay within one path segment, `**` spans any number of them.
 */
export function dockerignoreExcludes(text: string, file: string): boolean {
  const rules = text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const negate = line.startsWith('!');
      const pattern = (negate ? line.slice(1) : line).trim().replace(/^\/+/, '').replace(/\/+$/, '');
      return { negate, regex: globToRegex(pattern) };
    });
  const segments = file.split('/');
  const candidates = segments.map((_, i) => segments.slice(0, i + 1).join('/'));
  let excluded = false;
  for (const rule of rules) {
    if (candidates.some((candidate) => rule.regex.test(candidate))) excluded = !rule.negate;
  }
  return excluded;
}

function globToRegex(pattern: string): RegExp {
  let source = '';
  for (let i = 0; i < pattern.length; i++) {
    const char = pattern[i]!;
    if (pattern.startsWith('**/', i)) {
      source += '(?:.*/)?';
      i += 2;
    } else if (pattern.startsWith('**', i)) {
      source += '.*';
      i += 1;
    } else if (char === '*') {
      source += '[^/]*';
    } else if (char === '?') {
      source += '[^/]';
    } else if (char === '[' || char === '\\') {
      throw new Error(`.dockerignore: character classes and escapes are not supported (${pattern})`);
    } else {
      source += char.replace(/[.+^${}()|\]]/g, '\\$&');
    }
  }
  return new RegExp(`^${source}$`);
}

export interface Interpolation {
  readonly name: string;
  /** `:?` and `?` stop compose when the variable is unset (or empty, with the colon). */
  readonly operator: ':?' | '?' | ':-' | '-' | ':+' | '+' | undefined;
  readonly argument: string;
}

const INTERPOLATION = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[?+-])([^}]*))?\}/g;

/** The `${…}` references in a compose value. A bare `$NAME` is refused: the file always braces them. */
export function interpolations(value: string): Interpolation[] {
  if (/\$(?!\{)/.test(value.replaceAll('$$', ''))) throw new Error(`unbraced $ in "${value}"`);
  return [...value.matchAll(INTERPOLATION)].map((m) => ({
    name: m[1]!,
    operator: m[2] as Interpolation['operator'],
    argument: m[3] ?? '',
  }));
}

/** The value compose would produce with these variables set (and everything else unset). */
export function interpolate(value: string, variables: Readonly<Record<string, string>>): string {
  interpolations(value);
  return value.replace(INTERPOLATION, (whole, name: string, operator: string | undefined, arg: string) => {
    const given = variables[name];
    const set = given !== undefined && (given !== '' || operator?.startsWith(':') !== true);
    switch (operator) {
      case undefined:
        return given ?? '';
      case ':-':
      case '-':
        return set ? given : arg;
      case ':+':
      case '+':
        return set ? arg : '';
      case ':?':
      case '?':
        if (!set) throw new Error(`${whole}: ${arg}`);
        return given;
      default:
        throw new Error(`unknown interpolation ${whole}`);
    }
  });
}
