/*
 * A training loop in C (an MPI rank, say) with coordinated checkpoints from ftbpf.
 *
 *   c_loop --dir DIR --rank R [--step-ms MS] [--steps N] [--crash-at STEP] [--epoch FILE]
 *          [--stop-file FILE]
 *
 * Steps are paced by the wall clock (step s starts at FILE (DIR/epoch) + s x MS), so ranks on
 * different nodes stay in step as a synchronous job's would. At the step the agents agree on,
 * every rank saves DIR/ckpt.R.STEP and waits until all have; then it exits with the code the
 * agents decided (42: restart, 93: do not requeue), or goes on after an operator's checkpoint.
 * After a restart it resumes from the last complete checkpoint. --crash-at makes it abort at
 * that step (a failure). A save is committed with the fencing token of its ticket: DIR/ckpt.R.STEP
 * is written, then DIR/commit.R.STEP ({"step", "generation", "token"}) only when no newer
 * token was committed in DIR and then ftbpf_saved_gen() says the generation is still the job's
 * (both under a lock on DIR) (DIR/fence holds the newest: a rank of a generation or run left behind commits nothing).
 * --peers FILE (tests): in the
 * launcher's first start of the rank, exit 1 as soon as a pid listed in FILE is gone, as a rank
 * whose collective lost a peer does. --stop-file FILE (tests): end normally (exit 0, DONE) at
 * the first step boundary after FILE exists, as a job that finished does. Run by
 * tests/integration/decide_*.sh.
 *
 * Build: cc c_loop.c -lftbpf (or with libftbpf.a and -lpthread).
 */
#include <errno.h>
#include <fcntl.h>
#include <ftbpf/ftbpf.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t preempted;

/* Commit the save of step with its fencing token, unless dir holds a newer one or the agents
 * refuse it: under a lock on dir (the job's ranks here save side by side), the fence checked,
 * then the save reported (ftbpf_saved_gen), then the commit marker and the newest token
 * (written to a temporary file and renamed). A save refused either way is neither reported
 * nor committed. 0, -ESTALE. */
static int commit(struct ftbpf *h, const char *dir, long rank, long step, uint64_t gen,
		  uint64_t token)
{
	unsigned long long newest = 0;
	char p[512], t[512];
	int lk = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), r = 0;
	FILE *f;

	if (lk >= 0)
		flock(lk, LOCK_EX);
	snprintf(p, sizeof(p), "%s/fence", dir);
	if ((f = fopen(p, "r"))) {
		if (fscanf(f, "%llu", &newest) != 1)
			newest = 0;
		fclose(f);
	}
	if (token < newest || ftbpf_saved_gen(h, step, gen) != 0) {
		r = -ESTALE;
		goto out;
	}
	snprintf(p, sizeof(p), "%s/commit.%ld.%ld", dir, rank, step);
	if ((f = fopen(p, "w"))) {
		fprintf(f, "{\"step\": %ld, \"generation\": %llu, \"token\": %llu}\n", step,
			(unsigned long long)gen, (unsigned long long)token);
		fclose(f);
	}
	if (token > newest) {
		snprintf(t, sizeof(t), "%s/fence.%ld.tmp", dir, rank);
		snprintf(p, sizeof(p), "%s/fence", dir);
		if ((f = fopen(t, "w"))) {
			fprintf(f, "%llu\n", (unsigned long long)token);
			fclose(f);
			rename(t, p);
		}
	}
out:
	if (lk >= 0)
		close(lk); /* and its lock */
	return r;
}

/* Is a process listed in file (pids, blank separated) gone? */
static int peer_gone(const char *file)
{
	FILE *f = fopen(file, "r");
	int pid, gone = 0;

	if (!f)
		return 0;
	while (!gone && fscanf(f, "%d", &pid) == 1)
		gone = pid > 0 && kill(pid, 0) < 0 && errno == ESRCH;
	fclose(f);
	return gone;
}

static void on_term(int sig)
{
	(void)sig;
	preempted = 1; /* survive it: the agents agree on a step, we save there */
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Log the first moment this rank sees a checkpoint request (for the benchmark: the slot is
 * read, no syscall). */
static void note_request(const struct ftbpf *h, FILE *log, long long *seen)
{
	struct ftbpf_restart_info ri;

	if (!ftbpf_checkpoint_requested(h) || ftbpf_restart_info(h, &ri) < 0)
		return;
	if (ri.ckpt_step >= 0 && ri.ckpt_step != *seen) {
		*seen = ri.ckpt_step;
		fprintf(log, "REQUEST %lld seen %.6f\n", (long long)ri.ckpt_step, now_s());
	}
}

/* The wall-clock time step 0 began at: the first rank to start writes it, the others read. */
static double epoch(const char *p)
{
	char tmp[540];
	double e = 0;
	FILE *f;

	if ((f = fopen(p, "r"))) {
		if (fscanf(f, "%lf", &e) != 1)
			e = 0;
		fclose(f);
	}
	if (e > 0)
		return e;
	snprintf(tmp, sizeof(tmp), "%s.%d", p, getpid());
	if ((f = fopen(tmp, "w"))) {
		fprintf(f, "%.3f\n", now_s());
		fclose(f);
		if (link(tmp, p) < 0 && errno != EEXIST)
			perror("link");
		unlink(tmp);
	}
	return epoch(p);
}

int main(int argc, char **argv)
{
	const char *dir = ".", *epoch_file = NULL, *peers = NULL, *stop_file = NULL;
	long steps = 1000000, crash_at = -1, step_ms = 50, rank = 0;
	struct ftbpf_restart_info ri;
	struct ftbpf *h = NULL;
	long long seen = -1;
	uint64_t gen = 0, token = 0;
	int first_launch, r;
	struct sigaction sa = {.sa_handler = on_term};
	char p[512];
	double e;
	FILE *log;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--dir"))
			dir = argv[i + 1];
		else if (!strcmp(argv[i], "--rank"))
			rank = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--steps"))
			steps = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--step-ms"))
			step_ms = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--stop-file"))
			stop_file = argv[i + 1];
		else if (!strcmp(argv[i], "--crash-at"))
			crash_at = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--epoch"))
			epoch_file = argv[i + 1];
		else if (!strcmp(argv[i], "--peers"))
			peers = argv[i + 1];
	}
	snprintf(p, sizeof(p), "%s/log.%ld", dir, rank);
	log = fopen(p, "a");
	if (!log)
		return 1;
	setvbuf(log, NULL, _IOLBF, 0);
	if ((r = ftbpf_open(NULL, NULL, (int)rank, &h)) < 0)
		fprintf(log, "no agent (%s): training without coordinated checkpoints\n",
			strerror(-r));
	sigaction(SIGTERM, &sa, NULL);
	while (ftbpf_restart_info(h, &ri) == -EAGAIN) /* the run not known yet: no guess */
		fprintf(log, "waiting for the job's decisions (the agent cannot read the store)\n");
	fprintf(log, "START pid %d generation %llu from step %lld\n", getpid(),
		(unsigned long long)ri.generation, (long long)ri.resume_step + 1);
	{ /* the launcher's first start of this rank (torchrun: TORCHELASTIC_RESTART_COUNT) */
		const char *rc = getenv("TORCHELASTIC_RESTART_COUNT");

		first_launch = !rc || !strcmp(rc, "0");
	}
	snprintf(p, sizeof(p), "%s/epoch", dir);
	e = epoch(epoch_file ? epoch_file : p);
	if (ri.resume_step >= 0) /* restarted: step on from now */
		e = now_s() - (ri.resume_step + 1) * step_ms / 1000.0;
	for (long step = ri.resume_step + 1; step < steps; step++) {
		double at = e + step * step_ms / 1000.0, w;

		/* "compute" until the step's time, looking at the slot every millisecond */
		while ((w = at - now_s()) > 0) {
			usleep((useconds_t)((w < 0.001 ? w : 0.001) * 1e6));
			note_request(h, log, &seen);
		}
		if (stop_file && access(stop_file, F_OK) == 0)
			break; /* the job is over: DONE */
		if (step == crash_at) {
			fprintf(log, "CRASH at step %ld\n", step);
			abort();
		}
		if (peers && first_launch && peer_gone(peers)) {
			fprintf(log, "PEER LOST at step %ld\n", step);
			return 1;
		}
		if (ftbpf_should_save_gen(h, step, &gen) == 1) {
			snprintf(p, sizeof(p), "%s/ckpt.%ld.%ld", dir, rank, step);
			fclose(fopen(p, "w"));
			ftbpf_save_ticket(h, step, NULL, &token);
			if (commit(h, dir, rank, step, gen, token) == 0) {
				fprintf(log, "SAVED %ld generation %llu token %llu\n", step,
					(unsigned long long)gen, (unsigned long long)token);
			} else {
				fprintf(log, "STALE %ld generation %llu token %llu\n", step,
					(unsigned long long)gen, (unsigned long long)token);
			}
			/* wait until every rank saved it (all wait at this step) */
			for (int i = 0; i < 60000 && ftbpf_checkpoint_requested(h) &&
					ftbpf_action(h) == FTBPF_ACTION_NONE;
			     i++) {
				ftbpf_restart_info(h, &ri);
				/* complete, failed, or a newer request: go on (it is acknowledged
				 * at the next step boundary) */
				if (ri.ckpt_state != 1 || ri.ckpt_step != step)
					break;
				usleep(1000);
			}
		}
		if (ftbpf_action(h) != FTBPF_ACTION_NONE) {
			fprintf(log, "EXIT %d at step %ld%s\n", ftbpf_exit_code(h), step,
				preempted ? " (preempted)" : "");
			return ftbpf_exit_code(h);
		}
	}
	fprintf(log, "DONE\n");
	ftbpf_close(h);
	return 0;
}
