/*
 * The heartbeat mesh inside ftbpfd: a UDP socket, the per-cluster key, a SWIM node
 * (proto/swim.c) driven by a 50 ms timerfd, and the cluster view (every peer's state and health
 * summary). Packets are checked by the one parser (proto/mesh_proto.c); what is dropped is
 * counted by reason and logged at debug level, rate-limited. Owns its fds and the SWIM node;
 * watches them in the agent's event loop.
 */
#ifndef FTBPF_MESH_H
#define FTBPF_MESH_H

#include <stddef.h>
#include <stdint.h>

#include "proto/mesh_proto.h"
#include "proto/swim.h"

struct json_object;
struct loop;
struct mesh;

struct mesh_opts {
	const char *bind;	/* "ADDR:PORT" */
	const char *peers;	/* "ADDR:PORT,..." */
	const char *peers_file; /* one ADDR:PORT per line, # comments */
	const char *key_file; /* the cluster key: any 16+ bytes, hashed to 32; not world-readable */
	struct swim_config swim;
	/* peer events (join, suspect, dead, alive, restarted, left, health) */
	void (*on_event)(void *ctx, const char *type, const struct swim_member *m);
	void *ctx;
	struct loop *loop; /* borrowed: where the socket and the tick are watched */
};

/* NULL on failure with a message in err. */
struct mesh *mesh_open(const struct mesh_opts *o, char *err, size_t errlen);
void mesh_close(struct mesh *m); /* sends LEAVE first */
/* Our health summary; spread only when it changed. */
void mesh_set_health(struct mesh *m, const struct mesh_health *h);
/* Job parts (proto/part_proto.h) arrive on the mesh's socket: fn gets each datagram that
 * says it is one, with the address it came from (agent/jobparts.c checks the rest). */
void mesh_set_part_handler(struct mesh *m,
			   void (*fn)(void *ctx, const uint8_t *buf, size_t len,
				      const struct mesh_addr *src),
			   void *ctx);
/* Send a datagram from the mesh's socket. 0 or -errno. */
int mesh_send_raw(struct mesh *m, const struct mesh_addr *to, const uint8_t *buf, size_t len);
/* The parts' key (derived from the cluster key). */
void mesh_part_key(const struct mesh *m, uint8_t key[MESH_KEY_BYTES]);
const struct swim *mesh_swim(const struct mesh *m);
const struct mesh_addr *mesh_self(const struct mesh *m);
/* {"self":..., "incarnation":N, "local_health":N, "peers":[...], "counters":{...}} (new object) */
struct json_object *mesh_json(const struct mesh *m);

#endif
