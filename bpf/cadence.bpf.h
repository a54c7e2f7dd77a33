// SPDX-License-Identifier: GPL-2.0
/*
 * Part of tracker.bpf.c (one BPF object; included there): the step cadence of a rank's main
 * thread (struct ftbpf_cad in abi.h). Only the main thread of a tracked process pays, and only
 * at syscalls whose sysclass carries a cadence bit (two clock reads); a span's end costs one
 * lookup in `cadence`, which holds ranks only (the agent adds them).
 */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct ftbpf_cad);
	__uint(max_entries, 4096);
} cadence SEC(".maps");

static __always_inline void cad_close(__u32 tgid, __u64 start, __u64 end)
{
	struct ftbpf_cad *c = bpf_map_lookup_elem(&cadence, &tgid);
	struct ftbpf_cad_span *r;

	if (!c || end < start)
		return;
	r = &c->ring[c->spans & (FTBPF_CAD_RING - 1)];
	r->start_ns = start;
	r->end_ns = end;
	c->wait_ns += end - start;
	c->spans++;
}

/* The main thread waited on its peers (or its device) from start to end. */
static __always_inline void cad_wait(struct ftbpf_thread *t, __u32 tgid, __u64 start, __u64 end)
{
	if (t->cad_start_ns && start <= t->cad_last_ns + FTBPF_CAD_GAP_NS) {
		if (end > t->cad_last_ns)
			t->cad_last_ns = end;
		return;
	}
	if (t->cad_start_ns)
		cad_close(tgid, t->cad_start_ns, t->cad_last_ns);
	t->cad_start_ns = start;
	t->cad_last_ns = end;
}

/* An own span (FTBPF_OWN_*) of the main thread: merged into the open one of its kind when
 * closer than FTBPF_CAD_GAP_NS, else the open one goes into the ring. */
static __always_inline void cad_own_rec(struct ftbpf_cad *c, __u32 kind, __u64 start, __u64 end)
{
	if (end < start)
		return;
	if (c->own_start_ns && c->own_kind == kind && start <= c->own_last_ns + FTBPF_CAD_GAP_NS) {
		if (end > c->own_last_ns)
			c->own_last_ns = end;
		return;
	}
	/* a span under 1 ms does not explain a late arrival: not kept (an MPI job of 1,000
	 * steps a second would overrun the ring between two scans) */
	if (c->own_start_ns && c->own_last_ns - c->own_start_ns >= FTBPF_CAD_GAP_NS) {
		struct ftbpf_cad_own *o = &c->own[c->nown & (FTBPF_CAD_OWN_RING - 1)];
		__u64 len = (c->own_last_ns - c->own_start_ns) / 1000;

		o->start_ns = c->own_start_ns;
		o->len_us = len > 0xffffffffull ? 0xffffffffu : (__u32)len;
		o->kind = c->own_kind;
		c->nown++;
	}
	c->own_start_ns = start;
	c->own_last_ns = end;
	c->own_kind = kind;
}

static __always_inline void cad_own(__u32 tgid, __u32 kind, __u64 start, __u64 end)
{
	struct ftbpf_cad *c = bpf_map_lookup_elem(&cadence, &tgid);

	if (c)
		cad_own_rec(c, kind, start, end);
}

static __always_inline void cad_read(__u32 tgid, __u64 start, __u64 end)
{
	struct ftbpf_cad *c;

	if (end < start + FTBPF_CAD_READ_MIN_NS)
		return;
	c = bpf_map_lookup_elem(&cadence, &tgid);
	if (!c)
		return;
	c->read_ns += end - start;
	c->reads++;
	cad_own_rec(c, FTBPF_OWN_READ, start, end);
}

static __always_inline __u8 syscall_class(__s32 nr)
{
	__u32 k = (__u32)nr;
	__u8 *cls = bpf_map_lookup_elem(&sysclass, &k);

	return cls ? *cls : FTBPF_SC_PROGRESS;
}

/* A read of a socket is a wait on a peer (gloo, MPI over TCP, the C test ranks); of a file or a
 * pipe, the rank's input (a data loader's worker writes into a pipe). */
static __always_inline int fd_is_socket(struct pt_regs *regs)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	unsigned int fd = (unsigned int)PT_REGS_PARM1_CORE_SYSCALL(regs);
	struct fdtable *fdt = BPF_CORE_READ(task, files, fdt);
	struct file **fds, *file = NULL;

	if (!fdt || fd >= BPF_CORE_READ(fdt, max_fds))
		return 0;
	fds = BPF_CORE_READ(fdt, fd);
	if (bpf_probe_read_kernel(&file, sizeof(file), &fds[fd]) || !file)
		return 0;
	return (BPF_CORE_READ(file, f_inode, i_mode) & 0170000) == 0140000; /* S_IFSOCK */
}

/* sys_enter of the main thread: a cadence-classed syscall gets a precise entry time. */
static __always_inline void cad_enter(struct ftbpf_thread *t, struct pt_regs *regs, long id)
{
	__u8 c = syscall_class((__s32)id) & (FTBPF_SC_CAD_WAIT | FTBPF_SC_CAD_READ);

	if (c == FTBPF_SC_CAD_READ && fd_is_socket(regs))
		c = FTBPF_SC_CAD_WAIT;
	t->cad_cls = c;
	t->cad_enter_ns = c ? bpf_ktime_get_ns() : 0;
}

/* sys_exit of the main thread: inside a probed call, the call's span covers it. */
static __always_inline void cad_exit(struct ftbpf_thread *t, __u32 tgid)
{
	__u64 start = t->cad_enter_ns, now;

	if (!start)
		return;
	t->cad_enter_ns = 0;
	if (t->api)
		return;
	now = bpf_ktime_get_ns();
	if (t->cad_cls & FTBPF_SC_CAD_WAIT)
		cad_wait(t, tgid, start, now);
	else if (t->cad_cls & FTBPF_SC_CAD_READ)
		cad_read(tgid, start, now);
}
