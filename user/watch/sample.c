/*
 * Sampling a watched process into the detector's input (see sample.h). With the tracker: the
 * main thread's record (syscall and probed call in flight, progress, GPU ioctls) and the task
 * iterator's snapshot (state, CPU time); without it, /proc: state and CPU time from stat, the
 * syscall in flight from /proc/PID/task/PID/syscall, progress from read/write syscall counts.
 */
#include "watch/sample.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/cadence.h"
#include "lib/kstack.h"
#include "lib/syscalls.h"
#include "os/clock.h"
#include "os/ksyms.h"
#include "os/procfs.h"
#include "watch/tracker.h"

/* Read the kernel's symbols; a failed read (kptr_restrict, say) is tried again a minute on,
 * not at every stack: each try costs the loop 100 ms and more. */
static void ksyms_try(struct sampler *sp, uint64_t now)
{
	if (sp->ksyms || now < sp->ksyms_retry_ns)
		return;
	sp->ksyms = ksyms_load();
	sp->ksyms_retry_ns = now + 60 * CLOCK_NS_PER_S;
}

void sampler_init(struct sampler *sp, struct tracker *tr)
{
	memset(sp, 0, sizeof(*sp));
	sp->tr = tr;
	/* now, not at the first hang: reading /proc/kallsyms takes 100 ms and more, which the
	 * loop (and every client waiting on it) would pay at the worst moment */
	if (tr)
		ksyms_try(sp, clock_mono_ns());
}

void sampler_fini(struct sampler *sp)
{
	free(sp->snap);
	ksyms_free(sp->ksyms);
	memset(sp, 0, sizeof(*sp));
}

int sampler_refresh(struct sampler *sp, int stacks)
{
	struct ftbpf_task_snap *snap = NULL;
	size_t n = 0;
	int r;

	if (!sp->tr)
		return -EOPNOTSUPP;
	r = tracker_snapshot(sp->tr, stacks, &snap, &n);
	if (r < 0)
		return r;
	free(sp->snap);
	sp->snap = snap;
	sp->nsnap = n;
	return 0;
}

const struct ftbpf_task_snap *sampler_task(const struct sampler *sp, uint32_t tid)
{
	for (size_t i = 0; i < sp->nsnap; i++)
		if (sp->snap[i].tid == tid)
			return &sp->snap[i];
	return NULL;
}

char sampler_state_char(const struct ftbpf_task_snap *t)
{
	uint32_t st = t->state;

	if (t->exit_state & 0x20)
		return 'Z';
	if (t->exit_state & 0x10)
		return 'X';
	if (st == 0)
		return 'R';
	if (st & 0x4)
		return 'T';
	if (st & 0x8)
		return 't';
	if ((st & 0x2) && (st & 0x400))
		return 'I';
	if (st & 0x2)
		return 'D';
	return 'S';
}

static int count_one(void *ctx, int id)
{
	(void)id;
	(*(int *)ctx)++;
	return 0;
}

int sampler_nthreads(const struct sampler *sp, int pid)
{
	int n = 0;

	if (sp->tr && tracker_features(sp->tr)->task_iter) {
		for (size_t i = 0; i < sp->nsnap; i++)
			n += sp->snap[i].tgid == (uint32_t)pid;
		return n;
	}
	procfs_foreach_pid(pid, count_one, &n);
	return n;
}

static uint64_t read_io(int pid)
{
	char p[64], buf[1024];
	unsigned long long r = 0, w = 0;
	const char *s;
	ssize_t n;

	snprintf(p, sizeof(p), "/proc/%d/io", pid);
	n = procfs_read(p, buf, sizeof(buf) - 1);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	if ((s = strstr(buf, "syscr:")))
		r = strtoull(s + 6, NULL, 10);
	if ((s = strstr(buf, "syscw:")))
		w = strtoull(s + 6, NULL, 10);
	return r + w;
}

/* Without the tracker: progress is a change in the read/write syscall counts, the syscall in
 * flight what /proc says (since when it first said so). */
static void sample_proc(int pid, uint64_t now, struct det_sample *s, struct sample_memory *m)
{
	uint64_t io = read_io(pid);
	int nr = -1;

	if (procfs_syscall(pid, pid, &nr) < 0)
		nr = -1;
	if (!m->io_change_ns || io != m->io) {
		m->io = io;
		m->io_change_ns = now;
	}
	if (!m->nr_since_ns || nr != m->nr) {
		m->nr = nr;
		m->nr_since_ns = now;
	}
	s->cur_nr = nr;
	s->enter_ns = m->nr_since_ns;
	s->progress_ns = m->io_change_ns;
}

/* The main thread waits on its peers: in a wait now, or in a busy-wait loop of yields and empty
 * polls (its last wait ended moments ago). Since the wait span began. */
#define BUSY_WAIT_GAP_NS 50000000ull
static uint64_t wait_since(const struct ftbpf_thread *t, uint64_t now)
{
	if (t->cur_nr >= 0 && t->cad_enter_ns && (t->cad_cls & FTBPF_SC_CAD_WAIT))
		return t->cad_start_ns && t->cad_enter_ns <= t->cad_last_ns + FTBPF_CAD_GAP_NS
			   ? t->cad_start_ns
			   : t->cad_enter_ns;
	if (t->cad_start_ns && now >= t->cad_last_ns && now - t->cad_last_ns <= BUSY_WAIT_GAP_NS)
		return t->cad_start_ns;
	return 0;
}

int sampler_cadence(struct sampler *sp, int pid, uint64_t now, struct cad_obs *o)
{
	struct ftbpf_cad c;
	struct ftbpf_thread t;
	int r, have_t;

	if (!sp->tr)
		return -EOPNOTSUPP;
	r = tracker_cad_get(sp->tr, (uint32_t)pid, &c);
	if (r < 0) {
		r = tracker_cad_add(sp->tr, (uint32_t)pid);
		return r < 0 ? r : -ENOENT;
	}
	memset(o, 0, sizeof(*o));
	o->now_ns = now;
	o->wait_ns = c.wait_ns;
	o->read_ns = c.read_ns;
	o->spans = c.spans;
	have_t = tracker_thread_get(sp->tr, (uint32_t)pid, &t) == 0;
	if (have_t && t.cad_start_ns && t.cad_last_ns >= t.cad_start_ns)
		o->wait_ns += t.cad_last_ns - t.cad_start_ns; /* the span open now */
	if (have_t && t.cur_nr >= 0 && t.cad_enter_ns && now > t.cad_enter_ns && !t.api) {
		if (t.cad_cls & FTBPF_SC_CAD_WAIT)
			o->wait_ns += now - t.cad_enter_ns;
		else if ((t.cad_cls & FTBPF_SC_CAD_READ) &&
			 now - t.cad_enter_ns >= FTBPF_CAD_READ_MIN_NS)
			o->read_ns += now - t.cad_enter_ns;
	}
	if (have_t && t.api && t.api_since_ns && now > t.api_since_ns) /* in a probed call */
		o->wait_ns += now - t.api_since_ns;
	/* the ring, oldest first: spans - FTBPF_CAD_RING .. spans - 1 */
	for (uint64_t i = c.spans > FTBPF_CAD_RING ? c.spans - FTBPF_CAD_RING : 0; i < c.spans;
	     i++) {
		const struct ftbpf_cad_span *sp2 = &c.ring[i & (FTBPF_CAD_RING - 1)];

		if (o->nspan > 0 && sp2->end_ns < o->span_end[o->nspan - 1])
			continue; /* torn by a write during the copy */
		o->span_start[o->nspan] = sp2->start_ns;
		o->span_end[o->nspan] = sp2->end_ns;
		o->nspan++;
	}
	/* the closed own spans, oldest first */
	for (uint64_t i = c.nown > FTBPF_CAD_OWN_RING ? c.nown - FTBPF_CAD_OWN_RING : 0;
	     i < c.nown && o->nown < CAD_OWN; i++) {
		const struct ftbpf_cad_own *w = &c.own[i & (FTBPF_CAD_OWN_RING - 1)];

		if (o->nown > 0 && w->start_ns < o->own_start[o->nown - 1])
			continue; /* torn by a write during the copy */
		o->own_start[o->nown] = w->start_ns;
		o->own_end[o->nown] = w->start_ns + (uint64_t)w->len_us * 1000;
		o->own_kind[o->nown] = (uint8_t)w->kind;
		o->nown++;
	}
	return 0;
}

int sampler_sample(struct sampler *sp, int pid, uint64_t now, struct det_sample *s,
		   struct sample_memory *mem)
{
	const struct ftbpf_task_snap *sn = sampler_task(sp, (uint32_t)pid);
	struct ftbpf_thread t;
	struct proc_stat st;

	s->cpu_valid = 0;
	s->wchan[0] = 0;
	s->wait_since_ns = 0;
	if (sp->tr && tracker_thread_get(sp->tr, (uint32_t)pid, &t) == 0) {
		s->cur_nr = t.cur_nr;
		s->enter_ns = t.enter_ns;
		s->last_exit_ns = t.last_exit_ns;
		s->progress_ns = t.progress_ns;
		s->gpu_since_ns = t.gpu_since_ns;
		s->gpu_req = t.gpu_req;
		s->api = t.api;
		s->api_since_ns = t.api_since_ns;
		s->api_seq = t.api_seq;
		s->wait_since_ns = wait_since(&t, now);
	} else if (!sp->tr && mem) {
		sample_proc(pid, now, s, mem);
	} else {
		s->cur_nr = -1; /* no syscall seen since it is watched */
	}
	s->others_cpu_ns = 0;
	s->others_dstate = 0;
	if (sn) {
		s->task_state = sampler_state_char(sn);
		s->cpu_ns = sn->utime_ns + sn->stime_ns;
		s->cpu_valid = 1;
		for (size_t i = 0; i < sp->nsnap; i++) /* its other threads */
			if (sp->snap[i].tgid == (uint32_t)pid && sp->snap[i].tid != (uint32_t)pid) {
				s->others_cpu_ns += sp->snap[i].utime_ns + sp->snap[i].stime_ns;
				s->others_dstate |= sampler_state_char(&sp->snap[i]) == 'D';
			}
	} else if (procfs_stat(pid, pid, &st) == 0) {
		s->task_state = st.state;
		s->cpu_ns = st.utime_ns + st.stime_ns;
		s->cpu_valid = 1;
	} else if (procfs_stat(pid, -1, &st) < 0) {
		return -ESRCH;
	}
	/* the wait channel of what the detector may call blocked (in it half a second or more):
	 * not a /proc read per process per sample */
	if (s->task_state == 'D' ||
	    (s->cur_nr >= 0 && now > s->enter_ns && now - s->enter_ns >= 500000000ull))
		procfs_wchan(pid, pid, s->wchan, sizeof(s->wchan));
	return 0;
}

int sampler_kstack(struct sampler *sp, int pid, int tid, struct kstack *ret)
{
	const struct ftbpf_task_snap *sn = sampler_task(sp, (uint32_t)tid);
	char buf[4096], sym[160];
	int r;

	kstack_init(ret);
	if (sn && sn->nr_stack > 0) {
		ksyms_try(sp, clock_mono_ns()); /* if it could not be read at start */
		for (int i = 0; sp->ksyms && i < sn->nr_stack && i < FTBPF_STACK_DEPTH; i++)
			(void)kstack_add(ret, ksyms_format(sp->ksyms, sn->stack[i], sym,
							   sizeof(sym))); /* 24 always fit */
		if (ret->n)
			return 0;
	}
	r = procfs_kstack(pid, tid, buf, sizeof(buf));
	return r < 0 ? r : kstack_parse_proc(ret, buf, 1);
}

struct json_object *sampler_kstack_json(struct sampler *sp, int pid, int tid)
{
	struct kstack ks;

	(void)sampler_kstack(sp, pid, tid, &ks); /* none read: an empty array */
	return kstack_json(&ks);
}
