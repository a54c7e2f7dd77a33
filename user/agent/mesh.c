#include "agent/mesh.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <netinet/in.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "os/clock.h"
#include "os/conffile.h"
#include "os/log.h"
#include "os/loop.h"
#include "proto/part_proto.h"

#define TICK_MS	    50
#define MESH_SOCKET 0 /* our two descriptors in the event loop */
#define MESH_TICK   1

struct mesh_cnt {
	uint64_t rx, tx, tx_errors;
	uint64_t bad[9]; /* by -mesh_err: size, magic, version, mac, field, replay, dest, stale */
};

struct mesh {
	int fd, tfd;
	uint8_t key[MESH_KEY_BYTES];
	struct mesh_addr self;
	struct swim *swim; /* owned */
	struct mesh_health health;
	int have_health;
	struct mesh_cnt cnt;
	uint64_t log_window_ms; /* rate limit of drop messages */
	int logged;
	void (*on_event)(void *ctx, const char *type, const struct swim_member *m);
	void *ctx;
	void (*on_part)(void *ctx, const uint8_t *buf, size_t len, const struct mesh_addr *src);
	void *part_ctx;
};

static uint64_t now_ms(void)
{
	return clock_mono_ns() / 1000000;
}

static uint64_t wall_ms(void)
{
	return clock_real_ns() / 1000000;
}

static void sock_send(void *ctx, const struct mesh_addr *to, const struct mesh_packet *p)
{
	struct mesh *m = ctx;
	uint8_t buf[MESH_MAX_PACKET];
	struct sockaddr_in sa = {.sin_family = AF_INET};
	struct mesh_packet q = *p;
	int len;

	q.sent_ms = wall_ms();
	len = mesh_proto_encode(&q, m->key, buf, sizeof(buf));
	if (len < 0)
		return;
	sa.sin_addr.s_addr = htonl(to->ip);
	sa.sin_port = htons(to->port);
	if (sendto(m->fd, buf, (size_t)len, MSG_DONTWAIT, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		m->cnt.tx_errors++;
	else
		m->cnt.tx++;
}

static void swim_event_cb(void *ctx, enum swim_event ev, const struct swim_member *sm, uint64_t now)
{
	struct mesh *m = ctx;

	(void)now;
	if (m->on_event && sm)
		m->on_event(m->ctx, swim_event_name(ev), sm);
}

static uint32_t rand_cb(void *ctx)
{
	(void)ctx;
	return randombytes_random();
}

static int add_peers(struct mesh *m, const char *list, char *err, size_t errlen)
{
	char tmp[4096], *save, *tok;

	snprintf(tmp, sizeof(tmp), "%s", list);
	for (tok = strtok_r(tmp, ", \t\n", &save); tok; tok = strtok_r(NULL, ", \t\n", &save)) {
		struct mesh_addr a;

		if (tok[0] == '#')
			break;
		if (meshaddr_parse(tok, &a) < 0) {
			snprintf(err, errlen, "peer '%s' is not IPv4ADDR:PORT", tok);
			return -1;
		}
		swim_add_peer(m->swim, &a, now_ms());
	}
	return 0;
}

static int add_peers_file(struct mesh *m, const char *path, char *err, size_t errlen)
{
	char line[512];
	int lineno = 0;
	FILE *f = fopen(path, "re");

	if (!f) {
		snprintf(err, errlen, "peers file %s: %s", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		char e[256];

		lineno++;
		if (add_peers(m, line, e, sizeof(e)) < 0) {
			snprintf(err, errlen, "%s:%d: %s", path, lineno, e);
			fclose(f);
			return -1;
		}
	}
	fclose(f);
	return 0;
}

static void on_loop(void *ctx, uint32_t what, uint32_t events);

struct mesh *mesh_open(const struct mesh_opts *o, char *err, size_t errlen)
{
	struct mesh *m = calloc(1, sizeof(*m));
	struct sockaddr_in sa = {.sin_family = AF_INET};
	struct itimerspec its = {{0, TICK_MS * 1000000L}, {0, TICK_MS * 1000000L}};
	struct swim_io io = {.send = sock_send, .event = swim_event_cb, .rand = rand_cb};
	uint64_t boot;
	int h, r;

	if (!m) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	m->fd = m->tfd = -1;
	m->on_event = o->on_event;
	m->ctx = o->ctx;
	if (sodium_init() < 0) {
		snprintf(err, errlen, "libsodium init failed");
		goto fail;
	}
	if (meshaddr_parse(o->bind, &m->self) < 0) {
		snprintf(err, errlen, "bind '%s' is not IPv4ADDR:PORT", o->bind);
		goto fail;
	}
	if (!o->key_file || !*o->key_file) {
		snprintf(err, errlen,
			 "the mesh needs a key file (--key-file): packets are authenticated");
		goto fail;
	}
	if (conffile_mesh_key(o->key_file, m->key, err, errlen) < 0)
		goto fail;
	m->fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	sa.sin_addr.s_addr = htonl(m->self.ip);
	sa.sin_port = htons(m->self.port);
	if (m->fd < 0 || bind(m->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		snprintf(err, errlen, "bind %s: %s", o->bind, strerror(errno));
		goto fail;
	}
	m->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (m->tfd < 0 || timerfd_settime(m->tfd, 0, &its, NULL) < 0) {
		snprintf(err, errlen, "timerfd: %s", strerror(errno));
		goto fail;
	}
	/* boot id: wall-clock ms at start (ordered across restarts), low bits random */
	boot = wall_ms() << 8 | (randombytes_random() & 0xff);
	io.ctx = m;
	m->swim = swim_new(&o->swim, &m->self, boot, &io);
	if (!m->swim) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	if ((o->peers && add_peers(m, o->peers, err, errlen) < 0) ||
	    (o->peers_file && *o->peers_file && add_peers_file(m, o->peers_file, err, errlen) < 0))
		goto fail;
	h = loop_handler(o->loop, on_loop, m, 0);
	r = h < 0 ? h : loop_add(o->loop, m->fd, EPOLLIN, h, MESH_SOCKET);
	if (r == 0)
		r = loop_add(o->loop, m->tfd, EPOLLIN, h, MESH_TICK);
	if (r < 0) {
		snprintf(err, errlen, "event loop: %s", strerror(-r));
		goto fail;
	}
	return m;
fail:
	sodium_memzero(m->key, sizeof(m->key));
	if (m->fd >= 0)
		close(m->fd);
	if (m->tfd >= 0)
		close(m->tfd);
	swim_free(m->swim);
	free(m);
	return NULL;
}

void mesh_close(struct mesh *m)
{
	if (!m)
		return;
	swim_leave(m->swim, now_ms());
	sodium_memzero(m->key, sizeof(m->key));
	close(m->fd);
	close(m->tfd);
	swim_free(m->swim);
	free(m);
}

static void on_readable(struct mesh *m)
{
	uint8_t buf[MESH_MAX_PACKET + 1];
	struct mesh_packet p;

	for (int i = 0; i < 256; i++) {
		struct sockaddr_in from;
		socklen_t fl = sizeof(from);
		ssize_t n = recvfrom(m->fd, buf, sizeof(buf), 0, (struct sockaddr *)&from, &fl);
		int r;

		if (n < 0)
			return;
		m->cnt.rx++;
		if (m->on_part && part_is_part(buf, (size_t)n)) {
			struct mesh_addr src = {ntohl(from.sin_addr.s_addr), ntohs(from.sin_port)};

			m->on_part(m->part_ctx, buf, (size_t)n, &src);
			continue;
		}
		r = mesh_proto_decode(buf, (size_t)n, m->key, &p);
		if (r == MESH_OK)
			r = mesh_proto_check_dest(&p, &m->self, swim_boot(m->swim), wall_ms());
		if (r == MESH_OK) {
			uint64_t before = swim_counters(m->swim)->replays;

			swim_receive(m->swim, &p, now_ms());
			if (swim_counters(m->swim)->replays != before)
				r = MESH_E_REPLAY;
		}
		if (r != MESH_OK) {
			uint64_t now = now_ms();

			m->cnt.bad[-r]++;
			if (now - m->log_window_ms > 10000) {
				m->log_window_ms = now;
				m->logged = 0;
			}
			if (m->logged++ < 10) /* at most 10 per 10 s */
				log_debug("mesh: dropped %zd bytes from %s:%u: %s", n,
					  inet_ntoa(from.sin_addr), ntohs(from.sin_port),
					  mesh_proto_err_name(r));
		}
	}
}

static void on_loop(void *ctx, uint32_t what, uint32_t events)
{
	struct mesh *m = ctx;
	uint64_t exp;

	(void)events;
	if (what == MESH_SOCKET)
		on_readable(m);
	else if (read(m->tfd, &exp, sizeof(exp)) > 0)
		swim_tick(m->swim, now_ms());
}

void mesh_set_health(struct mesh *m, const struct mesh_health *h)
{
	struct mesh_health a = *h, b = m->health;

	a.version = b.version = 0;
	if (m->have_health && !memcmp(&a, &b, sizeof(a)))
		return;
	m->have_health = 1;
	m->health = *h;
	swim_set_health(m->swim, h);
}

void mesh_set_part_handler(struct mesh *m,
			   void (*fn)(void *ctx, const uint8_t *buf, size_t len,
				      const struct mesh_addr *src),
			   void *ctx)
{
	m->on_part = fn;
	m->part_ctx = ctx;
}

int mesh_send_raw(struct mesh *m, const struct mesh_addr *to, const uint8_t *buf, size_t len)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};

	sa.sin_addr.s_addr = htonl(to->ip);
	sa.sin_port = htons(to->port);
	if (sendto(m->fd, buf, len, MSG_DONTWAIT, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		m->cnt.tx_errors++;
		return -errno;
	}
	m->cnt.tx++;
	return 0;
}

void mesh_part_key(const struct mesh *m, uint8_t key[MESH_KEY_BYTES])
{
	part_derive_key(m->key, key);
}

const struct swim *mesh_swim(const struct mesh *m)
{
	return m->swim;
}

const struct mesh_addr *mesh_self(const struct mesh *m)
{
	return &m->self;
}

static void health_json(struct json_object *o, const struct mesh_health *h)
{
	json_object_object_add(o, "jobs", json_object_new_int(h->jobs));
	json_object_object_add(o, "ranks", json_object_new_int(h->ranks));
	json_object_object_add(o, "running", json_object_new_int(h->running));
	json_object_object_add(o, "blocked", json_object_new_int(h->blocked));
	json_object_object_add(o, "hung", json_object_new_int(h->hung));
	json_object_object_add(o, "dead", json_object_new_int(h->dead));
	json_object_object_add(o, "culprit_rank",
			       h->culprit_rank >= 0 ? json_object_new_int(h->culprit_rank) : NULL);
}

struct json_object *mesh_json(const struct mesh *m)
{
	struct json_object *o = json_object_new_object(), *arr = json_object_new_array(),
			   *c = json_object_new_object(), *self = json_object_new_object();
	static const char *bad[] = {"",	       "bad_size",  "bad_magic", "bad_version",
				    "bad_mac", "bad_field", "replayed",	 "misdirected",
				    "stale"};
	uint64_t now = now_ms();
	char a[32];

	meshaddr_format(&m->self, a, sizeof(a));
	json_object_object_add(o, "self", json_object_new_string(a));
	json_object_object_add(o, "incarnation", json_object_new_int64(swim_incarnation(m->swim)));
	json_object_object_add(o, "local_health", json_object_new_int(swim_local_health(m->swim)));
	health_json(self, &m->health);
	json_object_object_add(o, "health", self);
	for (int i = 0; i < swim_count(m->swim); i++) {
		const struct swim_member *sm = swim_member_at(m->swim, i);
		struct json_object *p = json_object_new_object(), *h;

		meshaddr_format(&sm->addr, a, sizeof(a));
		json_object_object_add(p, "addr", json_object_new_string(a));
		json_object_object_add(p, "state",
				       json_object_new_string(swim_state_name(sm->state)));
		json_object_object_add(p, "incarnation", json_object_new_int64(sm->incarnation));
		json_object_object_add(p, "boot", json_object_new_int64((int64_t)sm->boot));
		json_object_object_add(
		    p, "state_for_s",
		    json_object_new_double((double)(now - sm->since_ms) / 1000.0));
		if (sm->health) {
			h = json_object_new_object();
			health_json(h, sm->health);
			json_object_object_add(p, "health", h);
		} else {
			json_object_object_add(p, "health", NULL);
		}
		json_object_array_add(arr, p);
	}
	json_object_object_add(o, "peers", arr);
	json_object_object_add(c, "rx", json_object_new_int64((int64_t)m->cnt.rx));
	json_object_object_add(c, "tx", json_object_new_int64((int64_t)m->cnt.tx));
	json_object_object_add(c, "tx_errors", json_object_new_int64((int64_t)m->cnt.tx_errors));
	for (int i = 1; i <= 8; i++)
		json_object_object_add(c, bad[i], json_object_new_int64((int64_t)m->cnt.bad[i]));
	{
		const struct swim_counters *sc = swim_counters(m->swim);

		json_object_object_add(c, "probes", json_object_new_int64((int64_t)sc->probes));
		json_object_object_add(c, "indirect_probes",
				       json_object_new_int64((int64_t)sc->indirect));
		json_object_object_add(c, "suspicions",
				       json_object_new_int64((int64_t)sc->suspected));
		json_object_object_add(c, "refutations",
				       json_object_new_int64((int64_t)sc->refuted));
	}
	json_object_object_add(o, "counters", c);
	return o;
}
