// The keys a JSON text repeats within one object. JSON.parse keeps the last of two equal keys without
// a word, and readers of log lines disagree on which one wins, so a line with a repeated key is read
// from its raw text: each object's keys are collected as the text is scanned.

/** Every key that appears a second time in the same object, at any depth, in order of appearance. */
export function repeatedKeys(json: string): string[] {
  const repeated: string[] = [];
  // One entry per open object (its keys so far) or array (null).
  const open: (Set<string> | null)[] = [];
  let expectKey = false;
  for (let i = 0; i < json.length; i++) {
    const c = json[i];
    if (c === '"') {
      let end = i + 1;
      while (json[end] !== '"') end += json[end] === '\\' ? 2 : 1;
      const keys = open.at(-1);
      if (expectKey && keys) {
        const key = JSON.parse(json.slice(i, end + 1)) as string;
        if (keys.has(key)) repeated.push(key);
        keys.add(key);
        expectKey = false;
      }
      i = end;
    } else if (c === '{') {
      open.push(new Set());
      expectKey = true;
    } else if (c === '[') {
      open.push(null);
    } else if (c === '}' || c === ']') {
      open.pop();
    } else if (c === ',') {
      expectKey = open.at(-1) instanceof Set;
    }
  }
  return repeated;
}
