/*
 * What a hostile user does to the tables the agent and its kernel side keep (the round-three
 * adversarial tests, run as `nobody`):
 *   flood oneshots N RATE SECS   N ranks (FTBPF_JOB=oneshot-I, rank 0 of 1), RATE a second,
 *                                each `sleep SECS`; waits for them; prints "oneshots N"
 *   flood thread-execs N         a rank whose non-leader thread execs this program N times
 *                                (each time a new thread makes a syscall, then execs), then
 *                                prints "thread-execs done" and sleeps until killed
 * Exit 2 on bad usage.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int oneshots(int n, double rate, const char *secs)
{
	double start = now_s();
	int started = 0;

	for (int i = 0; i < n; i++) {
		double due = start + i / rate, t = now_s();
		pid_t p;

		if (due > t) {
			struct timespec ts = {(time_t)(due - t),
					      (long)((due - t - (time_t)(due - t)) * 1e9)};

			nanosleep(&ts, NULL);
		}
		p = fork();
		if (p == 0) {
			char job[32];

			snprintf(job, sizeof(job), "oneshot-%d", i);
			setenv("FTBPF_JOB", job, 1);
			setenv("FTBPF_RANK", "0", 1);
			setenv("FTBPF_WORLD_SIZE", "1", 1);
			execl("/bin/sleep", "sleep", secs, (char *)NULL);
			_exit(127);
		}
		started += p > 0;
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
	}
	while (wait(NULL) > 0)
		;
	printf("oneshots %d\n", started);
	return 0;
}

static char *self;
static int left;

static void *exec_again(void *arg)
{
	char n[16];

	(void)arg;
	syscall(SYS_getppid); /* the thread's record in the kernel */
	snprintf(n, sizeof(n), "%d", left - 1);
	execl(self, "flood", "thread-execs", n, (char *)NULL);
	_exit(127);
}

static int thread_execs(int n)
{
	pthread_t t;

	left = n;
	if (n > 0) {
		pthread_create(&t, NULL, exec_again, NULL);
		for (;;)
			pause(); /* the exec ends this thread */
	}
	printf("thread-execs done\n");
	fflush(stdout);
	for (;;)
		sleep(3600);
	return 0;
}

int main(int argc, char **argv)
{
	self = "/proc/self/exe";
	if (argc >= 5 && !strcmp(argv[1], "oneshots"))
		return oneshots(atoi(argv[2]), atof(argv[3]), argv[4]);
	if (argc >= 3 && !strcmp(argv[1], "thread-execs"))
		return thread_execs(atoi(argv[2]));
	fprintf(stderr, "usage: see the comment at the top of tests/workloads/flood.c\n");
	return 2;
}
