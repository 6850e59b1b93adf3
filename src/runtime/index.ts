/**
 * tscni/runtime: the runtime side. `PodNetworkManager` (a watched config directory, the default network, pods
 * attached to one or more networks, teardown from the result cache, readiness, CHECK, status and GC, one
 * operation at a time per pod), the directory watcher on its own, the ordering primitives, and the embedded
 * default network.
 * @module
 */
export {
  PodNetworkManager,
  NetworkNotReadyError,
  PodNetworkError,
  assignInterfaces,
  podCniArgs,
  type PodNetworkManagerOptions,
  type PodRef,
  type SetUpPodRequest,
  type PodNetworkRequest,
  type RuntimeConfig,
  type PodAttachment,
  type PodAttachmentStatus,
} from "./manager.js";
export { NetworkDirectory, type ConfigFileError, type DirectorySnapshot, type NetworkDirectoryOptions } from "./network-directory.js";
export { KeyedMutex, Semaphore, ReadWriteLock, PodLocks, type MutexRunOptions } from "./pod-locks.js";
export { defaultNetworkConfList, DEFAULT_NETWORK_NAME, DEFAULT_BRIDGE, DEFAULT_SUBNET } from "./default-network.js";
