/*
 * mesh_send: sends hostile packets to a mesh agent, for the tests.
 *   mesh_send KEYFILE TARGET garbage        random bytes
 *   mesh_send KEYFILE TARGET forged FROM    a well-formed PING from FROM under another key
 *   mesh_send KEYFILE TARGET replay FROM    a PING from FROM with the right key but the boot id
 *                                           of an earlier life (boot 1): a replay
 *   mesh_send KEYFILE TARGET oversized      more than the largest packet
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mesh_proto.h"

int main(int argc, char **argv)
{
	uint8_t key[MESH_KEY_BYTES], buf[4096];
	struct mesh_packet p = {.type = MESH_PING, .seq = 1, .probe = 1, .boot = 1};
	struct mesh_addr to;
	struct sockaddr_in sa = {.sin_family = AF_INET};
	char err[256];
	int len = 0, fd;

	if (argc < 4 || mesh_load_key(argv[1], key, err, sizeof(err)) < 0 ||
	    mesh_parse_addr(argv[2], &to) < 0) {
		fprintf(stderr,
			"usage: mesh_send KEYFILE TARGET garbage|forged|replay|oversized [FROM]\n");
		return 2;
	}
	if (argc > 4 && mesh_parse_addr(argv[4], &p.from) < 0)
		return 2;
	if (!strcmp(argv[3], "garbage")) {
		len = 200;
		if (getrandom(buf, (size_t)len, 0) != len)
			return 1;
	} else if (!strcmp(argv[3], "oversized")) {
		len = MESH_MAX_PACKET + 100;
		memset(buf, 'F', (size_t)len);
	} else if (!strcmp(argv[3], "forged")) {
		key[0] ^= 1;
		len = mesh_encode(&p, key, buf, sizeof(buf));
	} else if (!strcmp(argv[3], "replay")) {
		len = mesh_encode(&p, key, buf, sizeof(buf));
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
