#!/usr/bin/env node
/**
 * cnitool as the npm package's executable (`npx cnitool`), for installs without the plugin directory's
 * multicall binary.
 * @module
 */
import { main } from "#cnitool/cnitool.js";

main().catch((e: unknown) => {
  process.stderr.write(`Error: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exitCode = 1;
});
