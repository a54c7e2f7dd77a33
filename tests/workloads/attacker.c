/*
 * What a hostile local user does to the agent, for the adversarial tests (run as `nobody`):
 *   attacker follow-register SOCK        events --follow then register on one connection, close
 *   attacker handoff SOCK DIR            connect, hand the socket to a child, exit; the child
 *                                        waits for DIR/go, registers, arms an expired timer in
 *                                        whatever slot it gets, writes the reply to DIR/reply
 *   attacker idle SOCK N SECONDS         hold N connections open without a request
 *   attacker pipeline SOCK N SECONDS     N connections writing `status` without reading
 *   attacker timers SOCK N SECONDS       acquire N socket timers on itself (each its own scope)
 *   attacker register SOCK JOB SECONDS   register into job JOB, then stay
 *   attacker register-many SOCK PREFIX N N processes, one after the other, each registers
 *                                        into its own job PREFIX-i and exits
 *   attacker storm KIND SECONDS          signals | forks | execs | threads, as fast as it can
 *   attacker request SOCK LINE           send one raw line, print the reply
 * Exit status 0 when the attack ran (whatever the agent did), 2 on bad usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ftbpf/slot.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int connect_to(const char *path)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

static void send_all(int fd, const char *s)
{
	size_t n = strlen(s);

	while (n) {
		ssize_t w = write(fd, s, n);

		if (w <= 0)
			return;
		s += w;
		n -= (size_t)w;
	}
}

/* One reply line, and an fd passed with it (SCM_RIGHTS), if any. */
static int recv_reply(int fd, char *buf, size_t len, int *ret_fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = {buf, len - 1};
	struct msghdr mh = {
	    .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
	ssize_t n = recvmsg(fd, &mh, 0);
	struct cmsghdr *cm;

	*ret_fd = -1;
	if (n <= 0)
		return -1;
	buf[n] = 0;
	for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
			memcpy(ret_fd, CMSG_DATA(cm), sizeof(int));
	return 0;
}

static int follow_register(const char *sock)
{
	int fd = connect_to(sock);

	if (fd < 0)
		return 1;
	send_all(fd, "{\"v\":1,\"cmd\":\"events\",\"follow\":true}\n"
		     "{\"v\":1,\"cmd\":\"register\",\"job\":\"shared\"}\n");
	close(fd);
	return 0;
}

static void write_file(const char *dir, const char *name, const char *s)
{
	char p[512];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "w");
	if (f) {
		fputs(s, f);
		fclose(f);
	}
}

/* Arm every timer of a slot we got, already expired: whoever owns it would be signalled. */
static void arm_expired(int slotfd)
{
	struct ftbpf_slot *s =
	    mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE, MAP_SHARED, slotfd, 0);

	if (s == MAP_FAILED)
		return;
	for (int i = 0; i < FTBPF_SLOT_TIMERS; i++) {
		s->timers[i].sig = SIGKILL;
		s->timers[i].deadline_ns = 1;
		__atomic_store_n(&s->timers[i].state, FTBPF_TS_ARMED, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&s->earliest_ns, 1, __ATOMIC_RELEASE);
}

static int handoff(const char *sock, const char *dir)
{
	char p[512], buf[4096], line[64];
	int fd = connect_to(sock), slotfd;
	pid_t child;

	if (fd < 0)
		return 1;
	child = fork();
	if (child < 0)
		return 1;
	if (child > 0) { /* the parent: its pid is what the agent saw; it exits now */
		snprintf(line, sizeof(line), "%d\n", (int)getpid());
		write_file(dir, "parent.pid", line);
		_exit(0);
	}
	setsid();
	snprintf(p, sizeof(p), "%s/go", dir);
	for (int i = 0; i < 600 && access(p, F_OK) < 0; i++)
		usleep(100000);
	send_all(fd, "{\"v\":1,\"cmd\":\"register\",\"job\":\"shared\"}\n");
	if (recv_reply(fd, buf, sizeof(buf), &slotfd) < 0)
		snprintf(buf, sizeof(buf), "no reply\n");
	if (slotfd >= 0)
		arm_expired(slotfd);
	write_file(dir, "reply", buf);
	sleep(3);
	return 0;
}

static int hold(const char *sock, int n, double secs, const char *req)
{
	int *fds = calloc((size_t)n, sizeof(int)), ok = 0;
	double end = now_s() + secs;

	if (!fds)
		return 1;
	for (int i = 0; i < n; i++) {
		fds[i] = connect_to(sock);
		ok += fds[i] >= 0;
		if (fds[i] >= 0 && req)
			fcntl(fds[i], F_SETFL, O_NONBLOCK);
	}
	printf("connected %d of %d\n", ok, n);
	fflush(stdout);
	while (now_s() < end) {
		if (!req) {
			usleep(100000);
			continue;
		}
		for (int i = 0; i < n; i++) /* never read: replies pile up */
			if (fds[i] >= 0 && write(fds[i], req, strlen(req)) < 0 && errno != EAGAIN) {
				close(fds[i]);
				fds[i] = -1;
			}
		usleep(1000);
	}
	return 0;
}

static int timers(const char *sock, int n, double secs)
{
	char req[256], buf[1024];
	int fd = connect_to(sock), ok = 0, dummy;

	if (fd < 0)
		return 1;
	for (int i = 0; i < n; i++) {
		snprintf(
		    req, sizeof(req),
		    "{\"v\":1,\"cmd\":\"timer_acquire\",\"scope\":\"s%d\",\"expires_in\":3600}\n",
		    i);
		send_all(fd, req);
		if (recv_reply(fd, buf, sizeof(buf), &dummy) < 0)
			break;
		ok += strstr(buf, "\"ok\":true") != NULL;
	}
	printf("timers acquired %d of %d\n", ok, n);
	fflush(stdout);
	usleep((useconds_t)(secs * 1e6));
	return 0;
}

static int reg(const char *sock, const char *job, double secs)
{
	char req[256], buf[4096];
	int fd = connect_to(sock), slotfd;

	if (fd < 0)
		return 1;
	snprintf(req, sizeof(req), "{\"v\":1,\"cmd\":\"register\",\"job\":\"%s\",\"rank\":3}\n",
		 job);
	send_all(fd, req);
	if (recv_reply(fd, buf, sizeof(buf), &slotfd) == 0)
		printf("%s", buf);
	fflush(stdout);
	/* keep "making progress" (a completed syscall now and then) so that a job it shared
	 * would never look hung */
	for (double end = now_s() + secs; now_s() < end;) {
		if (getppid() < 0)
			break;
		usleep(20000);
	}
	return 0;
}

static int register_many(const char *sock, const char *prefix, int n)
{
	int ok = 0;

	for (int i = 0; i < n; i++) {
		char job[128];
		int st = 0;
		pid_t p;

		snprintf(job, sizeof(job), "%s-%d", prefix, i);
		p = fork();
		if (p == 0) {
			int null = open("/dev/null", O_WRONLY);

			dup2(null, 1);
			_exit(reg(sock, job, 0));
		}
		if (p > 0 && waitpid(p, &st, 0) == p && WIFEXITED(st) && !WEXITSTATUS(st))
			ok++;
	}
	printf("registered %d of %d\n", ok, n);
	return 0;
}

static void *thread_fn(void *arg)
{
	return arg;
}

static void on_usr2(int sig)
{
	(void)sig;
}

static int storm(const char *kind, double secs)
{
	double end = now_s() + secs;
	unsigned long n = 0;

	signal(SIGUSR1, SIG_IGN);
	signal(SIGUSR2, on_usr2);
	signal(SIGCHLD, SIG_DFL);
	while (now_s() < end) {
		if (!strcmp(kind, "signals")) {
			for (int i = 0; i < 64; i++, n++)
				kill(getpid(), i & 1 ? SIGUSR1 : SIGUSR2);
		} else if (!strcmp(kind, "forks")) {
			pid_t p = fork();

			if (p == 0)
				_exit(0);
			if (p > 0)
				waitpid(p, NULL, 0);
			n++;
		} else if (!strcmp(kind, "execs")) {
			pid_t p = fork();

			if (p == 0) {
				execl("/bin/true", "true", (char *)NULL);
				_exit(127);
			}
			if (p > 0)
				waitpid(p, NULL, 0);
			n++;
		} else if (!strcmp(kind, "threads")) {
			pthread_t t;

			if (pthread_create(&t, NULL, thread_fn, NULL) == 0)
				pthread_join(t, NULL);
			n++;
		} else {
			return 2;
		}
	}
	printf("storm %s: %lu\n", kind, n);
	return 0;
}

static int request(const char *sock, const char *line)
{
	char buf[65536];
	int fd = connect_to(sock), dummy;

	if (fd < 0)
		return 1;
	send_all(fd, line);
	send_all(fd, "\n");
	if (recv_reply(fd, buf, sizeof(buf), &dummy) == 0)
		fputs(buf, stdout);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "follow-register"))
		return follow_register(argv[2]);
	if (argc >= 4 && !strcmp(argv[1], "handoff"))
		return handoff(argv[2], argv[3]);
	if (argc >= 5 && !strcmp(argv[1], "idle"))
		return hold(argv[2], atoi(argv[3]), atof(argv[4]), NULL);
	if (argc >= 5 && !strcmp(argv[1], "pipeline"))
		return hold(argv[2], atoi(argv[3]), atof(argv[4]),
			    "{\"v\":1,\"cmd\":\"status\"}\n{\"v\":1,\"cmd\":\"events\"}\n");
	if (argc >= 5 && !strcmp(argv[1], "timers"))
		return timers(argv[2], atoi(argv[3]), atof(argv[4]));
	if (argc >= 5 && !strcmp(argv[1], "register-many"))
		return register_many(argv[2], argv[3], atoi(argv[4]));
	if (argc >= 5 && !strcmp(argv[1], "register"))
		return reg(argv[2], argv[3], atof(argv[4]));
	if (argc >= 4 && !strcmp(argv[1], "storm"))
		return storm(argv[2], atof(argv[3]));
	if (argc >= 4 && !strcmp(argv[1], "request"))
		return request(argv[2], argv[3]);
	fprintf(stderr, "usage: see the comment at the top of tests/workloads/attacker.c\n");
	return 2;
}
