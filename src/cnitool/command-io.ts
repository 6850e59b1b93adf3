/**
 * What every cnitool command is given: the environment, the working directory and where to write (the process's
 * own when cnitool runs as a program, a test's in process), and where network configs are unless NETCONFPATH says.
 * @module
 */

/** The config directory of upstream cnitool and of the runtimes. */
export const DEFAULT_NETCONFPATH = "/etc/cni/net.d";

/** The environment, working directory and output of one run of cnitool. */
export interface Io {
  env: Record<string, string | undefined>;
  stdout: (s: string) => void;
  stderr: (s: string) => void;
  cwd: string;
}
