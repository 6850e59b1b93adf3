/** Valid configs of vrf using every key of its schema (testing/plugin-samples.ts gathers every plugin's). */
import { COMMON, type Sample } from "#testing/sample-base.js";

export const samples: Sample[] = [{ config: { ...COMMON, type: "vrf", vrfname: "vrfsample", table: 1001 } }];
