/*
 * part_send: sends hostile job parts (proto/part_proto.h) to an agent, for the tests.
 *   part_send KEYFILE TARGET MODE FROM JOB WORLD RANK
 *   garbage  "FP" and random bytes
 *   forged   a part claiming RANK under another key
 *   replay   a valid part (claiming RANK), sent twice: the second is a replay
 *   claim    a valid part from FROM claiming RANK of JOB, stopped: what a peer that reports
 *            ranks it does not own says
 *   range    a valid part claiming a rank beyond the world size
 *   seq      a valid part with an impossible NCCL sequence number
 *   cadclaim a valid cadence part from FROM: RANK of JOB computes 99% of the time (a lying peer:
 *            a straggler if believed)
 *   cadrange a valid cadence part for a rank beyond the world size
 *   progress a valid part from FROM: RANK of JOB runs and progressed a moment ago (a lying peer
 *            that would keep a stall others wait on from being flagged)
 * Valid parts are made with the cluster key: what a peer holding it could send. The datagram
 * leaves from FROM when this host has that address (else from any port: a sender that names
 * another). With PART_SEND_NODE_KEY=FILE (64 hex digits: a node's seed) parts are signed by
 * that node (node keys); with PART_SEND_EVERY_MS=N and PART_SEND_FOR_S=S, sent again (a new
 * sequence number) every N ms for S seconds.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "os/conffile.h"
#include "lib/nodekeys.h"
#include "proto/part_proto.h"

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int main(int argc, char **argv)
{
	uint8_t mk[MESH_KEY_BYTES], key[MESH_KEY_BYTES], buf[PART_MAX_PACKET];
	struct part_packet p = {.seq = 1, .ttl_ms = 3000, .text_rank = -1};
	struct jv_rank *r;
	struct sockaddr_in sa = {.sin_family = AF_INET};
	char err[256];
	const char *mode, *nk = getenv("PART_SEND_NODE_KEY"), *every = getenv("PART_SEND_EVERY_MS"),
			  *dur = getenv("PART_SEND_FOR_S");
	uint8_t pk[32], sk[64], seed[32];
	int len, fd, sends = 1, sign = 0;

	if (argc < 8 || conffile_mesh_key(argv[1], mk, err, sizeof(err)) < 0 ||
	    meshaddr_parse(argv[2], &p.to) < 0 || meshaddr_parse(argv[4], &p.from) < 0) {
		fprintf(stderr, "usage: part_send KEYFILE TARGET garbage|forged|replay|claim|range|"
				"seq|cadclaim|cadrange FROM JOB WORLD RANK\n");
		return 2;
	}
	mode = argv[3];
	part_derive_key(mk, key);
	p.boot = now_ms() << 8;
	p.seq = (uint64_t)now_ms();
	p.sent_ms = now_ms();
	snprintf(p.part.job, sizeof(p.part.job), "%s", argv[5]);
	p.part.world_size = atoi(argv[6]);
	p.part.nchunks = 1;
	p.part.nranks = 1;
	r = &p.part.ranks[0];
	r->rank = atoi(argv[7]);
	r->pid = 4242;
	r->state = RS_STOPPED;
	r->flags = JV_R_CULPRIT;
	r->syscall = -1;
	r->score = 95;
	r->progress_age_ms = 60000;
	r->state_age_ms = 60000;
	if (!strcmp(mode, "range")) {
		r->rank = p.part.world_size + 3;
	} else if (!strcmp(mode, "seq")) {
		r->flags |= JV_R_COMM;
		r->comm_id = 1;
		r->comm_seq = 1ull << 50;
	} else if (!strcmp(mode, "forged")) {
		if (getrandom(key, sizeof(key), 0) != sizeof(key))
			return 1;
	} else if (!strcmp(mode, "cadclaim") || !strcmp(mode, "cadrange")) {
		p.flags = PART_F_CAD;
		p.part.nranks = 0;
		p.part.ncad = 1;
		p.part.cad[0] = (struct cad_summary){.rank = mode[3] == 'r' ? p.part.world_size + 3
									    : atoi(argv[7]),
						     .flags = CAD_SUM_VALID,
						     .own_ppm = 990000,
						     .wait_ppm = 10000,
						     .step_us = 100000,
						     .window_ms = 10000};
		p.ttl_ms = 30000;
	} else if (!strcmp(mode, "replay")) {
		sends = 2;
	} else if (!strcmp(mode, "progress")) {
		r->state = RS_RUNNING;
		r->flags = 0;
		r->score = 1;
		r->progress_age_ms = 0;
		r->state_age_ms = 0;
		p.part.addrs[p.part.naddrs++] = p.from.ip;
	} else if (strcmp(mode, "claim") && strcmp(mode, "garbage")) {
		fprintf(stderr, "part_send: unknown mode %s\n", mode);
		return 2;
	}
	if (nk) {
		FILE *f = fopen(nk, "r");
		char hex[80] = "";

		if (!f || !fgets(hex, sizeof(hex), f) || nodekeys_hex(hex, 64, seed) < 0) {
			fprintf(stderr, "part_send: %s: not a node key\n", nk);
			return 2;
		}
		fclose(f);
		crypto_sign_seed_keypair(pk, sk, seed);
		sign = 1;
	}
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	{ /* from FROM itself where this host has it */
		struct sockaddr_in me = {.sin_family = AF_INET,
					 .sin_addr.s_addr = htonl(p.from.ip),
					 .sin_port = htons(p.from.port)};

		int one = 1;

		/* several senders at one address (a liar sending to each host) */
		setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
		if (bind(fd, (struct sockaddr *)&me, sizeof(me)) < 0)
			fprintf(stderr, "part_send: not from %s (%m): from another address\n",
				argv[4]);
	}
	sa.sin_addr.s_addr = htonl(p.to.ip);
	sa.sin_port = htons(p.to.port);
	for (double end = every && dur ? (double)now_ms() + atof(dur) * 1000 : 0;;) {
		p.sent_ms = now_ms();
		len = part_encode_signed(&p, key, sign ? sk : NULL, buf, sizeof(buf));
		if (len < 0)
			return 1;
		if (!strcmp(mode, "garbage")) {
			len = 300;
			if (getrandom(buf + 2, (size_t)len - 2, 0) != len - 2)
				return 1;
			buf[0] = 'F';
			buf[1] = 'P';
		}
		for (int i = 0; i < sends; i++)
			if (sendto(fd, buf, (size_t)len, 0, (struct sockaddr *)&sa, sizeof(sa)) !=
			    len) {
				perror("sendto");
				return 1;
			}
		if (!end || (double)now_ms() >= end)
			break;
		usleep((useconds_t)atoi(every) * 1000);
		p.seq++;
	}
	return 0;
}
