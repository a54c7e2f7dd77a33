/*
 * Maps files the way a hostile rank does, for the adversarial tests (run as `nobody`):
 *   mapper [--exec] [--delay SECS] [--count N] FILE...
 * maps each FILE N times (default 1; PROT_READ, with --exec PROT_EXEC too; MAP_PRIVATE, the
 * whole file from offset 0) after --delay seconds, closes the descriptors, prints "mapped" and
 * then sleeps (a rank that makes no progress), until killed. Exit 2 on bad usage, 1 when a
 * file cannot be mapped.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int prot = PROT_READ, count = 1, i = 1;
	double delay = 0;

	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--exec"))
			prot |= PROT_EXEC;
		else if (!strcmp(argv[i], "--delay") && i + 1 < argc)
			delay = atof(argv[++i]);
		else if (!strcmp(argv[i], "--count") && i + 1 < argc)
			count = atoi(argv[++i]);
		else
			return 2;
	}
	if (i >= argc || count < 1)
		return 2;
	if (delay > 0) {
		struct timespec ts = {(time_t)delay, (long)((delay - (time_t)delay) * 1e9)};

		nanosleep(&ts, NULL);
	}
	for (; i < argc; i++) {
		int fd = open(argv[i], O_RDONLY | O_CLOEXEC);
		struct stat st;

		if (fd < 0 || fstat(fd, &st) < 0 || !st.st_size) {
			perror(argv[i]);
			return 1;
		}
		for (int k = 0; k < count; k++)
			if (mmap(NULL, (size_t)st.st_size, prot, MAP_PRIVATE, fd, 0) ==
			    MAP_FAILED) {
				perror("mmap");
				return 1;
			}
		close(fd);
	}
	printf("mapped\n");
	fflush(stdout);
	for (;;)
		sleep(3600);
}
