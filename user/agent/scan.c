/* Watching the ranks, once per scan: see scan.h. */
#include "agent/scan.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/cadwatch.h"
#include "agent/eventlog.h"
#include "agent/views.h"
#include "ftbpf/slot.h"
#include "lib/config.h"
#include "lib/ranks.h"
#include "lib/syscalls.h"
#include "os/clock.h"
#include "os/procfs.h"
#include "proto/mesh_proto.h"
#include "watch/gpuprobe.h"
#include "watch/inspector.h"
#include "watch/tracker.h"

/* ---- GPU device majors ---- */
static void gpu_major_add(struct scan *w, unsigned major)
{
	for (int i = 0; i < w->ngpu; i++)
		if (w->gpu_majors[i] == major)
			return;
	if (w->ngpu < (int)(sizeof(w->gpu_majors) / sizeof(w->gpu_majors[0])) &&
	    tracker_gpu_major_add(w->tr, major) == 0)
		w->gpu_majors[w->ngpu++] = major;
}

/* The majors /proc/devices gives GPU drivers (nvidia, nvidia-uvm, nvidia-caps,
 * nvidia-nvlink, DRM, AMD kfd), plus the configured ones. */
static void gpu_majors_setup(struct scan *w, const char *extra_list)
{
	unsigned extra[32];
	char line[128], name[64];
	int chars = 0, n;
	unsigned major;
	FILE *f = fopen("/proc/devices", "re");

	while (f && fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "Character devices:", 18))
			chars = 1;
		else if (!strncmp(line, "Block devices:", 14))
			chars = 0;
		else if (chars && sscanf(line, "%u %63s", &major, name) == 2 &&
			 (!strncmp(name, "nvidia", 6) || !strcmp(name, "drm") ||
			  !strcmp(name, "kfd")))
			gpu_major_add(w, major);
	}
	if (f)
		fclose(f);
	n = config_parse_majors(extra_list, extra, 32);
	for (int i = 0; i < n; i++)
		gpu_major_add(w, extra[i]);
}

struct json_object *scan_gpu_majors_json(const struct scan *w)
{
	struct json_object *g = json_object_new_array();

	for (int i = 0; i < w->ngpu; i++)
		json_object_array_add(g, json_object_new_int((int)w->gpu_majors[i]));
	return g;
}

void scan_init(struct scan *w, struct tracker *tr, struct gpuprobe *gp, struct ranks *ranks,
	       struct eventlog *el, const struct ftbpf_config *cfg)
{
	memset(w, 0, sizeof(*w));
	w->tr = tr;
	w->gp = gp;
	w->ranks = ranks;
	w->el = el;
	sampler_init(&w->sp, tr);
	det_params_from_seconds(&w->dp, config_soft_ceiling(cfg), cfg->hard_timeout_s,
				cfg->spin_threshold_s);
	w->dp.restart_code = cfg->restart_exit_code;
	w->dp.stop_code = cfg->stop_exit_code;
	w->dp.soft_auto = cfg->soft_auto;
	w->dp.auto_k = cfg->soft_timeout_k;
	w->dp.auto_floor_ns = (uint64_t)(cfg->soft_timeout_floor_s * CLOCK_NS_PER_S);
	cadwatch_init(&w->cw, el, &w->sp, cfg);
	gpu_majors_setup(w, cfg->gpu_majors);
}

void scan_fini(struct scan *w)
{
	sampler_fini(&w->sp);
	cadwatch_fini(&w->cw);
	free(w->eval_d);
	free(w->eval_s);
	free(w->eval_map);
	w->eval_d = NULL;
	w->eval_s = NULL;
	w->eval_map = NULL;
}

/* ---- NCCL communicators and CUDA/NCCL probes ---- */
static int comm_one(void *ctx, const struct ftbpf_comm_key *key, const struct ftbpf_comm *c)
{
	struct scan *w = ctx;
	struct rank *k = ranks_find_live(w->ranks, (int)key->tgid);
	struct det_comm *d;

	if (!k || k->s.exited) {
		if (!tracker_is_tracked(w->tr, key->tgid)) { /* its process is gone */
			const struct rank *o = ranks_find(w->ranks, (int)key->tgid);
			struct ftbpf_proc p;
			uint32_t uid = FTBPF_UID_ALL;

			if (o)
				uid = o->uid;
			else if (tracker_proc_get(w->tr, key->tgid, &p) == 0)
				uid = p.uid;
			(void)tracker_comm_delete(w->tr, key, uid);
		}
		return 0;
	}
	if (k->s.ncomm == DET_MAX_COMMS)
		return 0;
	d = &k->s.comm[k->s.ncomm++];
	d->id = c->flags & FTBPF_COMM_NO_ID ? 0 : c->id;
	d->flags =
	    c->flags & (DET_COMM_MPI | DET_COMM_GRAPH | DET_COMM_DEVICE | DET_COMM_UNALIGNED);
	d->key_kind = key->kind;
	d->key_comm = key->comm;
	d->seq = c->seq;
	d->last_ns = c->last_ns;
	d->count = c->count;
	d->dtype = c->dtype;
	d->api = c->api;
	d->rank = c->rank;
	d->nranks = c->nranks;
	for (int i = 0; i < DET_COMM_HIST && i < FTBPF_COMM_HIST; i++) {
		d->hist[i].seq = c->hist[i].seq;
		d->hist[i].count = c->hist[i].count;
		d->hist[i].api = c->hist[i].api;
		d->hist[i].dtype = c->hist[i].dtype;
	}
	return 0;
}

void scan_begin(struct scan *w)
{
	w->scans++;
	sampler_refresh(&w->sp, 0);
	for (int i = 0; i < w->ranks->n; i++) {
		struct rank *k = w->ranks->v[i];
		int dirty = tracker_maps_dirty_take(w->tr, (uint32_t)k->pid);

		k->s.ncomm = 0;
		if (!w->gp || k->s.exited || (k->maps_scanned && !dirty))
			continue;
		k->maps_scanned = 1;
		/* the files are the rank's owner's: read and probed off the loop */
		if (w->ins && inspector_gpuprobe(w->ins, k->pid, k->pidfd, k->uid) == -EAGAIN)
			k->maps_scanned = 0; /* the inspector is busy: next scan */
	}
	tracker_foreach_comm(w->tr, comm_one, w);
}

/* ---- sampling ---- */
/* Events of a rank (or its children) over its budget were folded by the kernel: say how many,
 * at most every ten seconds per rank, so that the log shows the flood without carrying it. */
static void folded_report(struct scan *w, struct rank *k, uint64_t total, uint64_t now)
{
	if (k->folded_ns && now - k->folded_ns < 10 * CLOCK_NS_PER_S)
		return;
	eventlog_emit(w->el, view_folded(k, total - k->folded_seen, total));
	k->folded_seen = total;
	k->folded_ns = now;
}

/* ---- a rank that waits for its children ---- */
struct child_progress {
	struct scan *w;
	uint64_t latest; /* the latest progress of a tracked descendant */
	int depth;
};

static int child_progress_one(void *ctx, int pid)
{
	struct child_progress *c = ctx;
	struct ftbpf_thread t;

	if (tracker_thread_get(c->w->tr, (uint32_t)pid, &t) < 0)
		return 0; /* not tracked, or no syscall yet */
	if (t.progress_ns > c->latest)
		c->latest = t.progress_ns;
	if (t.cur_nr >= 0 && syscalls_is_child_wait(t.cur_nr) && c->depth < 4) {
		c->depth++;
		procfs_foreach_child(pid, child_progress_one, c);
		c->depth--;
	}
	return 0;
}

/*
 * A rank whose main thread waits for a child (a wrapper the hand-over did not recognise, a
 * Python launcher's subprocess.run, a rank waiting for its compiler) makes progress when its
 * children do: no verdict rests on a wait4 while the work goes on below it.
 */
static void children_progress(struct scan *w, struct rank *k)
{
	struct child_progress c = {w, 0, 0};

	if (k->s.cur_nr < 0 || !syscalls_is_child_wait(k->s.cur_nr))
		return;
	procfs_foreach_child(k->pid, child_progress_one, &c);
	if (c.latest > k->s.progress_ns)
		k->s.progress_ns = c.latest;
}

static void sample_rank(struct scan *w, struct rank *k, uint64_t now)
{
	struct ftbpf_proc p;
	struct ftbpf_thread t;

	k->s.pid = k->pid;
	k->s.rank = k->id.rank;
	k->s.world_size = k->id.world_size;
	k->s.killed = k->killed_by_agent;
	k->s.adopted_ns = k->adopted_ns;
	if (k->s.exited)
		return;
	k->s.asked = rank_asked(k);
	if (tracker_proc_get(w->tr, k->pid, &p) < 0)
		memset(&p, 0, sizeof(p));
	if (p.ev_folded > k->folded_seen)
		folded_report(w, k, p.ev_folded, now);
	if (p.flags & FTBPF_PROC_EXITED) {
		/* exited while no agent consumed the event (restart) */
		k->s.exited = 1;
		k->s.exit_code = p.exit_code;
		k->s.exit_ns = p.exit_ns;
		if ((p.exit_code & 0x7f) && (int)p.fatal_sig == (p.exit_code & 0x7f)) {
			k->s.sender_pid = p.fatal_sender_pid;
			memcpy(k->s.sender_comm, p.fatal_sender_comm, sizeof(k->s.sender_comm));
		}
		return;
	}
	if (sampler_sample(&w->sp, k->pid, now, &k->s, NULL) < 0) {
		/* gone without an exit event (should not happen; events lost) */
		k->s.exited = 1;
		k->s.exit_ns = now;
		return;
	}
	children_progress(w, k);
	/* a collective issued (or begun by its device, or a graph launched) is progress, from
	 * whichever thread */
	for (int i = 0; i < k->s.ncomm; i++)
		if (k->s.comm[i].last_ns > k->s.progress_ns && k->s.comm[i].last_ns <= now)
			k->s.progress_ns = k->s.comm[i].last_ns;
	if (tracker_thread_get(w->tr, k->pid, &t) == 0) {
		k->api_calls = t.api_calls;
		k->syscalls = t.syscalls;
		k->progress = t.progress;
	}
	if (k->slot) { /* ftbpf_ping() from the client library is progress too */
		uint64_t ping = __atomic_load_n(&k->slot->ping_ns, __ATOMIC_RELAXED);

		/* a ping since this scan's clock was read is progress now: a rank that pings more
		 * often than a busy agent's scan takes would otherwise never count (decide_faults'
		 * bystander, 50 ms steps, was hung after 600 s on a loaded host); a ping further
		 * ahead is no time of this host's */
		if (ping > now && ping - now < CLOCK_NS_PER_S)
			ping = now;

		if (ping > k->s.progress_ns && ping <= now)
			k->s.progress_ns = ping;
	}
	k->nthreads = sampler_nthreads(&w->sp, k->pid);
}

void scan_sample(struct scan *w, uint64_t now)
{
	for (int i = 0; i < w->ranks->n; i++) {
		struct rank *k = w->ranks->v[i];

		sample_rank(w, k, now);
		det_rank_update(&k->d, &k->s, now, &w->dp);
		cadwatch_rank(&w->cw, &w->sp, k, now);
	}
}

/* Rank k's end began the end of its hung job: who ended it, and the hang kept. */
static void hang_ended(struct job *j, const struct rank *k)
{
	int launchers[2] = {k->launcher_pid, k->wrapper_pid};
	struct jobend e = {.pid = k->pid, .rank = k->id.rank, .status = k->s.exit_code};

	e.by = jobend_cause(&k->s, launchers, 2, k->oom_victim);
	if (e.by == JOBEND_LAUNCHER || e.by == JOBEND_OPERATOR) {
		e.sender_pid = k->s.sender_pid;
		memcpy(e.sender_comm, k->s.sender_comm, sizeof(e.sender_comm));
	}
	job_keep_hang(j, &e);
}

int scan_judge(struct scan *w, struct job *j, uint64_t now)
{
	int m = j->nmembers, n;
	struct det_pace pace;

	if (m > w->eval_cap) {
		struct det_rank *nd = realloc(w->eval_d, (size_t)m * sizeof(*nd));
		struct det_sample *ns = nd ? realloc(w->eval_s, (size_t)m * sizeof(*ns)) : NULL;
		int *nm = ns ? realloc(w->eval_map, (size_t)m * sizeof(*nm)) : NULL;

		if (nd)
			w->eval_d = nd;
		if (ns)
			w->eval_s = ns;
		if (!nm)
			return -ENOMEM;
		w->eval_map = nm;
		w->eval_cap = m;
	}
	/* the job's ranks, its strays left out (their ends say nothing of the job) */
	n = 0;
	for (int i = 0; i < m; i++) {
		if (rank_is_stray(j, j->members[i])) {
			j->members[i]->d.hung = 0;
			j->members[i]->d.culprit = 0;
			continue;
		}
		w->eval_map[n] = i;
		w->eval_d[n] = j->members[i]->d;
		w->eval_s[n] = j->members[i]->s;
		n++;
	}
	/* a hung run whose ranks begin to end stays a hang (who ended it is said): no failure */
	if (!j->hang_end.by) {
		int f = jobend_of_hang(&j->res, w->eval_s, n, j->judged_ns);

		if (f >= 0)
			hang_ended(j, j->members[w->eval_map[f]]);
	}
	for (int x = 0; x < n && j->hang_end.by; x++)
		w->eval_s[x].ends_hang = w->eval_s[x].exited;
	cadwatch_job(&w->cw, j, now, &pace);
	det_job_eval_paced(w->eval_d, w->eval_s, n, now, 0, &w->dp, &pace, &j->res);
	j->judged_ns = now;
	j->state = det_job_state(w->eval_s, n, &j->res, &w->dp, job_hang_end(j));
	for (int x = 0; x < n; x++) {
		j->members[w->eval_map[x]]->d.hung = w->eval_d[x].hung;
		j->members[w->eval_map[x]]->d.culprit = w->eval_d[x].culprit;
	}
	for (int c = 0; c < j->res.n_culprits; c++) /* indices into the members again */
		j->res.culprits[c] = w->eval_map[j->res.culprits[c]];
	return 0;
}

void scan_health(const struct scan *w, struct mesh_health *h)
{
	memset(h, 0, sizeof(*h));
	h->culprit_rank = -1;
	for (int i = 0; i < w->ranks->n; i++) {
		const struct rank *k = w->ranks->v[i];

		if (h->ranks < 0xffff)
			h->ranks++;
		if (k->s.exited) {
			h->dead += (k->s.exit_code & 0x7f) || ((k->s.exit_code >> 8) & 0xff);
			continue;
		}
		h->hung += k->d.hung;
		h->running += k->d.state == RS_RUNNING;
		h->blocked += k->d.state != RS_RUNNING;
		if (k->d.culprit && h->culprit_rank < 0)
			h->culprit_rank = k->id.rank;
	}
	h->jobs = (uint16_t)(w->ranks->njobs > 0xffff ? 0xffff : w->ranks->njobs);
}
