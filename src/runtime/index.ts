/**
 * tscni/runtime: the runtime side. `PodNetworkManager` (a watched config directory, the default network, pods
 * attached to one or more networks, teardown from the result cache, readiness, CHECK, status and GC, one
 * operation at a time per pod), the directory watcher on its own, the ordering primitives, and the embedded
 * default network.
 * @module
 */

export { DEFAULT_BRIDGE, DEFAULT_NETWORK_NAME, DEFAULT_SUBNET, defaultNetworkConfList } from "./default-network.js";
export {
  assignInterfaces,
  NetworkNotReadyError,
  type PodAttachment,
  type PodAttachmentStatus,
  PodNetworkError,
  PodNetworkManager,
  type PodNetworkManagerOptions,
  type PodNetworkRequest,
  type PodRef,
  podCniArgs,
  type RuntimeConfig,
  type SetUpPodRequest,
} from "./manager.js";
export { type ConfigFileError, type DirectorySnapshot, NetworkDirectory, type NetworkDirectoryOptions } from "./network-directory.js";
export { KeyedMutex, type MutexRunOptions, PodLocks, ReadWriteLock, Semaphore } from "./pod-locks.js";
export { ResidentFirstExec, type ResidentFirstExecOptions } from "./resident-exec.js";
