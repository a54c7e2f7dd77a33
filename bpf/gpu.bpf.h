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

/* Integer argument n (1-based, at most 12) of a probed function at its entry. */
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
	case 8:
	case 9:
	case 10:
	case 11:
	case 12: /* on the stack, above the return address */
		bpf_probe_read_user(&v, sizeof(v), (void *)(ctx->sp + 8 * (n - 6)));
		return v;
	}
#elif defined(__TARGET_ARCH_arm64)
	__u64 v = 0;

	if (n >= 1 && n <= 8)
		return ctx->regs[n - 1];
	if (n >= 9 && n <= 12) /* on the stack */
		bpf_probe_read_user(&v, sizeof(v), (void *)(ctx->sp + 8 * (n - 9)));
	return v;
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

/* When collective seq was issued (or begun, on a device record): the arrivals ring. */
static __always_inline void arrival_put(const struct ftbpf_comm_key *k, __u64 seq, __u64 t)
{
	struct ftbpf_arrivals *a = bpf_map_lookup_elem(&arrivals, k);
	struct ftbpf_arrival *e;

	if (!arrivals_on)
		return;
	if (!a) {
		__u32 zero = 0;
		struct ftbpf_arrivals *z = bpf_map_lookup_elem(&arrivals_zero, &zero);

		if (!z)
			return;
		bpf_map_update_elem(&arrivals, k, z, BPF_NOEXIST);
		a = bpf_map_lookup_elem(&arrivals, k);
		if (!a) {
			stat_inc(FTBPF_STAT_ARR_FULL);
			return;
		}
	}
	e = &a->a[seq & (FTBPF_ARR_RING - 1)];
	/* in this order, each store kept (volatile): a reader copies the ring twice and keeps the
	 * entries both copies agree on */
	*(volatile __u64 *)&e->seq = 0;
	__asm__ __volatile__("" ::: "memory");
	*(volatile __u64 *)&e->t_ns = t;
	__asm__ __volatile__("" ::: "memory");
	*(volatile __u64 *)&e->seq = seq;
}

/*
 * The cross-rank id of an MPI communicator: MPI_COMM_WORLD only, the same in every process of
 * the job: MPICH's is the integer handle 0x44000000; Open MPI's is &ompi_mpi_comm_world, at the
 * offset the cookie gives from the probed function (the probe's address). Any other (a split, a
 * dup, MPI_COMM_SELF) has none: 0.
 */
static __always_inline __u64 mpi_comm_id(struct pt_regs *ctx, __u64 cookie, __u64 comm)
{
	__s32 world = FTBPF_COOKIE_WORLD(cookie);

	if ((__u32)comm == 0x44000000u && (comm >> 32) == 0) /* an int handle: its 32 bits */
		return 0x4d504957ull << 1 | 1;
	if (world && comm == PT_REGS_IP(ctx) + (__s64)world)
		return 0x4d504957ull << 1 | 1;
	return 0;
}

/* The record of key k, created as init when missing. */
static __always_inline struct ftbpf_comm *comm_record(const struct ftbpf_comm_key *k,
						      const struct ftbpf_comm *init)
{
	struct ftbpf_comm *c = bpf_map_lookup_elem(&comms, k);

	if (c)
		return c;
	bpf_map_update_elem(&comms, k, init, BPF_NOEXIST);
	c = bpf_map_lookup_elem(&comms, k);
	if (!c)
		stat_inc(FTBPF_STAT_COMM_FULL);
	return c;
}

static __always_inline void comm_call(struct pt_regs *ctx, struct ftbpf_thread *t, __u32 tgid,
				      __u32 api, __u64 cookie, int outermost)
{
	struct ftbpf_comm_key k = {.tgid = tgid, .kind = FTBPF_CK_HOST};
	struct ftbpf_comm init = {.rank = -1, .flags = FTBPF_COMM_NO_ID};
	struct ftbpf_comm *c;
	__u64 seq = 0, now;

	k.comm = arg_n(ctx, (cookie >> 8) & 0xf);
	init.id = k.comm ^ ((__u64)tgid << 32);
	if (FTBPF_API_IS_MPI(api)) {
		__u64 id = mpi_comm_id(ctx, cookie, k.comm);

		init.flags = FTBPF_COMM_MPI | (id ? 0 : FTBPF_COMM_NO_ID);
		if (id)
			init.id = id;
	}
	c = comm_record(&k, &init);
	if (!c)
		return;
	now = bpf_ktime_get_ns(); /* precise: arrivals are compared across ranks */
	if (FTBPF_API_IS_COLL(api)) {
		struct ftbpf_coll *h;

		seq = __sync_fetch_and_add(&c->seq, 1) + 1;
		c->api = api;
		c->count = (cookie >> 12) & 0xf ? arg_n(ctx, (cookie >> 12) & 0xf) : 0;
		/* MPI's datatypes are handles, not NCCL's enum: not kept */
		c->dtype = (cookie >> 16) & 0xf ? (__u32)arg_n(ctx, (cookie >> 16) & 0xf) : 0;
		c->op = (cookie >> 20) & 0xf ? (__u32)arg_n(ctx, (cookie >> 20) & 0xf) : 0;
		/* kept, so that a hang can name the first collective a lagging rank missed */
		h = &c->hist[seq & (FTBPF_COMM_HIST - 1)];
		h->seq = seq;
		h->count = c->count;
		h->api = api;
		h->dtype = c->dtype;
		arrival_put(&k, seq, now);
	} else {
		seq = __sync_fetch_and_add(&c->p2p, 1) + 1;
	}
	c->last_ns = now;
	if (outermost) {
		t->api_comm = k.comm;
		t->api_seq = seq;
	}
}

/* A CUDA graph launch: the collectives it replays are never seen one by one, so the launches
 * themselves are numbered (every rank of a job replays its step's graph alike). */
static __always_inline void graph_launch(__u32 tgid)
{
	struct ftbpf_comm_key k = {.tgid = tgid, .kind = FTBPF_CK_GRAPH};
	struct ftbpf_comm init = {.id = FTBPF_GRAPH_COMM_ID, .rank = -1, .flags = FTBPF_COMM_GRAPH};
	struct ftbpf_comm *c = comm_record(&k, &init);
	__u64 seq, now = bpf_ktime_get_ns();

	if (!c)
		return;
	seq = __sync_fetch_and_add(&c->seq, 1) + 1;
	c->api = FTBPF_API_CU_GRAPH_LAUNCH;
	c->last_ns = now;
	arrival_put(&k, seq, now);
}

/* ftbpf_nccl_device_reached(comm_hash, begun, api, count, rank, nranks), called by the NCCL
 * profiler plugin when a device began a collective: the device's own count, beside the host's. */
static __always_inline void device_reached(struct pt_regs *ctx, __u32 tgid)
{
	struct ftbpf_comm_key k = {.tgid = tgid, .kind = FTBPF_CK_DEVICE};
	struct ftbpf_comm init = {.flags = FTBPF_COMM_DEVICE};
	struct ftbpf_comm *c;
	__u64 seq = arg_n(ctx, 2), now = bpf_ktime_get_ns();

	k.comm = arg_n(ctx, 1);
	init.id = k.comm | 1;
	init.rank = (__s32)arg_n(ctx, 5);
	init.nranks = (__s32)arg_n(ctx, 6);
	c = comm_record(&k, &init);
	if (!c || !seq || seq > (1ull << 48))
		return;
	if (seq > c->seq) { /* channels report in any order: the furthest one */
		struct ftbpf_coll *h = &c->hist[seq & (FTBPF_COMM_HIST - 1)];

		c->seq = seq;
		c->api = (__u32)arg_n(ctx, 3);
		c->count = arg_n(ctx, 4);
		h->seq = seq;
		h->count = c->count;
		h->api = c->api;
		c->last_ns = now;
		arrival_put(&k, seq, now);
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
	struct ftbpf_comm_key k = {.tgid = tgid, .kind = FTBPF_CK_HOST};
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
		bpf_map_update_elem(&comm_init, &tid, &st, BPF_ANY);
		break;
	case FTBPF_API_NCCL_COMM_SPLIT: /* (comm, color, key, newcomm *, config) */
		k.comm = arg_n(ctx, 1);
		c = bpf_map_lookup_elem(&comms, &k);
		st.out = arg_n(ctx, 4);
		st.id = ((c ? c->id : 0) ^ (arg_n(ctx, 2) * 0xff51afd7ed558ccdull)) | 1;
		st.rank = -1;
		bpf_map_update_elem(&comm_init, &tid, &st, BPF_ANY);
		break;
	case FTBPF_API_NCCL_COMM_ABORT:
	case FTBPF_API_NCCL_COMM_DESTROY:
		k.comm = arg_n(ctx, 1);
		bpf_map_delete_elem(&comms, &k);
		bpf_map_delete_elem(&arrivals, &k);
		break;
	case FTBPF_API_CU_GRAPH_LAUNCH:
		graph_launch(tgid);
		break;
	case FTBPF_API_DEV_REACHED:
		device_reached(ctx, tgid);
		break;
	case FTBPF_API_DEV_DONE: /* (hash): the device records of each call of that comm */
		k.kind = FTBPF_CK_DEVICE;
		for (__u64 a = FTBPF_API_NCCL_ALLREDUCE; a <= FTBPF_API_NCCL_REDUCE; a++) {
			k.comm = arg_n(ctx, 1) ^ (a * 0x9E3779B97F4A7C15ull);
			bpf_map_delete_elem(&comms, &k);
			bpf_map_delete_elem(&arrivals, &k);
		}
		break;
	case FTBPF_API_MPI_COMM_FREE: /* (MPI_Comm *) */
		if (bpf_probe_read_user(&k.comm, sizeof(k.comm), (void *)arg_n(ctx, 1)) == 0) {
			bpf_map_delete_elem(&comms, &k);
			bpf_map_delete_elem(&arrivals, &k);
		}
		break;
	default:
		if (FTBPF_API_IS_COLL(api) || FTBPF_API_IS_P2P(api))
			comm_call(ctx, t, tgid, api, cookie, outermost);
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
			    k.comm && bpf_map_update_elem(&comms, &k, &c, BPF_ANY))
				stat_inc(FTBPF_STAT_COMM_FULL);
			bpf_map_delete_elem(&comm_init, &tid);
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
	if (tid == tgid) { /* the device (or the peers) kept this rank waiting: a step's wait */
		cad_wait(t, tgid, t->api_since_ns, now);
		cad_own(tgid, FTBPF_API_IS_SYNC(t->api) ? FTBPF_OWN_GPU : FTBPF_OWN_COMM,
			t->api_since_ns, now);
	}
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
