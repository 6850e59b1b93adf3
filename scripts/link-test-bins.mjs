// Makes dist-test/bin the test plugins' directory (noop, sleep, legacy010, broken), each a link to their own Node
// entry. They are test doubles: never in dist/ or its plugin directory.
import { chmodSync, mkdirSync, rmSync, symlinkSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const entry = path.join(root, "dist-test/testing/plugins/main.js");
const bin = path.join(root, "dist-test/bin");
chmodSync(entry, 0o755);
rmSync(bin, { recursive: true, force: true });
mkdirSync(bin, { recursive: true });
for (const name of ["noop", "sleep", "legacy010", "broken"]) symlinkSync(path.relative(bin, entry), path.join(bin, name));
