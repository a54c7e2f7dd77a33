/*
 * Tracker lifecycle: probe -> open -> choose programs, size maps, set pins -> load -> attach
 * -> pin links. A restarted agent finds the maps pinned and reuses them, so ranks, per-thread
 * history and queued events survive; new links replace the pinned ones.
 */
#include "watch/tracker.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <linux/bpf.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <zlib.h>

#include "ftbpf/slot.h"
#include "lib/syscalls.h"
#include "tracker.skel.h"
#include "watch/tracker_int.h"

static const char *pinned_maps[] = {
    "rank_bits",   "procs", "threads",	 "events",     "stats", "sysclass",
    "timer_table", "slots", "slot_bits", "maps_dirty", "comms",
};

int tracker_probe_tp_btf(void)
{
	struct bpf_insn insns[2] = {
	    {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0},
	    {.code = BPF_JMP | BPF_EXIT},
	};
	int id, fd, lfd;

	id = libbpf_find_vmlinux_btf_id("sys_enter", BPF_TRACE_RAW_TP);
	if (id < 0)
		return 0;
	LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = BPF_TRACE_RAW_TP,
		    .attach_btf_id = id);
	fd = bpf_prog_load(BPF_PROG_TYPE_TRACING, "probe_tp_btf", "GPL", insns, 2, &opts);
	if (fd < 0)
		return 0;
	lfd = bpf_raw_tracepoint_open(NULL, fd);
	close(fd);
	if (lfd < 0)
		return 0;
	close(lfd);
	return 1;
}

int tracker_ensure_bpffs(const char *dir)
{
	struct statfs sf;

	if (strncmp(dir, "/sys/fs/bpf", 11))
		return 0; /* the caller chose a path elsewhere: trust it */
	if (statfs("/sys/fs/bpf", &sf) == 0 && sf.f_type == BPF_FS_MAGIC)
		return 0;
	if (mount("bpf", "/sys/fs/bpf", "bpf", 0, "mode=0700") < 0)
		return -errno;
	return 0;
}

static int mkdir_p(const char *path)
{
	char tmp[256];

	snprintf(tmp, sizeof(tmp), "%s", path);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(tmp, 0700) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(tmp, 0700) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

int tracker_unpin_all(const char *dir)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	char p[512];

	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		unlink(p);
	}
	closedir(d);
	rmdir(dir);
	return 0;
}

static unsigned read_pid_max(void)
{
	FILE *f = fopen("/proc/sys/kernel/pid_max", "re");
	unsigned v = 4194304;

	if (f) {
		if (fscanf(f, "%u", &v) != 1)
			v = 4194304;
		fclose(f);
	}
	return v;
}

static int quiet_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return level == LIBBPF_WARN && strstr(fmt, "failed") ? vfprintf(stderr, fmt, ap) : 0;
}

/* CONFIG_HZ from the kernel's config (/proc/config.gz or /boot/config-RELEASE); 0 unknown. */
static unsigned kernel_hz(void)
{
	char path[300], line[256];
	struct utsname u;
	unsigned hz = 0;
	gzFile f = gzopen("/proc/config.gz", "rb");

	if (!f && uname(&u) == 0) {
		snprintf(path, sizeof(path), "/boot/config-%s", u.release);
		f = gzopen(path, "rb"); /* reads plain files too */
	}
	if (!f)
		return 0;
	while (gzgets(f, line, sizeof(line)))
		if (sscanf(line, "CONFIG_HZ=%u", &hz) == 1)
			break;
	gzclose(f);
	return hz >= 24 && hz <= 10000 ? hz : 0;
}

static int rb_cb(void *ctx, void *data, size_t len)
{
	struct tracker *t = ctx;

	if (len >= sizeof(struct ftbpf_event) && t->on_event)
		t->on_event(t->ctx, data);
	/* a negative return stops libbpf after this record (which it has consumed) */
	return ++t->consumed >= t->consume_max ? -EAGAIN : 0;
}

static int pinned_exists(const char *dir, const char *name)
{
	char p[512];

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return access(p, F_OK) == 0;
}

/* Attach prog and pin its link as dir/link_<suffix>, replacing an earlier agent's pin. */
static int attach_and_pin(struct tracker *t, struct bpf_program *prog, const char *suffix,
			  char *err, size_t errlen)
{
	char p[512];
	struct bpf_link *l = bpf_program__attach(prog);
	int r;

	if (!l) {
		r = -errno;
		snprintf(err, errlen, "attach %s: %s", bpf_program__name(prog), strerror(-r));
		return r;
	}
	if (!*t->pin_dir) { /* not pinned: the link lives as long as our fd (and process) */
		t->links[t->nlinks++] = l;
		return 0;
	}
	snprintf(p, sizeof(p), "%s/link_%s", t->pin_dir, suffix);
	unlink(p); /* the old link (if any) detaches when its pin goes: we already run */
	r = bpf_link__pin(l, p);
	if (r < 0) {
		snprintf(err, errlen, "pin link %s: %s", p, strerror(-r));
		bpf_link__destroy(l);
		return r;
	}
	t->links[t->nlinks++] = l;
	return 0;
}

/*
 * The communicators an earlier agent left in the pinned map counted nothing while no agent ran,
 * each rank's for its own time: their counts are no longer comparable across ranks. What a
 * device began is numbered by NCCL itself (from the profiler plugin): kept.
 */
static void comms_unaligned(struct tracker *t)
{
	int fd = bpf_map__fd(t->skel->maps.comms);
	struct ftbpf_comm_key k, next, *prev = NULL;
	struct ftbpf_comm c;

	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		k = next;
		prev = &k;
		if (k.kind != FTBPF_CK_DEVICE && bpf_map_lookup_elem(fd, &k, &c) == 0 &&
		    !(c.flags & FTBPF_COMM_UNALIGNED)) {
			c.flags |= FTBPF_COMM_UNALIGNED;
			(void)bpf_map_update_elem(fd, &k, &c, BPF_EXIST);
		}
	}
}

struct tracker *tracker_open(const struct tracker_opts *o, char *err, size_t errlen)
{
	struct tracker *t = calloc(1, sizeof(*t));
	struct bpf_program *prog;
	unsigned pid_max;
	int r, n_existing = 0;

	if (!t) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	snprintf(t->pin_dir, sizeof(t->pin_dir), "%s", o->pin_dir ? o->pin_dir : "");
	t->on_event = o->on_event;
	t->ctx = o->ctx;

	libbpf_set_print(o->verbose ? NULL : quiet_print); /* libbpf retries are not our errors */
	if (*t->pin_dir) {
		r = tracker_ensure_bpffs(o->pin_dir);
		if (r < 0) {
			snprintf(err, errlen, "mount bpffs on /sys/fs/bpf: %s", strerror(-r));
			goto fail;
		}
		if (o->reset)
			tracker_unpin_all(o->pin_dir);
		r = mkdir_p(o->pin_dir);
		if (r < 0) {
			snprintf(err, errlen, "create pin dir %s: %s", o->pin_dir, strerror(-r));
			goto fail;
		}
	}

	/* probe */
	if (o->programs && !strcmp(o->programs, "raw_tp"))
		t->feat.tp_btf = 0;
	else
		t->feat.tp_btf = tracker_probe_tp_btf();
	if (!t->feat.tp_btf && o->programs && !strcmp(o->programs, "tp_btf")) {
		snprintf(err, errlen, "tp_btf programs requested but this kernel cannot load them");
		goto fail;
	}
	t->feat.task_iter =
	    !o->no_task_iter && libbpf_find_vmlinux_btf_id("task", BPF_TRACE_ITER) > 0;
	pid_max = read_pid_max();
	t->nwords = (pid_max + 63) / 64;
	t->feat.pid_max = t->nwords * 64;

	/* open */
	t->skel = tracker_bpf__open();
	if (!t->skel) {
		r = -errno;
		snprintf(err, errlen, "open BPF object: %s", strerror(-r));
		goto fail;
	}
	t->skel->rodata->agent_tgid = o->agent_tgid;
	t->skel->rodata->timer_term_first = !!o->timer_term_first;
	t->skel->rodata->ioctl_nr = SYS_ioctl;
	/* make bench's way to measure what the arrival record costs a collective; never for use */
	t->skel->rodata->arrivals_on = !getenv("FTBPF_BENCH_NO_ARRIVALS");
	t->skel->rodata->mmap_nr = SYS_mmap;
	/* uprobes with attach cookies (5.15+); without them no CUDA/NCCL probes, all else works */
	t->feat.uprobes =
	    libbpf_probe_bpf_helper(BPF_PROG_TYPE_KPROBE, BPF_FUNC_get_attach_cookie, NULL) == 1;
	/* The tick clock needs HZ and the iterator that calibrates it. */
	t->feat.hz = t->feat.task_iter && !o->ktime_clock ? kernel_hz() : 0;
	t->skel->rodata->ns_per_jiffy = t->feat.hz ? 1000000000ull / t->feat.hz : 0;
	bpf_map__set_max_entries(t->skel->maps.rank_bits, t->nwords);
	bpf_map__set_max_entries(t->skel->maps.slot_bits, t->nwords);
	bpf_map__set_max_entries(t->skel->maps.maps_dirty, t->nwords);
	bpf_object__for_each_program (prog, t->skel->obj) {
		const char *name = bpf_program__name(prog);
		int want;

		if (!strncmp(name, "btf_", 4))
			want = t->feat.tp_btf;
		else if (!strncmp(name, "raw_", 4))
			want = !t->feat.tp_btf;
		else if (!strncmp(name, "gpu_", 4))
			want = t->feat.uprobes;
		else
			want = t->feat.task_iter;
		if (strstr(name, "mark_victim") && t->feat.tp_btf &&
		    libbpf_find_vmlinux_btf_id("mark_victim", BPF_TRACE_RAW_TP) < 0)
			want = 0;
		bpf_program__set_autoload(prog, want);
	}
	for (size_t i = 0; *t->pin_dir && i < sizeof(pinned_maps) / sizeof(pinned_maps[0]); i++) {
		struct bpf_map *m = bpf_object__find_map_by_name(t->skel->obj, pinned_maps[i]);
		char p[512];

		snprintf(p, sizeof(p), "%s/%s", o->pin_dir, pinned_maps[i]);
		n_existing += pinned_exists(o->pin_dir, pinned_maps[i]);
		if (!m || bpf_map__set_pin_path(m, p)) {
			snprintf(err, errlen, "set pin path %s: failed", p);
			goto fail;
		}
	}
	t->feat.resumed =
	    *t->pin_dir && n_existing == (int)(sizeof(pinned_maps) / sizeof(pinned_maps[0]));

	/* load */
	r = tracker_bpf__load(t->skel);
	if (r < 0) {
		snprintf(err, errlen, "load BPF programs: %s%s", strerror(-r),
			 n_existing ? " (maps pinned by another ftbpf version are in the pin dir: "
				      "restart with --reset-state)"
				    : "");
		goto fail;
	}
	for (int nr = 0; nr < FTBPF_MAX_SYSCALLS; nr++) {
		__u32 k = nr;
		__u8 v = (__u8)(syscalls_class(nr) | syscalls_cadence(nr));

		bpf_map_update_elem(bpf_map__fd(t->skel->maps.sysclass), &k, &v, BPF_ANY);
	}
	comms_unaligned(t);

	/* map the bitmap */
	t->bits_len = (size_t)t->nwords * sizeof(uint64_t);
	t->bits = mmap(NULL, t->bits_len, PROT_READ | PROT_WRITE, MAP_SHARED,
		       bpf_map__fd(t->skel->maps.rank_bits), 0);
	if (t->bits == MAP_FAILED) {
		r = -errno;
		t->bits = NULL;
		snprintf(err, errlen, "mmap rank_bits: %s", strerror(-r));
		goto fail;
	}
	t->dirty = mmap(NULL, t->bits_len, PROT_READ | PROT_WRITE, MAP_SHARED,
			bpf_map__fd(t->skel->maps.maps_dirty), 0);
	if (t->dirty == MAP_FAILED) {
		r = -errno;
		t->dirty = NULL;
		snprintf(err, errlen, "mmap maps_dirty: %s", strerror(-r));
		goto fail;
	}

	/* The iterator first: one pass calibrates the syscall clock before programs run. */
	if (t->feat.task_iter) {
		struct ftbpf_task_snap *snap = NULL;
		size_t n;

		t->iter_link = bpf_program__attach_iter(t->skel->progs.dump_task, NULL);
		if (!t->iter_link || tracker_snapshot(t, 0, &snap, &n) < 0) {
			snprintf(err, errlen, "task iterator: %s", strerror(errno));
			goto fail;
		}
		free(snap);
	}

	/* attach */
	bpf_object__for_each_program (prog, t->skel->obj) {
		const char *name = bpf_program__name(prog);

		if (!bpf_program__autoload(prog) || !strcmp(name, "dump_task") ||
		    !strncmp(name, "gpu_", 4)) /* uprobes: per library, by tracker_uprobe_attach */
			continue;
		r = attach_and_pin(t, prog, name + 4, err, errlen);
		if (r < 0) {
			if (strstr(name, "mark_victim")) {
				err[0] = 0;
				continue; /* optional */
			}
			goto fail;
		}
		if (strstr(name, "mark_victim"))
			t->feat.oom = 1;
	}
	t->rb = ring_buffer__new(bpf_map__fd(t->skel->maps.events), rb_cb, t, NULL);
	if (!t->rb) {
		r = -errno;
		snprintf(err, errlen, "ring buffer: %s", strerror(-r));
		goto fail;
	}
	return t;
fail:
	tracker_close(t);
	return NULL;
}

void tracker_close(struct tracker *t)
{
	if (!t)
		return;
	ring_buffer__free(t->rb);
	bpf_link__destroy(t->iter_link);
	/* Pinned links stay attached after we drop our references. */
	for (int i = 0; i < t->nlinks; i++)
		bpf_link__destroy(t->links[i]);
	if (t->bits)
		munmap(t->bits, t->bits_len);
	if (t->dirty)
		munmap(t->dirty, t->bits_len);
	tracker_bpf__destroy(t->skel);
	free(t);
}

const struct tracker_features *tracker_features(const struct tracker *t)
{
	return &t->feat;
}

int tracker_epoll_fd(const struct tracker *t)
{
	return ring_buffer__epoll_fd(t->rb);
}

int tracker_consume(struct tracker *t, int max)
{
	int r;

	t->consumed = 0;
	t->consume_max = max > 0 ? max : 1;
	r = ring_buffer__consume(t->rb);
	if (r == -EAGAIN)
		return 1; /* the budget ran out: more may wait */
	return r < 0 ? r : 0;
}

int tracker_set_tracked(struct tracker *t, uint32_t tgid, int on)
{
	uint64_t bit = 1ull << (tgid & 63);

	if (tgid / 64 >= t->nwords)
		return -ERANGE;
	if (on)
		__atomic_fetch_or(&t->bits[tgid / 64], bit, __ATOMIC_SEQ_CST);
	else
		__atomic_fetch_and(&t->bits[tgid / 64], ~bit, __ATOMIC_SEQ_CST);
	/* after the bit: the syscall path's per-CPU answers are stale from now on */
	__atomic_fetch_add(&t->skel->bss->track_gen, 1, __ATOMIC_SEQ_CST);
	return 0;
}

int tracker_is_tracked(const struct tracker *t, uint32_t tgid)
{
	if (tgid / 64 >= t->nwords)
		return 0;
	return !!(__atomic_load_n(&t->bits[tgid / 64], __ATOMIC_RELAXED) & (1ull << (tgid & 63)));
}

int tracker_proc_get(const struct tracker *t, uint32_t tgid, struct ftbpf_proc *ret)
{
	return bpf_map_lookup_elem(bpf_map__fd(t->skel->maps.procs), &tgid, ret) ? -errno : 0;
}

int tracker_proc_put(struct tracker *t, uint32_t tgid, const struct ftbpf_proc *p)
{
	return bpf_map_update_elem(bpf_map__fd(t->skel->maps.procs), &tgid, p, BPF_ANY) ? -errno
											: 0;
}

int tracker_proc_delete(struct tracker *t, uint32_t tgid)
{
	return bpf_map_delete_elem(bpf_map__fd(t->skel->maps.procs), &tgid) ? -errno : 0;
}

int tracker_thread_get(const struct tracker *t, uint32_t tid, struct ftbpf_thread *ret)
{
	return bpf_map_lookup_elem(bpf_map__fd(t->skel->maps.threads), &tid, ret) ? -errno : 0;
}

int tracker_thread_seed(struct tracker *t, uint32_t tid, uint32_t tgid, int nr, uint64_t since_ns)
{
	struct ftbpf_thread init = {
	    .tgid = tgid, .cur_nr = nr, .enter_ns = since_ns, .last_nr = -1, .first_ns = since_ns};

	/* BPF_NOEXIST: a record the kernel made since (the thread moved on) is the truth */
	return bpf_map_update_elem(bpf_map__fd(t->skel->maps.threads), &tid, &init, BPF_NOEXIST)
		   ? -errno
		   : 0;
}

int tracker_timer_put(struct tracker *t, const struct ftbpf_timer_key *k,
		      const struct ftbpf_timer_val *v)
{
	return bpf_map_update_elem(bpf_map__fd(t->skel->maps.timer_table), k, v, BPF_ANY) ? -errno
											  : 0;
}

int tracker_timer_delete(struct tracker *t, const struct ftbpf_timer_key *k)
{
	return bpf_map_delete_elem(bpf_map__fd(t->skel->maps.timer_table), k) ? -errno : 0;
}

/* Every entry of a hash map: fn(ctx, key, value) with the map's own key and value sizes; a
 * non-zero return stops the walk and is returned. Entries deleted meanwhile are skipped. */
typedef int (*map_entry_fn)(void *ctx, const void *key, const void *val);

static int map_foreach(const struct bpf_map *m, map_entry_fn fn, void *ctx)
{
	int fd = bpf_map__fd(m), r = 0;
	size_t ks = bpf_map__key_size(m), vs = bpf_map__value_size(m);
	unsigned char *key = malloc(2 * ks + vs), *next, *val;
	void *prev = NULL;

	if (!key)
		return -ENOMEM;
	next = key + ks;
	val = next + ks;
	while (!r && bpf_map_get_next_key(fd, prev, next) == 0) {
		memcpy(key, next, ks);
		prev = key;
		if (bpf_map_lookup_elem(fd, key, val) == 0)
			r = fn(ctx, key, val);
	}
	free(key);
	return r;
}

struct walk { /* a typed callback behind map_foreach */
	union {
		tracker_timer_fn timer;
		tracker_comm_fn comm;
		tracker_proc_fn proc;
	} fn;
	void *ctx;
};

static int timer_entry(void *ctx, const void *key, const void *val)
{
	const struct walk *w = ctx;

	return w->fn.timer(w->ctx, key, val);
}

int tracker_foreach_timer(const struct tracker *t, tracker_timer_fn fn, void *ctx)
{
	struct walk w = {.fn.timer = fn, .ctx = ctx};

	return map_foreach(t->skel->maps.timer_table, timer_entry, &w);
}

/* ---- slots ---- */
int tracker_gpu_major_add(struct tracker *t, unsigned major)
{
	uint32_t k = major;
	uint8_t v = 1;

	return bpf_map_update_elem(bpf_map__fd(t->skel->maps.gpu_majors), &k, &v, BPF_ANY) ? -errno
											   : 0;
}

int tracker_maps_dirty_take(struct tracker *t, uint32_t tgid)
{
	uint64_t bit = 1ull << (tgid & 63);

	if (tgid / 64 >= t->nwords ||
	    !(__atomic_load_n(&t->dirty[tgid / 64], __ATOMIC_RELAXED) & bit))
		return 0;
	return !!(__atomic_fetch_and(&t->dirty[tgid / 64], ~bit, __ATOMIC_SEQ_CST) & bit);
}

int tracker_uprobe_attach(struct tracker *t, const char *path, size_t offset, uint64_t cookie,
			  int retprobe, struct bpf_link **ret)
{
	LIBBPF_OPTS(bpf_uprobe_opts, o, .bpf_cookie = cookie, .retprobe = !!retprobe);
	struct bpf_program *prog = retprobe ? t->skel->progs.gpu_exit : t->skel->progs.gpu_enter;

	if (!t->feat.uprobes)
		return -EOPNOTSUPP;
	*ret = bpf_program__attach_uprobe_opts(prog, -1, path, offset, &o);
	return *ret ? 0 : -errno;
}

int tracker_cad_get(const struct tracker *t, uint32_t tgid, struct ftbpf_cad *ret)
{
	return bpf_map_lookup_elem(bpf_map__fd(t->skel->maps.cadence), &tgid, ret) ? -errno : 0;
}

int tracker_cad_add(struct tracker *t, uint32_t tgid)
{
	struct ftbpf_cad c;

	memset(&c, 0, sizeof(c));
	if (bpf_map_update_elem(bpf_map__fd(t->skel->maps.cadence), &tgid, &c, BPF_NOEXIST))
		return errno == EEXIST ? 0 : -errno;
	return 0;
}

static int comm_entry(void *ctx, const void *key, const void *val)
{
	const struct walk *w = ctx;

	return w->fn.comm(w->ctx, key, val);
}

int tracker_foreach_comm(const struct tracker *t, tracker_comm_fn fn, void *ctx)
{
	struct walk w = {.fn.comm = fn, .ctx = ctx};

	return map_foreach(t->skel->maps.comms, comm_entry, &w);
}

int tracker_arrivals_get(const struct tracker *t, const struct ftbpf_comm_key *k,
			 struct ftbpf_arrivals *ret)
{
	return bpf_map_lookup_elem(bpf_map__fd(t->skel->maps.arrivals), k, ret) ? -errno : 0;
}

int tracker_comm_delete(struct tracker *t, const struct ftbpf_comm_key *k)
{
	(void)bpf_map_delete_elem(bpf_map__fd(t->skel->maps.arrivals), k);
	return bpf_map_delete_elem(bpf_map__fd(t->skel->maps.comms), k) ? -errno : 0;
}

int tracker_thread_delete(struct tracker *t, uint32_t tid)
{
	return bpf_map_delete_elem(bpf_map__fd(t->skel->maps.threads), &tid) ? -errno : 0;
}

static int proc_entry(void *ctx, const void *key, const void *val)
{
	const struct walk *w = ctx;
	uint32_t tgid;

	memcpy(&tgid, key, sizeof(tgid));
	return w->fn.proc(w->ctx, tgid, val);
}

int tracker_foreach_proc(const struct tracker *t, tracker_proc_fn fn, void *ctx)
{
	struct walk w = {.fn.proc = fn, .ctx = ctx};

	return map_foreach(t->skel->maps.procs, proc_entry, &w);
}

uint64_t tracker_stat(const struct tracker *t, enum ftbpf_stat idx)
{
	uint32_t k = idx;
	uint64_t v = 0;

	bpf_map_lookup_elem(bpf_map__fd(t->skel->maps.stats), &k, &v);
	return v;
}

int tracker_snapshot(struct tracker *t, int stacks, struct ftbpf_task_snap **ret, size_t *ret_n)
{
	size_t cap = 64, n = 0;
	struct ftbpf_task_snap *buf;
	int fd;

	if (!t->iter_link)
		return -EOPNOTSUPP;
	t->skel->bss->iter_want_stacks = !!stacks;
	fd = bpf_iter_create(bpf_link__fd(t->iter_link));
	if (fd < 0)
		return -errno;
	buf = malloc(cap * sizeof(*buf));
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	for (;;) {
		ssize_t r;

		if (n == cap) {
			struct ftbpf_task_snap *nb = realloc(buf, cap * 2 * sizeof(*buf));

			if (!nb) {
				free(buf);
				close(fd);
				return -ENOMEM;
			}
			buf = nb;
			cap *= 2;
		}
		r = read(fd, (char *)(buf + n), (cap - n) * sizeof(*buf));
		if (r < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			free(buf);
			close(fd);
			return (int)r;
		}
		if (r == 0)
			break;
		n += r / sizeof(*buf);
	}
	close(fd);
	*ret = buf;
	*ret_n = n;
	return 0;
}
