#!/usr/bin/env node
// The `refhub` command. Node 24 runs the TypeScript sources directly (type stripping), so there is no
// build step between `npm ci` and a working command. An older Node cannot load them (it stops with
// ERR_UNKNOWN_FILE_EXTENSION), and a machine's own Node often is older: npm scripts and `npx refhub`
// run the Node 24 that `npm ci` installs, but `node bin/refhub.js` runs whatever `node` is first on
// PATH. So this file checks the version before it loads any source, in plain JavaScript that older Nodes
// parse too, and says in one line what to do.
import process from 'node:process';

const major = Number(process.versions.node.split('.')[0]);
if (major < 24) {
  process.stderr.write(
    `refhub needs Node.js 24, but ${process.execPath} is Node.js ${process.versions.node}: ` +
      'run it as `npx refhub …` (or `npm start`), which uses the Node.js 24 that `npm ci` installed, ' +
      'or put Node.js 24 first on PATH.\n',
  );
  process.exit(1);
}
await import('../src/main.ts');
