#!/usr/bin/env node
// The `refhub` command. Node 24 runs the TypeScript sources directly (type stripping), so there is no
// build step between `npm ci` and a working command.
import '../src/main.ts';
