/**
 * systemd socket activation (sd_listen_fds): the listening socket a socket unit passed this process, as Go's
 * go-systemd `activation.Listeners` takes it — the LISTEN_* variables are unset once read (the tools this
 * process runs must not think they were passed sockets), and more than one socket is an error.
 * @module
 */

/** systemd's first passed descriptor. */
const SD_LISTEN_FDS_START = 3;

/** The listening socket systemd passed this process, if any; throws when it passed more than one. */
export function takeListenFd(env: Record<string, string | undefined> = process.env, pid = process.pid): number | undefined {
  if (env["LISTEN_PID"] !== String(pid)) return undefined;
  const count = Number(env["LISTEN_FDS"] ?? "0");
  delete env["LISTEN_PID"];
  delete env["LISTEN_FDS"];
  delete env["LISTEN_FDNAMES"];
  if (!(count >= 1)) return undefined;
  if (count > 1) throw new Error(`Too many (${count}) FDs passed through socket activation`);
  return SD_LISTEN_FDS_START;
}
