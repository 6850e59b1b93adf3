/** Valid configs of dummy using every key of its schema (testing/plugin-samples.ts gathers every plugin's). */
import { COMMON, type Sample } from "#testing/sample-base.js";

export const samples: Sample[] = [{ config: { ...COMMON, type: "dummy", ipam: { type: "host-local" } } }];
