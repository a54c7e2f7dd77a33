/* Rank identity from a process environment (torchrun, Open MPI, PMI/Slurm, FTBPF_*). */
#ifndef FTBPF_IDENT_H
#define FTBPF_IDENT_H

#include <stddef.h>

#include "ftbpf/abi.h"

enum ident_source {
	IDENT_NONE = 0,
	IDENT_FTBPF = 1,
	IDENT_TORCH = 2,
	IDENT_OMPI = 3,
	IDENT_PMI = 4,
	IDENT_SLURM = 5,
	IDENT_CLIENT = 6,   /* registered through the control socket: its rank told (named, or
			     its launcher's variable) */
	IDENT_ASSIGNED = 7, /* registered through the control socket naming no rank: the agent
			       gave it the lowest rank free in its job here (job_pick_rank) */
};

struct rank_ident {
	int rank;
	int local_rank; /* -1 when unknown */
	int world_size; /* -1 when unknown */
	enum ident_source source;
	int host_local;	   /* the id names no host: a loopback (or no) rendezvous address, no
			      job name; ident_scope() makes it this host's */
	int restart_count; /* TORCHELASTIC_RESTART_COUNT, SLURM_RESTART_COUNT; -1 unknown */
	char job[FTBPF_JOB_LEN];
};

/*
 * Parse an environment block (NUL-separated "K=V" strings, as /proc/PID/environ).
 * Returns 0 and fills *ret for a rank, -ENOENT for a process that is not a rank,
 * -EINVAL when a rank variable is present but malformed (out of range, not a number).
 */
int ident_from_environ(const char *env, size_t len, struct rank_ident *ret);
const char *ident_source_name(enum ident_source s);
/*
 * A job whose id names no host (torchrun's master on a loopback address, the same on every
 * host; no job name at all) is local to its host: "@node" is appended, so that it never
 * shares an id (and decisions) with another host's job of the same name. Nothing for others.
 */
void ident_scope(struct rank_ident *r, const char *node);
/* Is this rendezvous address one every host has for itself (127.0.0.0/8, ::1, localhost)? */
int ident_addr_is_loopback(const char *addr);
/* Do a and b name the same rank of the same job (a wrapper's child that carries its rank)? */
int ident_same_rank(const struct rank_ident *a, const struct rank_ident *b);
/* The program classes the agent knows programs by (user/lib/ident.c: one table, a row per
 * program name; a program in no row is in no class). */
enum ident_prog_class {
	IDENT_PROG_SHELL = 1 << 0,	   /* a command interpreter */
	IDENT_PROG_WRAPPER = 1 << 1,	   /* forks the command it is given and waits for it */
	IDENT_PROG_NOT_LAUNCHER = 1 << 2,  /* never a job's launcher (see ident_may_be_launcher) */
	IDENT_PROG_SWITCHES_USER = 1 << 3, /* runs its command as another user */
};
struct ident_prog {
	const char *name; /* comm (15 bytes at most), or an executable's base name */
	unsigned classes; /* enum ident_prog_class */
};
/* The table, for its test. */
const struct ident_prog *ident_progs(size_t *ret_n);
/*
 * Is a process running this program (its comm) a wrapper that forks the real rank and waits
 * for it: shells, timeout, time, uv, srun, container and profiler front-ends. Its child that
 * carries the same rank variables is the rank (see adopt.c).
 */
int ident_is_wrapper(const char *comm);
/*
 * Is it a wrapper that runs its command as another user (su -c, runuser -u USER, sudo -u,
 * doas)? Root's such wrapper hands its rank over to that user: the child is that user's rank,
 * the wrapper leaves root's job (see adopt.c).
 */
int ident_switches_user(const char *comm);
/*
 * May a process running this program (its comm) be stopped as a rank's launcher? Not a shell,
 * a terminal multiplexer, a login or privilege tool, a wrapper like timeout(1), a container's
 * init or monitor, or a service manager: a rank started by hand or from a script has no
 * launcher to stop (its user's shell is not one).
 */
int ident_may_be_launcher(const char *comm);
/*
 * Is this program (a path, as /proc/PID/exe gives it) a shell? A `#!` script's comm is the
 * script's name, its program the shell: a batch script that starts ranks itself is no launcher.
 */
int ident_is_shell_exe(const char *path);
/* Make a job id safe to show and to use as a name, as the environment's are: printable ASCII
 * without quotes or backslashes (anything else becomes '_'). In place. */
void ident_job_sanitize(char *job);

#endif
