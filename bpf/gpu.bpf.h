// SPDX-License-Identifier: GPL-2.0
/*
 * Part of tracker.bpf.c (one BPF object; included there, after the syscall programs): the
 * CUDA driver and NCCL uprobes. The call in flight on a thread is identified by its stack
 * pointer at entry, so that a return the kernel never showed us (a return probe attached after
 * the call began, links dropped by an agent that stopped, a longjmp over the call) cannot leave
 * the thread "inside" it forever: a later call at the same level or above, or a syscall made
 * above its frame, ends it and counts FTBPF_STAT_API_LOST_RET.
 */
/* ---- CUDA driver and NCCL entry points (uprobes; the cookie says which, see tracker.h) ---- */

/* Integer argument n (1-based) of a probed function at its entry. */
static __always_inline __u64 arg_n(struct pt_regs *ctx, unsigned n)
{
#if defined(__TARGET_ARCH_x86)
	__u64 v = 0;

	switch (n) {
	case 1:
		return ctx->di;
	case 2:
		return ctx->si;
	case 3:
		return ctx->dx;
	case 4:
		return ctx->cx;
	case 5:
		return ctx->r8;
	case 6:
		return ctx->r9;
	case 7:
	case 8: /* on the stack, above the return address */
		bpf_probe_read_user(&v, sizeof(v), (void *)(ctx->sp + 8 * (n - 6)));
		return v;
	}
#elif defined(__TARGET_ARCH_arm64)
	if (n >= 1 && n <= 8)
		return ctx->regs[n - 1];
#endif
	return 0;
}

/* The ncclUniqueId passed by value to ncclCommInitRank*: 16 of its 128 bytes identify it. */
static __always_inline __u64 unique_id_at_entry(struct pt_regs *ctx)
{
	__u64 w[2] = {};

#if defined(__TARGET_ARCH_x86)
	/* a 128-byte struct is a memory argument: first stack slot */
	bpf_probe_read_user(w, sizeof(w), (void *)(ctx->sp + 8));
#elif defined(__TARGET_ARCH_arm64)
	/* passed as a pointer to a caller-made copy, in the third register */
	bpf_probe_read_user(w, sizeof(w), (void *)ctx->regs[2]);
#endif
	return (w[0] ^ (w[1] * 0x9E3779B97F4A7C15ull)) | 1;
}

static __always_inline int rank_at_entry(struct pt_regs *ctx)
{
#if defined(__TARGET_ARCH_arm64)
	return (int)arg_n(ctx, 4);
#else
	return (int)arg_n(ctx, 3); /* the unique id took no register */
#endif
}

static __always_inline void nccl_comm_call(struct pt_regs *ctx, struct ftbpf_thread *t, __u32 tgid,
					   __u32 api, __u64 cookie, __u64 now, int outermost)
{
	struct ftbpf_comm_key k = {.tgid = tgid};
	struct ftbpf_comm *c;
	__u64 seq = 0;

	k.comm = arg_n(ctx, (cookie >> 8) & 0xf);
	c = bpf_map_lookup_elem(&comms, &k);
	if (!c) {
		struct ftbpf_comm init = {.rank = -1, .flags = FTBPF_COMM_NO_ID};

		init.id = k.comm ^ ((__u64)tgid << 32);
		comm_put(&k, &init, BPF_NOEXIST);
		c = bpf_map_lookup_elem(&comms, &k);
		if (!c) {
			stat_inc(FTBPF_STAT_COMM_FULL);
			return;
		}
	}
	if (FTBPF_API_IS_COLL(api)) {
		struct ftbpf_coll *h;

		seq = __sync_fetch_and_add(&c->seq, 1) + 1;
		c->api = api;
		c->count = arg_n(ctx, (cookie >> 12) & 0xf);
		c->dtype = (__u32)arg_n(ctx, (cookie >> 16) & 0xf);
		c->op = (cookie >> 20) & 0xf ? (__u32)arg_n(ctx, (cookie >> 20) & 0xf) : 0;
		/* kept, so that a hang can name the first collective a lagging rank missed */
		h = &c->hist[seq & (FTBPF_COMM_HIST - 1)];
		h->seq = seq;
		h->count = c->count;
		h->api = api;
		h->dtype = c->dtype;
	} else {
		seq = __sync_fetch_and_add(&c->p2p, 1) + 1;
	}
	c->last_ns = now;
	if (outermost) {
		t->api_comm = k.comm;
		t->api_seq = seq;
	}
}

/* The return address of a call at its entry: on the stack at sp on x86-64, in the link register
 * on arm64. A tail call into a second probed function finds the first one's return probe
 * trampoline there instead. */
static __always_inline __u64 call_ra(struct pt_regs *ctx)
{
#if defined(__TARGET_ARCH_x86)
	__u64 ra = 0;

	bpf_probe_read_user(&ra, sizeof(ra), (void *)PT_REGS_SP(ctx));
	return ra;
#else
	return PT_REGS_RET(ctx);
#endif
}

/* sp (at a return, or at a syscall) is above the frame of the call that began at api_sp: that
 * call has returned. x86-64 pops the return address (sp = entry sp + 8 at the return, and a
 * nested call returns to at most the entry sp); arm64 returns with the entry sp. */
static __always_inline int api_frame_gone(const struct ftbpf_thread *t, __u64 sp, int at_return)
{
#if defined(__TARGET_ARCH_x86)
	(void)at_return;
	return sp > t->api_sp;
#else
	return at_return ? sp >= t->api_sp : sp > t->api_sp;
#endif
}

/* The call in flight ended without its return probe: count it, and forget it. */
static __always_inline void api_lost(struct ftbpf_thread *t)
{
	stat_inc(FTBPF_STAT_API_LOST_RET);
	t->api_lost++;
	t->api = 0;
	t->api_depth = 0;
	t->api_sp = 0;
}

SEC("uprobe")
int BPF_KPROBE(gpu_enter)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	struct ftbpf_comm_key k = {.tgid = tgid};
	struct comm_stash st = {};
	struct ftbpf_thread *t;
	struct ftbpf_comm *c;
	__u64 cookie, now, sp, ra = 0;
	int outermost = 0;
	__u32 api;

	if (!tracked(tgid))
		return 0;
	cookie = bpf_get_attach_cookie(ctx);
	api = cookie & 0xff;
	now = hot_now();
	t = thread_get(tgid, tid, now);
	if (!t)
		return 0;
	stat_inc(FTBPF_STAT_API_CALLS);
	t->api_calls++;
	/* In flight only for calls with a return probe to end it. A call at or above the frame
	 * of the one in flight (same sp and return address: the same call site again) means that
	 * one returned unseen: a return probe attached after it began, an agent that stopped
	 * while it ran, a longjmp. Below it: nested (or a tail call: same sp, other address). */
	if (cookie & FTBPF_COOKIE_RET) {
		sp = PT_REGS_SP(ctx);
		ra = call_ra(ctx);
		if (t->api && (sp > t->api_sp || (sp == t->api_sp && ra == t->api_ra)))
			api_lost(t);
		if (t->api) {
			if (t->api_depth < 64)
				t->api_depth++;
		} else {
			outermost = 1;
			t->api = api;
			t->api_depth = 1;
			t->api_sp = sp;
			t->api_ra = ra;
			t->api_since_ns = bpf_ktime_get_ns(); /* precise: a step's wait span */
			t->api_comm = 0;
			t->api_seq = 0;
		}
	}
	switch (api) {
	case FTBPF_API_NCCL_COMM_INIT:
		st.out = arg_n(ctx, 1);
		st.nranks = (int)arg_n(ctx, 2);
		st.id = unique_id_at_entry(ctx);
		st.rank = rank_at_entry(ctx);
		stash_put(tgid, tid, &st);
		break;
	case FTBPF_API_NCCL_COMM_SPLIT: /* (comm, color, key, newcomm *, config) */
		k.comm = arg_n(ctx, 1);
		c = bpf_map_lookup_elem(&comms, &k);
		st.out = arg_n(ctx, 4);
		st.id = ((c ? c->id : 0) ^ (arg_n(ctx, 2) * 0xff51afd7ed558ccdull)) | 1;
		st.rank = -1;
		stash_put(tgid, tid, &st);
		break;
	case FTBPF_API_NCCL_COMM_ABORT:
	case FTBPF_API_NCCL_COMM_DESTROY:
		k.comm = arg_n(ctx, 1);
		comm_drop(&k);
		break;
	default:
		if (FTBPF_API_IS_COLL(api) || FTBPF_API_IS_P2P(api))
			nccl_comm_call(ctx, t, tgid, api, cookie, now, outermost);
	}
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(gpu_exit, long ret)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	struct ftbpf_thread *t;
	struct comm_stash *st;
	__u64 now;
	__u32 api;

	if (!tracked(tgid))
		return 0;
	api = bpf_get_attach_cookie(ctx) & 0xff;
	if (api == FTBPF_API_NCCL_COMM_INIT || api == FTBPF_API_NCCL_COMM_SPLIT) {
		st = bpf_map_lookup_elem(&comm_init, &tid);
		if (st) {
			struct ftbpf_comm_key k = {.tgid = tgid};
			struct ftbpf_comm c = {
			    .id = st->id, .rank = st->rank, .nranks = st->nranks};

			if ((int)ret == 0 && st->out &&
			    !bpf_probe_read_user(&k.comm, sizeof(k.comm), (void *)st->out) &&
			    k.comm && comm_put(&k, &c, BPF_ANY))
				stat_inc(FTBPF_STAT_COMM_FULL);
			stash_drop(tgid, tid);
		}
	}
	t = bpf_map_lookup_elem(&threads, &tid);
	if (!t || !t->api)
		return 0;
	if (!api_frame_gone(t, PT_REGS_SP(ctx), 1)) { /* a nested call returned */
		if (t->api_depth > 1)
			t->api_depth--;
		return 0;
	}
	now = bpf_ktime_get_ns();
	if (tid == tgid) /* the device (or the peers) kept this rank waiting: a step's wait */
		cad_wait(t, tgid, t->api_since_ns, now);
	t->api = 0;
	t->api_depth = 0;
	t->api_sp = 0;
	t->api_last_ns = now;
	if (tid == tgid) { /* a probed call returned: progress */
		t->progress_ns = now;
		t->progress++;
	}
	return 0;
}
