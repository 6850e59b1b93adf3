/**
 * Which callers the resident server serves: sys/peer.ts's rule for the same process in all but pid (uid 0 in the
 * server's user, network, mount and pid namespaces, its capabilities and its confinement, judged on the process
 * the kernel names), then the build (a launcher of another build speaks for other plugin code).
 * A refused caller runs the call itself, exactly as without a server.
 * @module
 */
import type net from "node:net";
import { admitPeer, type OwnIdentity, type PeerRefusalKind, SAME_PROCESS_RULE, socketFd } from "#sys/peer.js";

/** Which rule refused a caller: one of the peer rule's, or the build. */
export type AdmissionRefusalKind = PeerRefusalKind | "build";

/** The verdict on a connection. */
export type Admission =
  | { admitted: true; pid: number }
  /** `otherBuild`: an admissible caller of another build (the binaries were replaced: the server steps aside). */
  | { admitted: false; reason: string; kind: AdmissionRefusalKind; otherBuild?: string };

/** Whether the caller on `socket`, which says it is build `clientBuild`, is served by the server of `buildId`. */
export async function admit(socket: net.Socket, clientBuild: string, buildId: string, own: OwnIdentity, acceptedAt: number): Promise<Admission> {
  const fd = socketFd(socket);
  if (fd === undefined) return { admitted: false, reason: "the connection's descriptor cannot be read", kind: "identity" };
  const verdict = await admitPeer(fd, own, SAME_PROCESS_RULE, acceptedAt);
  if ("refusal" in verdict) return { admitted: false, reason: verdict.refusal, kind: verdict.kind };
  if (!buildId || clientBuild !== buildId) {
    return { admitted: false, reason: `the server is build "${buildId}", the launcher "${clientBuild}"`, kind: "build", otherBuild: clientBuild };
  }
  return { admitted: true, pid: verdict.pid };
}
