/**
 * A CRI v1 client for what node GC asks a container runtime (containerd, CRI-O): its name and version, and which
 * pod sandboxes it knows. Only the fields read here are decoded (kubernetes/cri-api runtime/v1 api.proto: Version
 * and ListPodSandbox of runtime.v1.RuntimeService); the rest of each message is skipped.
 * @module
 */
import { asInt32, asMessage, asString, ProtoWriter, readFields } from "./protobuf.js";
import { GrpcStatusError, grpcUnary } from "./grpc-unary.js";
import { messageOf } from "#spec/errors.js";

const SERVICE = "/runtime.v1.RuntimeService";

/** The runtime's VersionResponse. */
export interface CriVersion {
  version: string;
  runtimeName: string;
  runtimeVersion: string;
  runtimeApiVersion: string;
}

/** PodSandboxState by number; an unknown number is kept as `STATE_<n>`. */
const SANDBOX_STATES = ["SANDBOX_READY", "SANDBOX_NOTREADY"] as const;
export type CriSandboxState = (typeof SANDBOX_STATES)[number] | `STATE_${number}`;

/** One PodSandbox of a ListPodSandboxResponse: its ID (the CNI container ID of its attachments) and state. */
export interface CriSandbox {
  id: string;
  state: CriSandboxState;
}

/** VersionRequest{version}: the CRI API version the client speaks. */
export function encodeVersionRequest(apiVersion: string): Buffer {
  return new ProtoWriter().string(1, apiVersion).finish();
}

/** VersionResponse: fields 1-4, all strings. */
export function decodeVersionResponse(buf: Buffer): CriVersion {
  const out: CriVersion = { version: "", runtimeName: "", runtimeVersion: "", runtimeApiVersion: "" };
  const keys = [undefined, "version", "runtimeName", "runtimeVersion", "runtimeApiVersion"] as const;
  for (const f of readFields(buf)) {
    const key = keys[f.field];
    if (key) out[key] = asString(f, key);
  }
  return out;
}

/** ListPodSandboxRequest without a filter: every sandbox, whatever its state. */
export function encodeListPodSandboxRequest(): Buffer {
  return new ProtoWriter().finish();
}

/** PodSandbox: id (1) and state (3); metadata, created_at, labels, annotations and the rest are skipped. */
function decodePodSandbox(buf: Buffer): CriSandbox {
  const sandbox: CriSandbox = { id: "", state: "SANDBOX_READY" };
  for (const f of readFields(buf)) {
    if (f.field === 1) sandbox.id = asString(f, "PodSandbox.id");
    else if (f.field === 3) {
      const n = asInt32(f, "PodSandbox.state");
      sandbox.state = SANDBOX_STATES[n] ?? `STATE_${n}`;
    }
  }
  return sandbox;
}

/** ListPodSandboxResponse: repeated PodSandbox items (1). */
export function decodeListPodSandboxResponse(buf: Buffer): CriSandbox[] {
  const items: CriSandbox[] = [];
  for (const f of readFields(buf)) if (f.field === 1) items.push(decodePodSandbox(asMessage(f, "ListPodSandboxResponse.items")));
  return items;
}

/**
 * The socket path of a CRI endpoint as kubelet and crictl take it: `unix:///absolute/path`, or a bare absolute
 * path. Anything else (tcp, npipe, a relative path) is refused with an error naming the value.
 */
export function criSocketPath(endpoint: string): string {
  const socket = endpoint.startsWith("unix://") ? endpoint.slice("unix://".length) : endpoint;
  if (!socket.startsWith("/") || socket.includes("\0")) {
    throw new Error(
      `CRI endpoint ${JSON.stringify(endpoint)} is not a unix socket: want unix:///absolute/path (e.g. unix:///run/containerd/containerd.sock)`,
    );
  }
  return socket;
}

/** The runtime could not be asked, or answered with an error: what was asked, where, and why. */
export class CriError extends Error {
  constructor(
    readonly endpoint: string,
    message: string,
    override readonly cause?: unknown,
  ) {
    super(`CRI runtime at ${endpoint}: ${message}`);
    this.name = "CriError";
  }
}

/** A client for one runtime endpoint; each call opens its own connection (calls are rare). */
export class CriRuntimeClient {
  private readonly socketPath: string;

  /** Throws when `endpoint` is not a unix socket endpoint (criSocketPath). */
  constructor(
    readonly endpoint: string,
    private readonly options: { timeoutMs?: number; maxResponseBytes?: number } = {},
  ) {
    this.socketPath = criSocketPath(endpoint);
  }

  /** One call, its answer decoded; every failure (transport, status, a malformed answer) is a CriError. */
  private async call<T>(method: string, request: Buffer, decode: (response: Buffer) => T): Promise<T> {
    try {
      return decode(
        await grpcUnary({
          socketPath: this.socketPath,
          method: `${SERVICE}/${method}`,
          request,
          timeoutMs: this.options.timeoutMs ?? 30_000,
          maxResponseBytes: this.options.maxResponseBytes ?? 64 << 20,
        }),
      );
    } catch (e) {
      const hint = e instanceof GrpcStatusError && e.statusName === "UNIMPLEMENTED" ? " (does it serve CRI v1? containerd needs its CRI plugin)" : "";
      throw new CriError(this.endpoint, `${messageOf(e)}${hint}`, e);
    }
  }

  /** The runtime's name and versions (Version with API version v1). */
  async version(): Promise<CriVersion> {
    return this.call("Version", encodeVersionRequest("v1"), decodeVersionResponse);
  }

  /** Every pod sandbox the runtime knows, ready or not. */
  async listPodSandboxes(): Promise<CriSandbox[]> {
    const sandboxes = await this.call("ListPodSandbox", encodeListPodSandboxRequest(), decodeListPodSandboxResponse);
    const bad = sandboxes.find((s) => s.id === "");
    if (bad) throw new CriError(this.endpoint, "ListPodSandbox answered a sandbox without an ID");
    return sandboxes;
  }
}
