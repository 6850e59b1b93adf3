/**
 * A CRI v1 client for what node GC asks a container runtime (containerd, CRI-O): its name and version, and which
 * pod sandboxes it knows. Only the fields read here are decoded (kubernetes/cri-api runtime/v1 api.proto: Version
 * and ListPodSandbox of runtime.v1.RuntimeService); the rest of each message is skipped.
 * @module
 */
import type { Socket } from "node:net";
import { messageOf } from "#spec/errors.js";
import type { PeerRule } from "#sys/peer.js";
import { GrpcStatusError, grpcUnary } from "./grpc-unary.js";
import { asInt32, asMessage, asString, ProtoWriter, readFields } from "./protobuf.js";

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

/**
 * Who may answer node GC as the runtime (docs/trust.md): its answer decides which attachments GC, as root, DELs, so
 * the listener must be a process that could have DELeted them itself. Root of our user namespace with at least our
 * capabilities: a root without capabilities (one that may bind the socket's path, but not touch a pod's
 * network) is refused, as is the root of a user namespace of its own. The other namespaces are not compared: a
 * process with our capabilities in our user namespace may enter any of ours, so comparing them would protect
 * nothing, and a real runtime may be in another mount namespace than GC (GC from a DaemonSet pod with hostPID,
 * containerd under a systemd unit's private mounts). Confinement (seccomp, no_new_privs, LSM label) is not
 * compared either: it narrows what a process does, not whose it is, and runtimes run under profiles of their own
 * (CRI-O's SELinux domain) that GC's would never equal.
 */
export const CRI_LISTENER_RULE: PeerRule = { namespaces: ["user"], capabilities: "at-least", confinement: "none" };

/**
 * Why the listener on a connected socket is not to be asked as the runtime (CRI_LISTENER_RULE, judged on the
 * process the kernel names: sys/peer.ts's verifyListener), or undefined when it may be. Without Bun's FFI (the
 * Node build) no listener can be identified and every one is refused.
 */
export async function criListenerRefusal(socket: Socket, socketPath?: string): Promise<string | undefined> {
  // Loaded here: every cnitool command imports this module, few ask a runtime.
  const { ownIdentity, socketFd, verifyListener } = await import("#sys/peer.js");
  const fd = socketFd(socket);
  if (fd === undefined) return "the connection's descriptor cannot be read";
  // (The path: a listener that is PID 1, a socket-activated runtime, is believed only for the socket bound there.)
  const verdict = await verifyListener(fd, ownIdentity(), CRI_LISTENER_RULE, socketPath === undefined ? {} : { socketPath });
  return "refusal" in verdict ? verdict.refusal : undefined;
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

/** A client's limits, and how it judges the listener. */
export interface CriClientOptions {
  timeoutMs?: number;
  maxResponseBytes?: number;
  /**
   * Why a listener is not to be asked, or undefined (default criListenerRefusal). Tests that run under Node, where
   * no listener can be identified, pass one that admits their own stand-in runtime.
   */
  checkListener?: (socket: Socket) => Promise<string | undefined>;
}

/**
 * A client for one runtime endpoint; each call opens its own connection (calls are rare), and sends nothing before
 * the listener passed the check (a refusal is a CriError that says why).
 */
export class CriRuntimeClient {
  private readonly socketPath: string;

  /** Throws when `endpoint` is not a unix socket endpoint (criSocketPath). */
  constructor(
    readonly endpoint: string,
    private readonly options: CriClientOptions = {},
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
          checkListener: this.options.checkListener ?? ((socket) => criListenerRefusal(socket, this.socketPath)),
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
