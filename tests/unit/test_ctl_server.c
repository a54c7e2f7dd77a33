/*
 * The control server (user/agent/ctl.c) under a randomized multi-client harness, built with
 * AddressSanitizer and UBSan: a few dozen clients in this process connect, follow events,
 * pipeline requests without reading, send garbage, partial and over-long lines, register (a
 * reply with an fd), half-close and close at random, while the handler emits events that are
 * broadcast to the followers (the handler's own client among them). Seeded, so a failure
 * reproduces (CTL_SEED); CTL_STEPS sets the length.
 */
#include <CUnit/Basic.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "agent/ctl.h"
#include "agent/eventlog.h"
#include "os/log.h"
#include "os/loop.h"

#define NCLI 48

static struct eventlog *el;
static struct ctl_server *srv;
static struct loop *loop;
static int devnull;
static uint64_t rng = 1;
static char sock_path[100];
static int handled;
/* replies deferred by the handler (ctl_defer), sent later by the test (ctl_reply_later) */
static struct {
	uint64_t token;
	struct json_object *o;
} deferred[64];
static int ndeferred, defer_rate; /* defer_rate: one request in N is deferred, 0 never */

static void answer_deferred(int k)
{
	uint64_t t = deferred[k].token;
	struct json_object *o = deferred[k].o;

	deferred[k] = deferred[--ndeferred];
	ctl_reply_later(srv, t, o);
}

static uint32_t rnd(uint32_t n)
{
	rng = rng * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(rng >> 33) % n;
}

static struct json_object *handler(void *ctx, const struct ctl_request *req,
				   const struct ctl_peer *peer)
{
	struct json_object *o = json_object_new_object();
	int nev = (int)rnd(4);
	char pad[2048];

	(void)ctx;
	handled++;
	/* events emitted while the request is handled reach every follower, ours too */
	for (int i = 0; i < nev; i++) {
		struct json_object *e = json_object_new_object();

		json_object_object_add(e, "type", json_object_new_string("test"));
		json_object_object_add(e, "uid", json_object_new_int(rnd(2) ? 0 : 65534));
		eventlog_emit(el, e);
	}
	json_object_object_add(o, "ok", json_object_new_boolean(1));
	json_object_object_add(o, "pid", json_object_new_int(peer->pid));
	memset(pad, 'x', sizeof(pad) - 1);
	pad[rnd(sizeof(pad) - 1)] = 0;
	json_object_object_add(o, "pad", json_object_new_string(pad));
	if (req->cmd == CTL_CMD_REGISTER) {
		ctl_reply_fd(srv, devnull);
	} else if (defer_rate && ndeferred < 64 && rnd((uint32_t)defer_rate) == 0) {
		deferred[ndeferred].o = o;
		deferred[ndeferred++].token = ctl_defer(srv);
		return NULL; /* the reply comes later */
	}
	return o;
}

static int connect_client(void)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	snprintf(a.sun_path, sizeof(a.sun_path), "%s", sock_path);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0 && errno != EINPROGRESS) {
		close(fd);
		return -1;
	}
	return fd;
}

static void serve(int rounds)
{
	for (int r = 0; r < rounds; r++) {
		int n = loop_once(loop, 0);

		if (n <= 0)
			break;
	}
}

static const char *lines[] = {
    "{\"v\":1,\"cmd\":\"status\"}\n",
    "{\"v\":1,\"cmd\":\"events\",\"follow\":true}\n",
    "{\"v\":1,\"cmd\":\"events\",\"limit\":3}\n",
    "{\"v\":1,\"cmd\":\"register\",\"job\":\"j\"}\n",
    "{\"v\":1,\"cmd\":\"version\"}\n{\"v\":1,\"cmd\":\"timers\"}\n{\"v\":1,\"cmd\":\"peers\"}\n",
    "not json\n",
    "{\"v\":1,\"cmd\":\"\xff\xfe\"}\n",
    "{\"v\":1,\"cmd\":\"stat", /* a partial line */
    "{\"v\":2,\"cmd\":\"status\"}\n",
};

static void test_random_clients(void)
{
	int cli[NCLI];
	char buf[8192], *big = malloc(CTL_MAX_LINE + 100);
	long steps = getenv("CTL_STEPS") ? atol(getenv("CTL_STEPS")) : 200000;

	CU_ASSERT_PTR_NOT_NULL_FATAL(big);
	memset(big, 'a', CTL_MAX_LINE + 99);
	big[CTL_MAX_LINE + 99] = '\n';
	for (int i = 0; i < NCLI; i++)
		cli[i] = -1;
	for (long s = 0; s < steps; s++) {
		int i = (int)rnd(NCLI), act = (int)rnd(100);

		if (cli[i] < 0) {
			cli[i] = connect_client();
		} else if (act < 40) {
			const char *l = lines[rnd(sizeof(lines) / sizeof(lines[0]))];

			if (send(cli[i], l, strlen(l), MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
				(void)0; /* full or closed: the server's business */
		} else if (act < 42) {
			if (send(cli[i], big, CTL_MAX_LINE + 100, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
				(void)0;
		} else if (act < 70) { /* read some, or never (pipelining clients) */
			if (i % 3 && recv(cli[i], buf, sizeof(buf), MSG_DONTWAIT) == 0) {
				close(cli[i]);
				cli[i] = -1;
			}
		} else if (act < 75) {
			shutdown(cli[i], SHUT_WR);
		} else if (act < 82) {
			close(cli[i]);
			cli[i] = -1;
		}
		serve(1 + (int)rnd(3));
		if (ndeferred && rnd(3) == 0) /* a deferred reply, its client gone or not */
			answer_deferred((int)rnd((uint32_t)ndeferred));
		if (rnd(1000) == 0)
			ctl_tick(srv, (uint64_t)time(NULL) * 1000000000ull +
					  (rnd(2) ? 0 : 100000000000ull));
	}
	for (int i = 0; i < NCLI; i++)
		if (cli[i] >= 0)
			close(cli[i]);
	while (ndeferred)
		answer_deferred(0);
	for (int r = 0; r < 100 && ctl_clients(srv) > 0; r++) {
		serve(10);
		usleep(1000);
	}
	CU_ASSERT_EQUAL(ctl_clients(srv), 0); /* every client freed once gone */
	CU_ASSERT_TRUE(handled > 1000);
	CU_ASSERT_TRUE(ctl_counters(srv)->bad_requests > 0);
	CU_ASSERT_TRUE(ctl_counters(srv)->oversized > 0);
	printf("\n  %d requests handled, counters: accepted %llu bad %llu oversized %llu slow "
	       "%llu truncated %llu\n",
	       handled, (unsigned long long)ctl_counters(srv)->accepted,
	       (unsigned long long)ctl_counters(srv)->bad_requests,
	       (unsigned long long)ctl_counters(srv)->oversized,
	       (unsigned long long)ctl_counters(srv)->dropped_slow,
	       (unsigned long long)ctl_counters(srv)->truncated);
	free(big);
}

/* A deferred reply: nothing until ctl_reply_later; the next pipelined request waits for it,
 * then both replies come in order; a reply for a connection that went is dropped. */
static void test_deferred(void)
{
	char buf[16384];
	ssize_t n = 0;
	int fd = connect_client(), rate = defer_rate;
	const char *two = "{\"v\":1,\"cmd\":\"version\"}\n{\"v\":1,\"cmd\":\"status\"}\n";

	CU_ASSERT_FATAL(fd >= 0);
	defer_rate = 1; /* the first request is deferred */
	CU_ASSERT_EQUAL(send(fd, two, strlen(two), MSG_NOSIGNAL), (ssize_t)strlen(two));
	for (int r = 0; r < 50 && !ndeferred; r++) {
		serve(5);
		usleep(1000);
	}
	defer_rate = 0;
	CU_ASSERT_EQUAL(ndeferred, 1);
	serve(10);
	CU_ASSERT_EQUAL(ndeferred, 1); /* the second waits behind the first */
	CU_ASSERT_TRUE(recv(fd, buf, sizeof(buf), MSG_DONTWAIT) < 0);
	answer_deferred(0);
	for (int r = 0; r < 100; r++) {
		ssize_t k;

		serve(5);
		k = recv(fd, buf + n, sizeof(buf) - 1 - (size_t)n, MSG_DONTWAIT);
		if (k > 0)
			n += k;
		buf[n] = 0;
		if (strchr(buf, '\n') && strchr(strchr(buf, '\n') + 1, '\n'))
			break;
		usleep(1000);
	}
	CU_ASSERT_PTR_NOT_NULL(strchr(buf, '\n'));
	CU_ASSERT_PTR_NOT_NULL(strchr(buf, '\n') ? strchr(strchr(buf, '\n') + 1, '\n') : NULL);
	/* deferred again, then the client goes: the late reply is dropped */
	defer_rate = 1;
	n = strchr(two, '\n') - two + 1; /* the first request alone */
	CU_ASSERT_EQUAL(send(fd, two, (size_t)n, MSG_NOSIGNAL), n);
	for (int r = 0; r < 50 && !ndeferred; r++) {
		serve(5);
		usleep(1000);
	}
	defer_rate = rate;
	CU_ASSERT_EQUAL(ndeferred, 1);
	close(fd);
	for (int r = 0; r < 20; r++) {
		serve(5);
		usleep(1000);
	}
	if (ndeferred)
		answer_deferred(0);
	serve(5);
}

/* The crash that was: follow, then a request whose handler emits an event, then close. */
static void test_follow_then_request_then_close(void)
{
	for (int k = 0; k < 50; k++) {
		int fd = connect_client();
		const char *l = "{\"v\":1,\"cmd\":\"events\",\"follow\":true}\n"
				"{\"v\":1,\"cmd\":\"register\",\"job\":\"j\"}\n";

		CU_ASSERT_TRUE_FATAL(fd >= 0);
		serve(2);
		if (k % 3 == 2) { /* the follow reply goes out first: the register is handled while
				     the follower's peer is gone, so its events cannot be sent */
			CU_ASSERT_TRUE(send(fd, l, 38, MSG_NOSIGNAL) == 38);
			serve(5);
			CU_ASSERT_TRUE(send(fd, l + 38, strlen(l + 38), MSG_NOSIGNAL) > 0);
			close(fd);
			serve(5);
			continue;
		}
		CU_ASSERT_EQUAL(send(fd, l, strlen(l), MSG_NOSIGNAL), (ssize_t)strlen(l));
		if (k % 3 == 1)
			close(fd);
		serve(5);
		if (k % 3 == 0)
			close(fd);
		serve(5);
	}
	for (int r = 0; r < 100 && ctl_clients(srv) > 0; r++) {
		serve(10);
		usleep(1000);
	}
	CU_ASSERT_EQUAL(ctl_clients(srv), 0);
}

int main(void)
{
	char dir[] = "/tmp/ftbpf-ctl-XXXXXX", err[256];
	struct eventlog_opts eo = {.path = "", .mem_keep = 64};
	struct ctl_limits lim = {.max_clients = 40, .per_uid = 30, .uid_out_bytes = 256 * 1024};
	CU_pSuite s;
	int fails;

	log_set_level(LOG_WARN);
	if (getenv("CTL_SEED"))
		rng = strtoull(getenv("CTL_SEED"), NULL, 10);
	if (!mkdtemp(dir))
		return 1;
	snprintf(sock_path, sizeof(sock_path), "%s/s", dir);
	devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	loop = loop_new();
	el = eventlog_new(&eo, err, sizeof(err));
	srv = el ? ctl_new(sock_path, loop, &lim, handler, NULL, el, err, sizeof(err)) : NULL;
	if (!srv) {
		fprintf(stderr, "setup: %s\n", err);
		return 1;
	}
	eventlog_set_sink(el, ctl_broadcast, srv);
	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("control server", NULL, NULL);
	CU_add_test(s, "follow, request, close", test_follow_then_request_then_close);
	CU_add_test(s, "a deferred reply", test_deferred);
	defer_rate = 4; /* and one request in four deferred among the random clients */
	CU_add_test(s, "random clients", test_random_clients);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	fails = (int)CU_get_number_of_failures();
	CU_cleanup_registry();
	ctl_free(srv);
	eventlog_free(el);
	loop_free(loop);
	close(devnull);
	rmdir(dir);
	return fails;
}
