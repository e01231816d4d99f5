#!/usr/bin/env node
// The `refhub` command. Node 24 runs the TypeScript sources directly (type stripping), so there is no
// build step between `npm ci` and a working command. An older Node cannot load them (it stops with
// ERR_UNKNOWN_FILE_EXTENSION), and a machine's own Node often is older: npm scripts and `npx refhub`
// run the Node 24 that `npm ci` installs, but `node bin/refhub.js` runs whatever `node` is first on
// PATH. So this file checks the version before it loads any source, in plain JavaScript that older Nodes
// parse too, and says in one line what to do.
import module from 'node:module';
import process from 'node:process';
import { URL, fileURLToPath } from 'node:url';

const major = Number(process.versions.node.split('.')[0]);
if (major < 24) {
  process.stderr.write(
    `refhub needs Node.js 24, but ${process.execPath} is Node.js ${process.versions.node}: ` +
      'run it as `npx refhub …` (or `npm start`), which uses the Node.js 24 that `npm ci` installed, ' +
      'or put Node.js 24 first on PATH.\n',
  );
  process.exit(1);
}
// Node keeps what it compiled, and the JavaScript it stripped each TypeScript source to, in a compile
// cache. A start that finds every source there never loads the type stripper, a WebAssembly module
// that would stay resident for the life of the process (about 17 MiB), and starts faster. An entry is
// keyed by the source's content and Node's version, so an edited source or another Node is compiled
// again. Whoever can write the cache can change the code that runs, so it lives beside the code, in
// node_modules, which has the same owner (not in the shared temporary directory, Node's default). A
// process that may not write there uses what it finds. NODE_COMPILE_CACHE names another directory (the
// image fills one at build time); NODE_DISABLE_COMPILE_CACHE=1 turns it off.
module.enableCompileCache(fileURLToPath(new URL('../node_modules/.cache/refhub-compile', import.meta.url)));
await import('../src/main.ts');
