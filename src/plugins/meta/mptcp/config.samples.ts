/** Valid configs of mptcp using every key of its schema (testing/plugin-samples.ts gathers every plugin's). */
import { COMMON, type Sample } from "#testing/sample-base.js";

export const samples: Sample[] = [
  {
    config: {
      ...COMMON,
      type: "mptcp",
      endpoints: { signal: true, subflow: true, backup: true, fullmesh: false },
      limits: { subflows: 2, addAddrAccepted: 1 },
    },
  },
  { config: { ...COMMON, type: "mptcp", endpoints: { subflow: true, fullmesh: true } } },
];
