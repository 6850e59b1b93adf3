// After the resident pass of the integration suite (scripts/run-tests.sh): how many calls the servers served,
// and a failure when a server could not be asked (it died) or none served anything (the pass ran in exec mode).
import { existsSync, readFileSync } from "node:fs";

const [statusFile, servedFile, logFile] = process.argv.slice(2);
const root = JSON.parse(readFileSync(statusFile, "utf8"));
const hosts = existsSync(servedFile)
  ? readFileSync(servedFile, "utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => l.split(" "))
  : [];
const dead = hosts.filter(([, n]) => Number(n) < 0);
const total = hosts.reduce((sum, [, n]) => sum + Math.max(0, Number(n)), 0);
console.log(`resident pass: ${total} calls served by ${hosts.length} test-host servers, ${root.served} by the host's server`);
if (dead.length) {
  console.error(`resident pass: servers that could not be asked at the end (died?):\n${dead.map((d) => d.join(" ")).join("\n")}`);
}
const log = existsSync(logFile) ? readFileSync(logFile, "utf8") : "";
if (/uncaught|unhandled/.test(log)) console.error(`resident pass: the host's server logged:\n${log}`);
if (dead.length || total === 0 || /uncaught|unhandled/.test(log)) process.exit(1);
