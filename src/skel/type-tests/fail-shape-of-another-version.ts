import { pluginMain } from "../index.js";
import { VersionInfo } from "#spec/index.js";

// A 1.x-shaped result labelled 0.2.0: printed, it would lose its addresses.
// expect: ips is not a key of a 0.2.0 result
await pluginMain({ add: async () => ({ cniVersion: "0.2.0", ips: [{ address: "10.0.0.2/24" }] }), del: () => {} }, new VersionInfo(["0.2.0"]), "");
