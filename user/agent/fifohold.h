/*
 * The timer FIFO outlives the agent: torch's FileTimerClient opens it for every request with
 * O_NONBLOCK and fails (BrokenPipeError) when nobody holds its reading end, so a worker in an
 * expires() loop died while the agent restarted. Under systemd the FIFO goes into the service's
 * file descriptor store (FDSTORE=1, FDNAME=timer-fifo; FileDescriptorStoreMax in the unit) and
 * comes back with the next start (LISTEN_FDS); without it (`make run`, a shell) a small holder
 * process (ftbpfd --hold-timer-fifo PATH STATE_DIR, "ftbpf-fifohold") keeps it open until the
 * FIFO at PATH is another or gone, or no agent ran for 10 minutes. Either way requests written meanwhile wait in the pipe (1 MiB) and
 * the next agent reads them.
 */
#ifndef FTBPF_FIFOHOLD_H
#define FTBPF_FIFOHOLD_H

/* The FIFO at path as the service manager kept it (its fd, close-on-exec), else -1. Stale
 * entries of that name are closed. Call once, at start. */
int fifohold_inherited(const char *path);
/* Keep fd (the FIFO at path, read-write) held across restarts: the FD store under systemd,
 * else a holder process (one per FIFO, its pid in state_dir/timer-fifo.holder). */
void fifohold_keep(const char *path, int fd, const char *state_dir);
/* ftbpfd --hold-timer-fifo PATH STATE_DIR: the holder itself (fd 3 is the FIFO), until the
 * FIFO at PATH is another or gone, or no agent held STATE_DIR's lock for 10 minutes. Returns
 * its exit code. */
int fifohold_main(const char *path, const char *state_dir);
/* Stop the holder of state_dir (ftbpfd --unpin). */
void fifohold_stop(const char *state_dir);

#endif
