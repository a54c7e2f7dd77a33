// SPDX-License-Identifier: GPL-2.0
/*
 * The benchmark floor: empty programs on the same syscall tracepoints the tracker uses.
 * What they cost is what any syscall tracer must pay; ftbpfd is measured against it.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

SEC("tp_btf/sys_enter")
int BPF_PROG(btf_enter_empty)
{
	return 0;
}
SEC("tp_btf/sys_exit")
int BPF_PROG(btf_exit_empty)
{
	return 0;
}
SEC("raw_tp/sys_enter")
int BPF_PROG(raw_enter_empty)
{
	return 0;
}
SEC("raw_tp/sys_exit")
int BPF_PROG(raw_exit_empty)
{
	return 0;
}
