/*
 * The benchmark floor: attaches empty programs to raw_syscalls sys_enter/sys_exit with the
 * same program type the tracker would choose (tp_btf or raw_tp, by the same probe), then
 * waits for SIGTERM/SIGINT. Prints "ready <type>" once attached.
 */
#include <bpf/libbpf.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "floor.skel.h"
#include "watch/tracker.h"

static volatile sig_atomic_t stop;

static void on_sig(int s)
{
	(void)s;
	stop = 1;
}

int main(void)
{
	struct floor_bpf *skel;
	struct bpf_program *p;
	int btf = tracker_probe_tp_btf(), err;

	skel = floor_bpf__open();
	if (!skel) {
		fprintf(stderr, "bench_floor: open failed\n");
		return 1;
	}
	bpf_object__for_each_program (p, skel->obj)
		bpf_program__set_autoload(p, btf ? !strncmp(bpf_program__name(p), "btf_", 4)
						 : !strncmp(bpf_program__name(p), "raw_", 4));
	err = floor_bpf__load(skel);
	if (!err)
		err = floor_bpf__attach(skel);
	if (err) {
		fprintf(stderr, "bench_floor: load/attach: %s\n", strerror(-err));
		floor_bpf__destroy(skel);
		return 1;
	}
	signal(SIGTERM, on_sig);
	signal(SIGINT, on_sig);
	printf("ready %s\n", btf ? "tp_btf" : "raw_tp");
	fflush(stdout);
	while (!stop)
		pause();
	floor_bpf__destroy(skel);
	return 0;
}
