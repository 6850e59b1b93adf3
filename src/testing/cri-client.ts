/**
 * A minimal CRI v1 client, the calls kubelet makes to run and tear down pod sandboxes, over gRPC on a unix socket.
 * Speaks the slice of runtime.v1 in `src/testing/cri/runtime-v1.proto` (read from the source tree at run time:
 * tsc does not copy it). Messages are plain objects with camelCase field names; enums are their names; int64s are decimal strings.
 * @module
 */
import path from "node:path";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { ROOT } from "./harness.js";

export const CRI_PROTO = path.join(ROOT, "src/testing/cri/runtime-v1.proto");

export interface PodSandboxMetadata {
  name: string;
  uid: string;
  namespace: string;
  attempt?: number;
}
export interface PortMapping {
  protocol?: "TCP" | "UDP" | "SCTP";
  containerPort: number;
  hostPort: number;
  hostIp?: string;
}
export interface DnsConfig {
  servers?: string[];
  searches?: string[];
  options?: string[];
}

export interface PodSandboxConfig {
  metadata: PodSandboxMetadata;
  hostname?: string;
  logDirectory?: string;
  dnsConfig?: DnsConfig;
  portMappings?: PortMapping[];
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  /** `securityContext.namespaceOptions.network: "NODE"`: a hostNetwork pod (no CNI call at all). */
  linux?: { cgroupParent?: string; securityContext?: { namespaceOptions?: { network?: "POD" | "NODE" } } };
}

export type PodSandboxState = "SANDBOX_READY" | "SANDBOX_NOTREADY";

export interface PodSandboxStatus {
  id: string;
  metadata: PodSandboxMetadata;
  state: PodSandboxState;
  /** Nanoseconds since the epoch (an int64, kept as a decimal string). */
  createdAt: string;
  network?: { ip: string; additionalIps: Array<{ ip: string }> };
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

export interface PodSandbox {
  id: string;
  metadata: PodSandboxMetadata;
  state: PodSandboxState;
  labels: Record<string, string>;
}

export interface RuntimeCondition {
  type: string;
  status: boolean;
  reason: string;
  message: string;
}

export interface VersionResponse {
  version: string;
  runtimeName: string;
  runtimeVersion: string;
  runtimeApiVersion: string;
}

/** What containerd's CRI puts, as JSON, under the "info" key of a verbose PodSandboxStatus. */
export interface ContainerdSandboxInfo {
  pid?: number;
  netNamespaceClosed?: boolean;
  runtimeSpec?: { linux?: { namespaces?: Array<{ type: string; path?: string }> } };
  cniResult?: unknown;
  [key: string]: unknown;
}

type Callback = (err: grpc.ServiceError | null, reply: unknown) => void;
type UnaryMethod = (request: unknown, options: grpc.CallOptions, callback: Callback) => void;
type ServiceClient = grpc.Client & Record<string, UnaryMethod>;
type ServiceCtor = new (address: string, credentials: grpc.ChannelCredentials, options?: grpc.ClientOptions) => ServiceClient;

let loaded: { runtime: ServiceCtor; image: ServiceCtor } | undefined;

function services(): { runtime: ServiceCtor; image: ServiceCtor } {
  if (!loaded) {
    const definition = protoLoader.loadSync(CRI_PROTO, {
      keepCase: false,
      longs: String,
      enums: String,
      defaults: true,
      arrays: true,
      objects: true,
    });
    const runtimeV1 = (grpc.loadPackageDefinition(definition) as unknown as { runtime: { v1: Record<string, ServiceCtor> } }).runtime.v1;
    loaded = { runtime: runtimeV1["RuntimeService"]!, image: runtimeV1["ImageService"]! };
  }
  return loaded;
}

/** A CRI call that failed: the method, the gRPC status name and the runtime's message. */
export class CriError extends Error {
  constructor(
    readonly method: string,
    readonly code: grpc.status,
    readonly details: string,
  ) {
    super(`CRI ${method} failed (${grpc.status[code] ?? code}): ${details}`);
    this.name = "CriError";
  }
}

export class CriClient {
  private readonly runtime: ServiceClient;
  private readonly image: ServiceClient;

  /** `socket` is the runtime's unix socket path; every call gets `timeoutMs` as its deadline. */
  constructor(
    readonly socket: string,
    private readonly timeoutMs = 30_000,
  ) {
    const address = `unix://${socket}`;
    const { runtime, image } = services();
    const options: grpc.ClientOptions = { "grpc.max_receive_message_length": 16 << 20 };
    this.runtime = new runtime(address, grpc.credentials.createInsecure(), options);
    this.image = new image(address, grpc.credentials.createInsecure(), options);
  }

  private call<T>(client: ServiceClient, method: string, request: unknown, timeoutMs = this.timeoutMs): Promise<T> {
    return new Promise((resolve, reject) => {
      const fn = client[method];
      if (!fn) return reject(new Error(`no CRI method ${method}`));
      fn.call(client, request, { deadline: Date.now() + timeoutMs }, (err, reply) => {
        if (err) reject(new CriError(method, err.code, err.details || err.message));
        else resolve(reply as T);
      });
    });
  }

  version(timeoutMs?: number): Promise<VersionResponse> {
    return this.call(this.runtime, "Version", { version: "v1" }, timeoutMs);
  }

  async status(): Promise<RuntimeCondition[]> {
    const reply = await this.call<{ status?: { conditions: RuntimeCondition[] } }>(this.runtime, "Status", {});
    return reply.status?.conditions ?? [];
  }

  async imageStatus(image: string): Promise<{ id: string; repoTags: string[] } | undefined> {
    const reply = await this.call<{ image?: { id: string; repoTags: string[] } | null }>(this.image, "ImageStatus", { image: { image } });
    return reply.image ?? undefined;
  }

  async runPodSandbox(config: PodSandboxConfig): Promise<string> {
    const reply = await this.call<{ podSandboxId: string }>(this.runtime, "RunPodSandbox", { config });
    return reply.podSandboxId;
  }

  async stopPodSandbox(podSandboxId: string): Promise<void> {
    await this.call(this.runtime, "StopPodSandbox", { podSandboxId });
  }

  async removePodSandbox(podSandboxId: string): Promise<void> {
    await this.call(this.runtime, "RemovePodSandbox", { podSandboxId });
  }

  /** The sandbox's status and, containerd-specific, the parsed verbose info. */
  async podSandboxStatus(podSandboxId: string): Promise<{ status: PodSandboxStatus; info: ContainerdSandboxInfo }> {
    const reply = await this.call<{ status: PodSandboxStatus; info: Record<string, string> }>(this.runtime, "PodSandboxStatus", {
      podSandboxId,
      verbose: true,
    });
    const raw = reply.info["info"];
    return { status: reply.status, info: raw ? (JSON.parse(raw) as ContainerdSandboxInfo) : {} };
  }

  async listPodSandbox(labelSelector: Record<string, string> = {}): Promise<PodSandbox[]> {
    const reply = await this.call<{ items: PodSandbox[] }>(this.runtime, "ListPodSandbox", { filter: { labelSelector } });
    return reply.items;
  }

  close(): void {
    this.runtime.close();
    this.image.close();
  }
}
