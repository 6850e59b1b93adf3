/**
 * A stand-in CRI runtime for unit tests: a gRPC server (@grpc/grpc-js) on a unix socket serving Version and
 * ListPodSandbox of runtime.v1.RuntimeService from the test CRI proto, with the sandboxes a test sets.
 * @module
 */

import type { Socket } from "node:net";
import path from "node:path";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { socketFd } from "#sys/peer.js";
import { CRI_PROTO } from "./cri-client.js";

/** A sandbox as the fake lists it (camelCase fields of the proto's PodSandbox). */
export interface FakeSandbox {
  id: string;
  state?: "SANDBOX_READY" | "SANDBOX_NOTREADY";
  metadata?: { name: string; namespace: string; uid: string };
}

/** A running fake: its socket, the sandboxes it lists (change them at will), how often it was asked, its stop. */
export interface FakeCri {
  socket: string;
  endpoint: string;
  sandboxes: FakeSandbox[];
  listed: number;
  stop(): void;
}

let definition: protoLoader.PackageDefinition | undefined;

/** The proto's service definitions (loaded once). */
export function criServices(): { runtime: grpc.ServiceDefinition; image: grpc.ServiceDefinition } {
  definition ??= protoLoader.loadSync(CRI_PROTO, { keepCase: false, longs: String, enums: String, defaults: true });
  return {
    runtime: definition["runtime.v1.RuntimeService"] as grpc.ServiceDefinition,
    image: definition["runtime.v1.ImageService"] as grpc.ServiceDefinition,
  };
}

/** Starts a fake CRI runtime on `<dir>/cri.sock` listing `sandboxes`. */
export async function startFakeCri(dir: string, sandboxes: FakeSandbox[] = []): Promise<FakeCri> {
  const socket = path.join(dir, "cri.sock");
  const server = new grpc.Server();
  const fake: FakeCri = { socket, endpoint: `unix://${socket}`, sandboxes, listed: 0, stop: () => server.forceShutdown() };
  server.addService(criServices().runtime, {
    Version: (_call: unknown, cb: grpc.sendUnaryData<unknown>) =>
      cb(null, { version: "0.1.0", runtimeName: "fake-cri", runtimeVersion: "1.0", runtimeApiVersion: "v1" }),
    ListPodSandbox: (_call: unknown, cb: grpc.sendUnaryData<unknown>) => {
      fake.listed++;
      cb(null, { items: fake.sandboxes });
    },
  });
  await new Promise<void>((resolve, reject) =>
    server.bindAsync(`unix://${socket}`, grpc.ServerCredentials.createInsecure(), (e) => (e ? reject(e) : resolve())),
  );
  return fake;
}

/**
 * A listener check for tests that run the CRI client in process under Node, where the peer rule cannot identify
 * any listener: admits a connection whose descriptor the rule could read, so that the test reaches its own
 * stand-in runtime (the rule itself is tried by the integration tests, through the standalone build).
 */
export const admitStandIn = async (socket: Socket): Promise<string | undefined> =>
  socketFd(socket) === undefined ? "the connection's descriptor cannot be read" : undefined;
