/*
 * A C process using libftbpf, for the timer tests. One mode per scenario:
 *   timer_client MODE [EXPIRY]   (EXPIRY of the interesting timer, default 0.3 s)
 * syscalls  arm 0.3 s, then loop on getppid(): the kernel signals it at syscall entry
 * blocked   arm 0.3 s, then sleep: the agent signals it
 * spin      arm 0.3 s, then spin without syscalls: the agent signals it
 * release   arm/release 1000 times (0.2 s each), sleep 1 s: exit 0 (never signalled)
 * nested    outer 5 s + inner 0.3 s released in time, then inner2 0.3 s while sleeping
 * threads   8 threads x nested pairs, 2000 rounds each with 1 s expiries: exit 0, slot empty
 * overflow  20 scopes (16 in the slot, 4 through the socket), all released; then a socket
 *           timer of 0.3 s expires while sleeping
 * exitearly arm 0.5 s and exit 0 at once
 * pinger    main thread sleeps 8 s in one syscall but pings from a thread every 0.2 s
 * ignterm-MODE   MODE with SIGTERM ignored (escalation tests)
 * Prints "armed" when the interesting timer is set.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ftbpf/ftbpf.h"

static struct ftbpf *h;
static volatile unsigned long sink;

static void die(const char *what, int r)
{
	fprintf(stderr, "timer_client: %s: %s\n", what, strerror(-r));
	exit(2);
}

static int acq(const char *scope, double s, int sig)
{
	int id = ftbpf_timer_acquire(h, scope, s, sig);

	if (id < 0)
		die("acquire", id);
	return id;
}

static void *thread_main(void *arg)
{
	char a[32], b[32];

	snprintf(a, sizeof(a), "outer-%ld", (long)arg);
	snprintf(b, sizeof(b), "inner-%ld", (long)arg);
	for (int i = 0; i < 2000; i++) {
		int o = acq(a, 1, 0), n = acq(b, 1, 0);

		if (ftbpf_timer_release(h, n) || ftbpf_timer_release(h, o))
			die("release", -EINVAL);
	}
	return NULL;
}

static void *pinger(void *arg)
{
	(void)arg;
	for (;;) {
		ftbpf_ping(h);
		usleep(200000);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	double exp = argc > 2 ? atof(argv[2]) : 0.3; /* expiry of the interesting timer */
	int r = ftbpf_open(NULL, "timerjob", 0, &h);

	if (r < 0)
		die("open", r);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strncmp(mode, "ignterm-", 8)) { /* the same, deaf to SIGTERM: escalation tests */
		signal(SIGTERM, SIG_IGN);
		mode += 8;
	}
	if (!strcmp(mode, "syscalls")) {
		acq("syscalls", exp, SIGKILL);
		printf("armed\n");
		for (;;)
			syscall(SYS_getppid);
	} else if (!strcmp(mode, "blocked")) {
		acq("blocked", exp, SIGKILL);
		printf("armed\n");
		sleep(30);
	} else if (!strcmp(mode, "spin")) {
		acq("spin", 0.3, SIGKILL);
		printf("armed\n");
		for (;;)
			sink++;
	} else if (!strcmp(mode, "release")) {
		for (int i = 0; i < 1000; i++)
			if (ftbpf_timer_release(h, acq("release", 0.2, SIGKILL)))
				die("release", -EINVAL);
		printf("armed\n");
		sleep(1);
		return ftbpf_slot_timers_in_use(h) == 0 ? 0 : 4;
	} else if (!strcmp(mode, "nested")) {
		int o = acq("outer", 5, SIGKILL), n = acq("inner", 0.3, SIGKILL);

		usleep(100000);
		ftbpf_timer_release(h, n);
		usleep(400000); /* past inner's deadline: released, nothing happens */
		ftbpf_timer_release(h, o);
		acq("inner2", 0.3, SIGTERM);
		printf("armed\n");
		sleep(30);
	} else if (!strcmp(mode, "threads")) {
		pthread_t t[8];

		for (long i = 0; i < 8; i++)
			pthread_create(&t[i], NULL, thread_main, (void *)i);
		for (int i = 0; i < 8; i++)
			pthread_join(t[i], NULL);
		printf("armed\n");
		return ftbpf_slot_timers_in_use(h) == 0 ? 0 : 4;
	} else if (!strcmp(mode, "overflow")) {
		int ids[20], remote = 0;
		char s[16];

		for (int i = 0; i < 20; i++) {
			snprintf(s, sizeof(s), "o%d", i);
			ids[i] = acq(s, 5, SIGKILL);
			remote += ids[i] >= 1000;
		}
		printf("remote %d\n", remote);
		for (int i = 19; i >= 0; i--)
			if (ftbpf_timer_release(h, ids[i]))
				die("release", -EINVAL);
		for (int i = 0; i < 16; i++) /* fill the slot, then one more goes by socket */
			acq("fill", 30, SIGKILL);
		if (acq("by-socket", 0.3, SIGKILL) < 1000)
			die("expected a socket timer", -EINVAL);
		printf("armed\n");
		sleep(30);
	} else if (!strcmp(mode, "exitearly")) {
		acq("exitearly", 0.5, SIGKILL);
		printf("armed\n");
		return 0;
	} else if (!strcmp(mode, "pinger")) {
		pthread_t t;

		pthread_create(&t, NULL, pinger, NULL);
		printf("armed\n");
		sleep(8);
		return 0;
	} else {
		fprintf(stderr, "timer_client: unknown mode '%s'\n", mode);
		return 2;
	}
	printf("NOT SIGNALLED\n");
	return 5;
}
