// `npm run client:generate`: rewrites src/openapi.generated.ts from the document refhub serves.
import fs from 'node:fs/promises';
import { GENERATED_FILE, renderClientTypes } from './client-types.ts';
import { servedDocument } from './served-document.ts';

const before = await fs.readFile(GENERATED_FILE, 'utf8').catch(() => '');
const after = await renderClientTypes(await servedDocument());
await fs.writeFile(GENERATED_FILE, after);
console.log(`${GENERATED_FILE}: ${before === after ? 'unchanged' : 'regenerated'}`);
