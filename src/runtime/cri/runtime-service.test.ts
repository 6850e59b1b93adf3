/**
 * The CRI client's hand-rolled gRPC against a real gRPC server (@grpc/grpc-js, test-only) on a unix socket: answers,
 * error statuses (percent-encoded messages, UNIMPLEMENTED), a socket nobody listens on, a server that never
 * answers, an answer over the size limit, and an HTTP/2 server that is not gRPC. Also the endpoint forms accepted.
 */

import assert from "node:assert/strict";
import http2 from "node:http2";
import net from "node:net";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import * as grpc from "@grpc/grpc-js";
import { judgeFacts, socketFd } from "#sys/peer.js";
import { admitStandIn, criServices } from "#testing/fake-cri.js";
import { useTempDirs } from "#testing/temp.js";
import { CRI_LISTENER_RULE, CriError, CriRuntimeClient, criSocketPath } from "./runtime-service.js";

const tempDir = useTempDirs();
/** Under Node no listener can be identified: these tests' own servers are admitted (the rule: the integration tests). */
const ADMIT = { checkListener: admitStandIn };
const { runtime: RUNTIME, image: IMAGE } = criServices();

type Handler = (call: grpc.ServerUnaryCall<Record<string, unknown>, unknown>, callback: grpc.sendUnaryData<unknown>) => void;

/** A gRPC server on a fresh unix socket with `services`; its socket path. */
async function serve(services: Array<[grpc.ServiceDefinition, Record<string, Handler>]>): Promise<{ socket: string; server: grpc.Server }> {
  const socket = path.join(tempDir(), "cri.sock");
  const server = new grpc.Server();
  for (const [service, handlers] of services) server.addService(service, handlers);
  await new Promise<void>((resolve, reject) =>
    server.bindAsync(`unix://${socket}`, grpc.ServerCredentials.createInsecure(), (e) => (e ? reject(e) : resolve())),
  );
  return { socket, server };
}

const ids = Array.from({ length: 3 }, (_, i) => String(i + 1).repeat(64));
let sandboxes: Array<Record<string, unknown>> = [];
let stall = false;

describe("CriRuntimeClient over gRPC", () => {
  let socket: string;
  let server: grpc.Server;
  let requests: Array<{ method: string; request: Record<string, unknown> }>;

  before(async () => {
    requests = [];
    ({ socket, server } = await serve([
      [
        RUNTIME,
        {
          Version: (call, cb) => {
            requests.push({ method: "Version", request: call.request });
            cb(null, { version: "0.1.0", runtimeName: "fake", runtimeVersion: "9.9", runtimeApiVersion: "v1" });
          },
          ListPodSandbox: (call, cb) => {
            requests.push({ method: "ListPodSandbox", request: call.request });
            if (stall) return; // never answers
            cb(null, { items: sandboxes });
          },
          Status: (_call, cb) => cb({ code: grpc.status.NOT_FOUND, details: "nothing here: 100% gone, ünïcode" }),
        },
      ],
    ]));
  });
  after(() => server.forceShutdown());

  test("Version and ListPodSandbox (every sandbox: no filter sent)", async () => {
    sandboxes = [
      {
        id: ids[0],
        metadata: { name: "a", namespace: "default", uid: "u" },
        state: "SANDBOX_READY",
        createdAt: "1700000000000000000",
        labels: { x: "y" },
      },
      { id: ids[1], state: "SANDBOX_NOTREADY" },
    ];
    const client = new CriRuntimeClient(`unix://${socket}`, ADMIT);
    assert.deepEqual(await client.version(), { version: "0.1.0", runtimeName: "fake", runtimeVersion: "9.9", runtimeApiVersion: "v1" });
    assert.deepEqual(await client.listPodSandboxes(), [
      { id: ids[0], state: "SANDBOX_READY" },
      { id: ids[1], state: "SANDBOX_NOTREADY" },
    ]);
    assert.deepEqual(
      requests.map((r) => [r.method, r.request]),
      [
        ["Version", { version: "v1" }],
        ["ListPodSandbox", { filter: null }],
      ],
    );
  });

  test("a bare socket path works as well", async () => {
    sandboxes = [];
    assert.deepEqual(await new CriRuntimeClient(socket, ADMIT).listPodSandboxes(), []);
  });

  test("an error status: its name and its message, percent-decoded", async () => {
    // Status is not a call the client makes; reach it through the same transport.
    const { grpcUnary } = await import("./grpc-unary.js");
    await assert.rejects(
      grpcUnary({
        socketPath: socket,
        method: "/runtime.v1.RuntimeService/Status",
        request: Buffer.alloc(0),
        timeoutMs: 5000,
        maxResponseBytes: 1000,
      }),
      { name: "GrpcStatusError", message: "/runtime.v1.RuntimeService/Status failed (NOT_FOUND): nothing here: 100% gone, ünïcode" },
    );
  });

  test("a server that never answers: an error within the timeout", async () => {
    stall = true;
    try {
      const t0 = Date.now();
      await assert.rejects(
        new CriRuntimeClient(socket, { ...ADMIT, timeoutMs: 300 }).listPodSandboxes(),
        (e: Error) => e instanceof CriError && /within 300 ms|DEADLINE_EXCEEDED/.test(e.message),
      );
      assert.ok(Date.now() - t0 < 3000);
    } finally {
      stall = false;
    }
  });

  test("an answer over the size limit is refused", async () => {
    sandboxes = ids.map((id) => ({ id }));
    await assert.rejects(new CriRuntimeClient(socket, { ...ADMIT, maxResponseBytes: 100 }).listPodSandboxes(), /larger than 100 bytes/);
  });

  test("a sandbox without an ID is refused", async () => {
    sandboxes = [{ id: ids[0] }, { state: "SANDBOX_READY" }];
    await assert.rejects(new CriRuntimeClient(socket, ADMIT).listPodSandboxes(), /a sandbox without an ID/);
  });
});

describe("CriRuntimeClient against what is not a CRI runtime", () => {
  test("a socket nobody listens on", async () => {
    const missing = path.join(tempDir(), "none.sock");
    await assert.rejects(
      new CriRuntimeClient(`unix://${missing}`, ADMIT).listPodSandboxes(),
      (e: Error) =>
        e instanceof CriError &&
        e.message.startsWith(`CRI runtime at unix://${missing}: cannot reach unix://${missing}:`) &&
        /ENOENT/.test(e.message),
    );
  });

  test("a gRPC server without the runtime service: UNIMPLEMENTED, with a hint", async () => {
    const { socket, server } = await serve([[IMAGE, { ImageStatus: (_c, cb) => cb(null, {}) }]]);
    try {
      await assert.rejects(new CriRuntimeClient(socket, ADMIT).version(), /failed \(UNIMPLEMENTED\).*does it serve CRI v1\?/);
    } finally {
      server.forceShutdown();
    }
  });

  test("an HTTP/2 server that is not gRPC", async () => {
    const socket = path.join(tempDir(), "h2.sock");
    const server = http2.createServer((_req, res) => {
      res.writeHead(404, { "content-type": "text/plain" });
      res.end("not here");
    });
    await new Promise<void>((resolve) => server.listen(socket, resolve));
    try {
      await assert.rejects(new CriRuntimeClient(socket, ADMIT).listPodSandboxes(), /HTTP status 404 .*not a gRPC server\?/);
    } finally {
      server.close();
    }
  });
});

describe("the listener check", () => {
  /** A unix socket server that records every byte it is sent. */
  async function recorder(): Promise<{ socket: string; received: () => number; close: () => void }> {
    const socket = path.join(tempDir(), "listener.sock");
    let received = 0;
    const server = net.createServer((c) => c.on("data", (b: Buffer) => (received += b.length)));
    await new Promise<void>((resolve) => server.listen(socket, resolve));
    return { socket, received: () => received, close: () => server.close() };
  }

  test("a refused listener is sent nothing, and the error says which endpoint and why", async () => {
    const r = await recorder();
    try {
      await assert.rejects(new CriRuntimeClient(`unix://${r.socket}`, { checkListener: async () => "not the runtime (a test)" }).version(), {
        name: "CriError",
        message: `CRI runtime at unix://${r.socket}: the listener on unix://${r.socket} is not trusted, nothing was sent: not the runtime (a test)`,
      });
      await sleep(50);
      assert.equal(r.received(), 0, "not even the HTTP/2 preface");
    } finally {
      r.close();
    }
  });

  test("a check that throws refuses", async () => {
    const r = await recorder();
    try {
      await assert.rejects(
        new CriRuntimeClient(r.socket, {
          checkListener: async () => {
            throw new Error("boom");
          },
        }).version(),
        /not trusted, nothing was sent: it cannot be checked \(boom\)/,
      );
      assert.equal(r.received(), 0);
    } finally {
      r.close();
    }
  });

  test("the check is given the connected socket, whose descriptor the peer rule reads", async () => {
    sandboxes = [];
    const { socket, server } = await serve([[RUNTIME, { Version: (_c, cb) => cb(null, { runtimeName: "x" }) }]]);
    try {
      let fd: number | undefined;
      await new CriRuntimeClient(socket, { checkListener: async (s) => ((fd = socketFd(s)), undefined) }).version();
      assert.equal(typeof fd, "number");
    } finally {
      server.forceShutdown();
    }
  });

  test("the default rule: under Node no listener can be identified, so none is asked", { skip: "bun" in process.versions }, async () => {
    const r = await recorder();
    try {
      await assert.rejects(new CriRuntimeClient(r.socket).listPodSandboxes(), {
        message: `CRI runtime at ${r.socket}: the listener on unix://${r.socket} is not trusted, nothing was sent: the listener's credentials cannot be read (the standalone build is needed)`,
      });
      await sleep(50);
      assert.equal(r.received(), 0);
    } finally {
      r.close();
    }
  });

  test("the rule: root of our user namespace with at least our capabilities, namespaces and confinement else free", () => {
    assert.deepEqual(CRI_LISTENER_RULE, { namespaces: ["user"], capabilities: "at-least", confinement: "none" });
    const own = {
      euid: 0,
      namespaces: { user: "1:1", net: "1:2", mnt: "1:3", pid: "1:4" },
      capEff: 0x1ffffffffffn,
      seccomp: "0/0",
      noNewPrivs: "0",
      lsm: "unconfined",
    };
    const runtime = { ...own, namespaces: { user: "1:1", net: "1:2", mnt: "1:9", pid: "1:4" }, seccomp: "2/1", lsm: "container_runtime_t" };
    assert.equal(
      judgeFacts(runtime, own, CRI_LISTENER_RULE, "the listener", "this caller"),
      undefined,
      "another mount namespace, its own confinement",
    );
    assert.equal(
      judgeFacts({ ...own, capEff: 0n }, own, CRI_LISTENER_RULE, "the listener", "this caller")?.kind,
      "capabilities",
      "a capability-less root",
    );
    assert.equal(judgeFacts({ ...own, euid: 1000 }, own, CRI_LISTENER_RULE, "the listener", "this caller")?.kind, "not_root");
    assert.equal(
      judgeFacts({ ...own, namespaces: { ...own.namespaces, user: "1:5" } }, own, CRI_LISTENER_RULE, "the listener", "this caller")?.kind,
      "namespace",
      "the root of a user namespace of its own",
    );
  });
});

describe("criSocketPath", () => {
  test("unix:// endpoints and absolute paths", () => {
    assert.equal(criSocketPath("unix:///run/containerd/containerd.sock"), "/run/containerd/containerd.sock");
    assert.equal(criSocketPath("/var/run/crio/crio.sock"), "/var/run/crio/crio.sock");
  });

  test("anything else is refused, naming the value", () => {
    for (const bad of ["tcp://127.0.0.1:1234", "unix://relative.sock", "run/containerd.sock", "npipe:////./pipe/x", ""]) {
      assert.throws(
        () => criSocketPath(bad),
        { message: new RegExp(`^CRI endpoint ${JSON.stringify(bad).replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")} is not a unix socket`) },
        bad,
      );
    }
  });
});
