/*
 * mesh_send: sends hostile packets to a mesh agent, for the tests.
 *   mesh_send KEYFILE TARGET garbage        random bytes
 *   mesh_send KEYFILE TARGET forged FROM    a well-formed PING from FROM under another key
 *   mesh_send KEYFILE TARGET replay FROM    a PING from FROM with the right key but the boot id
 *                                           of an earlier life (boot 1): a replay
 *   mesh_send KEYFILE TARGET oversized      more than the largest packet
 *   mesh_send KEYFILE TARGET misdirected FROM OTHER
 *                                           a PING from FROM to OTHER (right key), sent to
 *                                           TARGET: what a capture of FROM->OTHER replayed to
 *                                           TARGET is
 *   mesh_send KEYFILE TARGET stale FROM     a PING from FROM to an earlier life of TARGET
 *                                           (its boot id 1): a capture replayed after a restart
 *   mesh_send KEYFILE TARGET old FROM       a first-contact PING from FROM sent 10 minutes ago
 * The packets are made with the key, as a capture would be: they are what an attacker without
 * the key can replay, nothing more.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "os/conffile.h"
#include "proto/mesh_proto.h"

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int main(int argc, char **argv)
{
	uint8_t key[MESH_KEY_BYTES], buf[4096];
	struct mesh_packet p = {.type = MESH_PING, .seq = 1, .probe = 1, .boot = 1};
	struct mesh_addr to;
	struct sockaddr_in sa = {.sin_family = AF_INET};
	char err[256];
	int len = 0, fd;

	if (argc < 4 || conffile_mesh_key(argv[1], key, err, sizeof(err)) < 0 ||
	    meshaddr_parse(argv[2], &to) < 0) {
		fprintf(stderr, "usage: mesh_send KEYFILE TARGET "
				"garbage|forged|replay|oversized|misdirected|stale|old "
				"[FROM [OTHER]]\n");
		return 2;
	}
	if (argc > 4 && meshaddr_parse(argv[4], &p.from) < 0)
		return 2;
	p.to = to; /* addressed to the target, as the sender names it */
	p.sent_ms = now_ms();
	if (!strcmp(argv[3], "garbage")) {
		len = 200;
		if (getrandom(buf, (size_t)len, 0) != len)
			return 1;
	} else if (!strcmp(argv[3], "oversized")) {
		len = MESH_MAX_PACKET + 100;
		memset(buf, 'F', (size_t)len);
	} else if (!strcmp(argv[3], "forged")) {
		key[0] ^= 1;
		len = mesh_proto_encode(&p, key, buf, sizeof(buf));
	} else if (!strcmp(argv[3], "replay")) {
		len = mesh_proto_encode(&p, key, buf, sizeof(buf));
	} else if (!strcmp(argv[3], "misdirected")) {
		if (argc < 6 || meshaddr_parse(argv[5], &p.to) < 0)
			return 2;
		p.boot = now_ms() << 8; /* a live sender's boot */
		len = mesh_proto_encode(&p, key, buf, sizeof(buf));
	} else if (!strcmp(argv[3], "stale")) {
		p.boot = now_ms() << 8;
		p.to_boot = 1;
		len = mesh_proto_encode(&p, key, buf, sizeof(buf));
	} else if (!strcmp(argv[3], "old")) {
		p.boot = now_ms() << 8;
		p.sent_ms -= 600000;
		len = mesh_proto_encode(&p, key, buf, sizeof(buf));
	}
	if (len <= 0)
		return 2;
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	sa.sin_addr.s_addr = htonl(to.ip);
	sa.sin_port = htons(to.port);
	if (sendto(fd, buf, (size_t)len, 0, (struct sockaddr *)&sa, sizeof(sa)) != len) {
		perror("sendto");
		return 1;
	}
	return 0;
}
