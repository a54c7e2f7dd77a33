/*
 * A chain of ranks over TCP, for the waits-for graph's tests: each step rank 0 sends a token to
 * rank 1 and waits for the answer, rank r passes it to rank r+1 and the answer back, and the
 * last rank asks a server outside the job (--serve). When the server stops answering
 * (--fault-after), every rank is blocked reading a socket: rank r on rank r+1's, the last on
 * the server's. The culprit is the last rank: the one the others wait on that waits on no rank.
 *
 *   sockchain --rank R --world N --port P --dir DIR [--listen IP] [--next IP] [--interval-ms MS]
 *       rank R listens on IP:P+R (127.0.0.1), connects to rank R+1 at NEXT:P+R+1 (the last
 *       rank: the server at NEXT:P+N)
 *   sockchain --serve --port P [--listen IP] [--fault-after SEC]
 *       the server, listening on IP:P; answers until SEC seconds after its first question
 *   --ftbpf: the rank registers with the agent (ftbpf_open), as a rank using the client library
 *       does, so that the agent's decisions follow its job (decide_xhost_hang.sh)
 * Writes DIR/pid.R.
 */
#include <arpa/inet.h>
#include <ftbpf/ftbpf.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int listen_on(const char *ip, int port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	inet_pton(AF_INET, ip, &sa.sin_addr);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 4) < 0) {
		perror("listen");
		exit(1);
	}
	return fd;
}

static int connect_to(const char *ip, int port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};

	inet_pton(AF_INET, ip, &sa.sin_addr);
	for (int i = 0; i < 600; i++) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
			return fd;
		}
		close(fd);
		usleep(100000);
	}
	fprintf(stderr, "cannot connect to %s:%d\n", ip, port);
	exit(1);
}

static void xfer(int fd, char *b, int out)
{
	ssize_t n = out ? write(fd, b, 8) : read(fd, b, 8);

	if (n != 8) {
		fprintf(stderr, "peer gone\n");
		exit(1);
	}
}

int main(int argc, char **argv)
{
	const char *listen_ip = "127.0.0.1", *next = "127.0.0.1", *dir = ".";
	int rank = 0, world = 2, port = 0, serve = 0, interval_ms = 20, lib = 0;
	struct ftbpf *h = NULL;
	double fault_after = -1;
	char tok[8] = "token!!";

	for (int i = 1; i < argc; i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : "";

		if (!strcmp(argv[i], "--serve"))
			serve = 1;
		else if (!strcmp(argv[i], "--ftbpf"))
			lib = 1;
		else if (!strcmp(argv[i], "--rank") && ++i)
			rank = atoi(v);
		else if (!strcmp(argv[i], "--world") && ++i)
			world = atoi(v);
		else if (!strcmp(argv[i], "--port") && ++i)
			port = atoi(v);
		else if (!strcmp(argv[i], "--dir") && ++i)
			dir = v;
		else if (!strcmp(argv[i], "--listen") && ++i)
			listen_ip = v;
		else if (!strcmp(argv[i], "--next") && ++i)
			next = v;
		else if (!strcmp(argv[i], "--fault-after") && ++i)
			fault_after = atof(v);
		else if (!strcmp(argv[i], "--interval-ms") && ++i)
			interval_ms = atoi(v);
	}
	if (!port)
		return 2;
	if (serve) {
		int l = listen_on(listen_ip, port), c = accept(l, NULL, NULL);
		double start = 0;

		for (;;) {
			xfer(c, tok, 0);
			if (!start)
				start = now_s();
			if (fault_after >= 0 && now_s() - start >= fault_after)
				for (;;)
					pause(); /* holds the socket, answers nothing */
			xfer(c, tok, 1);
		}
	}
	{
		char path[512];
		FILE *f;
		int l = listen_on(listen_ip, port + rank), prev = -1, nxt;

		if (lib && ftbpf_open(NULL, NULL, rank, &h) < 0) {
			fprintf(stderr, "rank %d: no agent to register with\n", rank);
			return 1;
		}
		snprintf(path, sizeof(path), "%s/pid.%d", dir, rank);
		if ((f = fopen(path, "w"))) {
			fprintf(f, "%d\n", getpid());
			fclose(f);
		}
		nxt = connect_to(next, port + rank + 1);
		if (rank > 0)
			prev = accept(l, NULL, NULL);
		for (;;) {
			if (rank > 0)
				xfer(prev, tok, 0);
			xfer(nxt, tok, 1);
			xfer(nxt, tok, 0);
			if (rank > 0)
				xfer(prev, tok, 1);
			else
				usleep((useconds_t)interval_ms * 1000);
		}
	}
	(void)world;
	ftbpf_close(h);
	return 0;
}
