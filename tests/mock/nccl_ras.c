/*
 * The mock NCCL's RAS service (see mock_ras.h): the client protocol of NCCL 2.24+ (text lines:
 * "CLIENT PROTOCOL 2" -> "SERVER PROTOCOL 2", "TIMEOUT n" -> "OK", "SET FORMAT json" -> "OK"
 * (or an older NCCL's "ERROR: Unknown command" with FTBPF_MOCK_RAS_TEXT=1), "STATUS" -> the
 * report, then the server closes). The JSON is NCCL 2.28's, with the missing comma of
 * 2.28.7-2.28.9 after a missing rank's "nvml_dev" when FTBPF_MOCK_RAS_VERSION (default 2.28.9)
 * is one of them.
 */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "mock_ras.h"

#define COMMS_MAX 16

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static struct {
	uint64_t hash;
	int nranks, rank;
	struct mock_ras_rank *r;
} comms[COMMS_MAX];
static int lfd = -1;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct buf {
	char *p;
	size_t n, cap;
};

static void put(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->p + b->n, b->cap - b->n, fmt, ap);
		va_end(ap);
		if (n >= 0 && (size_t)n < b->cap - b->n) {
			b->n += (size_t)n;
			return;
		}
		b->cap = b->cap * 2 + (size_t)n + 64;
		b->p = realloc(b->p, b->cap);
		if (!b->p)
			abort();
	}
}

static int version_without_comma(const char *v)
{
	return !strcmp(v, "2.28.7") || !strcmp(v, "2.28.8") || !strcmp(v, "2.28.9");
}

static void report(struct buf *b)
{
	const char *ver = getenv("FTBPF_MOCK_RAS_VERSION");
	const char *f = getenv("NCCL_RAS_TIMEOUT_FACTOR");
	double factor = f && atof(f) > 0 ? atof(f) : 1.0;
	static const char *fn[6] = {"", "AllReduce", "Broadcast", "Reduce", "AllGather",
				    "ReduceScatter"};
	uint64_t now = now_ns();
	int n = 0, first = 1;

	if (!ver || !*ver)
		ver = "2.28.9";
	pthread_mutex_lock(&mu);
	for (int i = 0; i < COMMS_MAX; i++)
		n += comms[i].r != NULL;
	put(b,
	    "{\n  \"nccl_version\": \"%s\",\n  \"cuda_runtime_version\": 12080,\n"
	    "  \"cuda_driver_version\": 12080,\n  \"timestamp\": \"now\",\n"
	    "  \"communicators_count\": %d,\n  \"communicators\": [",
	    ver, n);
	for (int i = 0; i < COMMS_MAX; i++) {
		const struct mock_ras_rank *r = comms[i].r;
		int nr = comms[i].nranks, answered = 0, c;

		if (!r)
			continue;
		for (int j = 0; j < nr; j++)
			answered += now - __atomic_load_n(&r[j].hb_ns, __ATOMIC_ACQUIRE) <
				    (uint64_t)(2e9 * factor);
		put(b,
		    "%s\n    {\n      \"hash\": \"0x%llx\",\n      \"secondary_hash\": \"0x%llx\",\n"
		    "      \"size\": %d,\n      \"ranks_count\": %d,\n"
		    "      \"missing_ranks_count\": %d,\n      \"ranks\": [",
		    first ? "" : ",", (unsigned long long)comms[i].hash,
		    (unsigned long long)comms[i].hash ^ 0x5a5a, nr, answered, nr - answered);
		first = 0;
		c = 0;
		for (int j = 0; j < nr; j++) {
			if (now - r[j].hb_ns >= (uint64_t)(2e9 * factor))
				continue;
			put(b,
			    "%s\n        {\"rank\": %d, \"host\": \"127.0.0.1\", \"pid\": %d, "
			    "\"cuda_dev\": %d, \"nvml_dev\": %d,\n         \"status\": "
			    "{\"init_state\": 0, \"async_error\": 0, \"finalize_called\": false, "
			    "\"destroy_flag\": false, \"abort_flag\": false},\n"
			    "         \"collective_counts\": {",
			    c++ ? "," : "", j, r[j].pid, j, j);
			for (int k = 1; k <= 5; k++)
				put(b, "%s\"%s\": %llu", k > 1 ? ", " : "", fn[k],
				    (unsigned long long)__atomic_load_n(&r[j].launched[k],
									__ATOMIC_RELAXED));
			put(b, "}}");
		}
		put(b, "\n      ],\n      \"missing_ranks\": [");
		c = 0;
		for (int j = 0; j < nr; j++) {
			uint64_t age = now - r[j].hb_ns;
			int gone = r[j].pid > 0 && kill(r[j].pid, 0) < 0 && errno == ESRCH;

			if (age < (uint64_t)(2e9 * factor))
				continue;
			put(b,
			    "%s\n        {\"rank\": %d, \"host\": \"127.0.0.1\", \"pid\": %d, "
			    "\"cuda_dev\": %d, \"nvml_dev\": %d%s\n         \"status\": "
			    "{\"unresponsive\": true, \"considered_dead\": %s}}",
			    c++ ? "," : "", j, r[j].pid, j, j, version_without_comma(ver) ? "" : ",",
			    gone || age > (uint64_t)(60e9 * factor) ? "true" : "false");
		}
		put(b, "\n      ]\n    }");
	}
	pthread_mutex_unlock(&mu);
	put(b, "\n  ],\n  \"ras\": {\"collection_time_sec\": 0.001, \"timeouts_count\": 0}\n}\n");
}

static void send_all(int fd, const char *s, size_t n)
{
	while (n) {
		ssize_t w = send(fd, s, n, MSG_NOSIGNAL);

		if (w <= 0)
			return;
		s += w;
		n -= (size_t)w;
	}
}

/* One client, as NCCL's RAS thread serves it. */
static void serve(int fd)
{
	char line[256];
	size_t n = 0;
	int json = 0;

	for (;;) {
		struct pollfd p = {fd, POLLIN, 0};
		ssize_t r;

		if (poll(&p, 1, 5000) <= 0)
			return;
		r = recv(fd, line + n, 1, 0);
		if (r <= 0)
			return;
		if (line[n] != '\n' && n + 2 < sizeof(line)) {
			n++;
			continue;
		}
		line[n] = '\0';
		n = 0;
		if (!strncasecmp(line, "CLIENT PROTOCOL", 15)) {
			send_all(fd, "SERVER PROTOCOL 2\n", 18);
		} else if (!strncasecmp(line, "TIMEOUT", 7)) {
			send_all(fd, "OK\n", 3);
		} else if (!strncasecmp(line, "SET FORMAT JSON", 15)) {
			const char *t = getenv("FTBPF_MOCK_RAS_TEXT");

			if (t && *t == '1') {
				const char *e = "ERROR: Unknown command SET\n";

				send_all(fd, e, strlen(e));
			} else {
				json = 1;
				send_all(fd, "OK\n", 3);
			}
		} else if (!strncasecmp(line, "STATUS", 6)) {
			struct buf b = {0};

			if (json)
				report(&b);
			else
				put(&b, "NCCL version 2.23.4\nJob summary\n===========\n(text)\n");
			send_all(fd, b.p, b.n);
			free(b.p);
			return;
		} else {
			send_all(fd, "ERROR: Unknown command\n", 23);
		}
	}
}

static void *ras_thread(void *arg)
{
	(void)arg;
	for (;;) {
		struct pollfd p = {lfd, POLLIN, 0};
		uint64_t now = now_ns();

		pthread_mutex_lock(&mu);
		for (int i = 0; i < COMMS_MAX; i++)
			if (comms[i].r)
				__atomic_store_n(&comms[i].r[comms[i].rank].hb_ns, now,
						 __ATOMIC_RELEASE);
		pthread_mutex_unlock(&mu);
		if (lfd < 0) {
			struct timespec ts = {0, 200000000};

			nanosleep(&ts, NULL);
		} else if (poll(&p, 1, 200) == 1) {
			int fd = accept(lfd, NULL, NULL);

			if (fd >= 0) {
				serve(fd);
				close(fd);
			}
		}
	}
	return NULL;
}

static void start(void)
{
	const char *en = getenv("NCCL_RAS_ENABLE"), *addr = getenv("NCCL_RAS_ADDR");
	struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *res = NULL;
	char host[128] = "localhost", port[16] = "28028";
	const char *colon;
	pthread_t th;
	int one = 1;

	if (en && atoi(en) == 0)
		goto beat; /* not listening; its heartbeat still goes (the others see it) */
	if (addr && *addr) {
		colon = strrchr(addr, ':');
		snprintf(host, sizeof(host), "%.*s", (int)(colon ? colon - addr : (long)strlen(addr)),
			 addr);
		if (colon)
			snprintf(port, sizeof(port), "%s", colon + 1);
	}
	if (getaddrinfo(host, port, &hints, &res) != 0)
		goto beat;
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    setsockopt(lfd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) < 0 ||
	    bind(lfd, res->ai_addr, res->ai_addrlen) < 0 || listen(lfd, 16) < 0) {
		fprintf(stderr, "mock NCCL: RAS: cannot listen on %s:%s: %s\n", host, port,
			strerror(errno));
		if (lfd >= 0)
			close(lfd);
		lfd = -1;
		freeaddrinfo(res);
		goto beat;
	}
	freeaddrinfo(res);
beat:
	if (pthread_create(&th, NULL, ras_thread, NULL) == 0)
		pthread_detach(th);
}

void mock_ras_add(uint64_t hash, int nranks, int rank, struct mock_ras_rank *ranks)
{
	pthread_mutex_lock(&mu);
	ranks[rank].pid = getpid();
	__atomic_store_n(&ranks[rank].hb_ns, now_ns(), __ATOMIC_RELEASE);
	for (int i = 0; i < COMMS_MAX; i++)
		if (!comms[i].r) {
			comms[i].hash = hash;
			comms[i].nranks = nranks;
			comms[i].rank = rank;
			comms[i].r = ranks;
			break;
		}
	pthread_mutex_unlock(&mu);
	pthread_once(&once, start);
}

void mock_ras_remove(struct mock_ras_rank *ranks)
{
	pthread_mutex_lock(&mu);
	for (int i = 0; i < COMMS_MAX; i++)
		if (comms[i].r == ranks)
			comms[i].r = NULL;
	pthread_mutex_unlock(&mu);
}
