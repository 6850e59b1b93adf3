import { pluginMain } from "../index.js";
import { versionsStartingFrom, VersionInfo } from "#spec/index.js";

// expect: check ... CHECK is in 0.4.0 on
await pluginMain({ add: async () => "{}", del: () => {} }, new VersionInfo(versionsStartingFrom("0.3.0")), "");
