/*
 * A debugger that stops a process and keeps it stopped, for ftbpf-ci's tests:
 *   tracestop PID SECONDS
 * PTRACE_SEIZE + PTRACE_INTERRUPT (the process is in a ptrace stop, state 't', as under gdb at
 * a breakpoint), SECONDS later PTRACE_DETACH (it runs on). Exit 1 when it cannot trace.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	pid_t pid;
	int st;

	if (argc != 3)
		return 2;
	pid = atoi(argv[1]);
	if (ptrace(PTRACE_SEIZE, pid, 0, 0) < 0 || ptrace(PTRACE_INTERRUPT, pid, 0, 0) < 0 ||
	    waitpid(pid, &st, __WALL) < 0) {
		perror("ptrace");
		return 1;
	}
	printf("stopped\n");
	fflush(stdout);
	sleep((unsigned)atoi(argv[2]));
	ptrace(PTRACE_DETACH, pid, 0, 0);
	return 0;
}
