import { pluginMain } from "../index.js";
import { VersionInfo } from "#spec/index.js";

const result = { cniVersion: "1.1.0", ips: [{ address: "10.0.0.2/24", gatway: "10.0.0.1" }] } as const;
// expect: ips[].gatway is not a key of a 1.1.0 result
await pluginMain({ add: () => result, del: () => {} }, new VersionInfo(["1.1.0"]), "");
