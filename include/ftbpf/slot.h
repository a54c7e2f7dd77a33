/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * A process's slot: one page shared by the process (libftbpf), the agent and the BPF tracker,
 * holding its countdown timers and progress counters. Every registered process has a slot of
 * its own (a separate BPF map), so it can write only its own timers. Fixed-width types only.
 */
#ifndef FTBPF_SLOT_H
#define FTBPF_SLOT_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define FTBPF_SLOT_MAGIC     0x66746270u /* "ftbp" */
#define FTBPF_SLOT_VERSION   1u
#define FTBPF_SLOT_TIMERS    16
#define FTBPF_SLOT_SCOPE_LEN 40

/* ftbpf_slot_timer.state */
#define FTBPF_TS_FREE  0u
#define FTBPF_TS_ARMED 1u
#define FTBPF_TS_FIRED 2u /* expired and acted on (by the kernel or the agent) */
#define FTBPF_TS_BUSY  3u /* being written by its owner */

struct ftbpf_slot_timer {
	__u64 deadline_ns; /* CLOCK_MONOTONIC */
	__u64 state;	   /* FTBPF_TS_*; 64-bit for compare-and-swap on every BPF ISA */
	__u32 sig;
	__u32 pad;
	char scope[FTBPF_SLOT_SCOPE_LEN];
};

struct ftbpf_slot {
	__u32 magic;
	__u32 version;
	__u64 earliest_ns; /* earliest armed deadline, 0 none: the one value the kernel checks */
	__u64 progress;	   /* ftbpf_ping() count */
	__u64 ping_ns;
	__u64 step;
	__u64 step_ns;
	__u64 fired; /* timers fired by the kernel at syscall entry */
	__u64 pad;
	struct ftbpf_slot_timer timers[FTBPF_SLOT_TIMERS];
};

#endif
