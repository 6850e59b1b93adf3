import { pluginMain } from "../index.js";
import { VersionInfo } from "#spec/index.js";

// The README's pattern with a misspelled optional key: TypeScript alone does not check an arrow's returned literal.
// expect: property 'gatway' ... is not a key of the result shape of this cniVersion
await pluginMain({ add: () => ({ cniVersion: "1.0.0", ips: [{ address: "10.0.0.2/24", gatway: "10.0.0.1" }] }) }, new VersionInfo(["1.0.0"]), "");
