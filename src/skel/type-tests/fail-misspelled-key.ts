import { pluginMain } from "../index.js";
import { VersionInfo } from "#spec/index.js";

// A misspelled optional key in an arrow's returned literal (TypeScript alone does not check it).
// expect: ips[].gatway is not a key of a 1.0.0 result
await pluginMain(
  { add: () => ({ cniVersion: "1.0.0", ips: [{ address: "10.0.0.2/24", gatway: "10.0.0.1" }] }), del: () => {} },
  new VersionInfo(["1.0.0"]),
  "",
);
