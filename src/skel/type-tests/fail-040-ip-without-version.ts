import type { Result } from "#spec/index.js";

// expect: Property 'version' is missing
export const result: Result = { cniVersion: "0.4.0", ips: [{ address: "10.0.0.2/24" }] };
