import { pluginMain } from "../index.js";
import { VersionInfo } from "#spec/index.js";

// expect: is not a verb: want add, check, del, status or gc
await pluginMain({ add: async () => {}, chek: async () => {} }, new VersionInfo(["1.0.0"]), "");
