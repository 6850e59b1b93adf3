/** Valid configs of sbr using every key of its schema (testing/plugin-samples.ts gathers every plugin's). */
import { COMMON, type Sample } from "#testing/sample-base.js";

export const samples: Sample[] = [{ config: { ...COMMON, type: "sbr", table: 100, gateways: ["10.1.0.1"], addSourceHints: true } }];
