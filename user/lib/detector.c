/*
 * Rank states, hang and culprit. Definitions (also in docs/architecture.md):
 *  progress  = a completed syscall of the rank's main thread that is not an empty wait or a
 *              sleep (classified in the BPF program at sys_exit). CPU time is not progress.
 *  job hung  = the job has live ranks and none of them made progress for soft_timeout.
 *  culprit   = the first rank to die abnormally; else the rank(s) not where the majority is;
 *              else, without a majority (two ranks), the rank(s) with the most suspicious state.
 */
#include "lib/detector.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "lib/config.h"
#include "ftbpf/abi.h"
#include "lib/gpuapi.h"
#include "lib/syscalls.h"

#define NS 1000000000ull

void det_params_from_seconds(struct det_params *p, double soft, double hard, double spin)
{
	p->soft_ns = (uint64_t)(soft * 1e9);
	p->hard_ns = (uint64_t)(hard * 1e9);
	p->spin_ns = (uint64_t)(spin * 1e9);
	p->block_min_ns = 500000000ull;
	p->restart_code = 0;
	p->stop_code = 0;
	p->soft_auto = 0;
	p->auto_k = 3;
	p->auto_floor_ns = 4 * NS;
}

/* The rank states. Scores order the suspects when nothing else names one: a stopped rank
 * (95) or an unreaped one (92) is rarely innocent; a rank waiting for the device or NCCL (20,
 * 15) usually waits for someone else. Blocked (40) is refined by its syscall in score_of. */
static const struct det_state_info states[RS__N] = {
    [RS_RUNNING] = {"running", 30, 0},
    [RS_BLOCKED] = {"blocked", 40, DET_SINCE_EVENT},
    [RS_SPINNING] = {"spinning", 80, DET_SINCE_EVENT},
    [RS_STOPPED] = {"stopped", 95, 0},
    [RS_DSTATE] = {"dstate", 70, 0},
    [RS_ZOMBIE] = {"zombie", 92, 0},
    [RS_EXITED] = {"exited", 90, DET_SINCE_EVENT}, /* 100 when it died abnormally */
    [RS_GPU] = {"gpu_driver", 75, DET_WAITS_FOR_OTHERS | DET_SINCE_EVENT},
    [RS_GPU_SYNC] = {"gpu_sync", 20, DET_WAITS_FOR_OTHERS | DET_SINCE_EVENT},
    [RS_NCCL] = {"nccl", 15, DET_WAITS_FOR_OTHERS | DET_SINCE_EVENT},
    [RS_MPI] = {"mpi", 15, DET_WAITS_FOR_OTHERS | DET_SINCE_EVENT},
};

const struct det_state_info *det_state_info(enum rank_state s)
{
	static const struct det_state_info unknown = {"unknown", 0, 0};

	return (unsigned)s < RS__N ? &states[s] : &unknown;
}

const char *det_state_name(enum rank_state s)
{
	return det_state_info(s)->name;
}

const char *det_exit_text(int status, char *buf, int len)
{
	int sig = status & 0x7f;

	if (sig) {
		const char *n = config_signal_name(sig);

		if (n)
			snprintf(buf, len, "killed by SIG%s%s", n,
				 status & 0x80 ? " (core dumped)" : "");
		else
			snprintf(buf, len, "killed by signal %d", sig);
	} else {
		snprintf(buf, len, "exited with code %d", (status >> 8) & 0xff);
	}
	return buf;
}

static uint64_t since(uint64_t now, uint64_t t)
{
	return now > t ? now - t : 0;
}

static int state_key(enum rank_state st, int nr)
{
	return (int)st * 1024 + (nr >= 0 ? nr % 1024 : 1023);
}

/* An exit with a code a decision asks for (restart 42, stop 93) is not abnormal. */
static int asked_code(int status, const struct det_params *p)
{
	int code = (status >> 8) & 0xff;

	return !(status & 0x7f) && code && (code == p->restart_code || code == p->stop_code);
}

static int score_of(const struct det_rank *d, const struct det_sample *s,
		    const struct det_params *p)
{
	if (d->state == RS_EXITED && ((s->exit_code & 0x7f) || ((s->exit_code >> 8) & 0xff)) &&
	    !asked_code(s->exit_code, p))
		return 100; /* died abnormally */
	if (d->state == RS_BLOCKED) {
		if (syscalls_is_sleep(d->syscall))
			return 60;
		if (syscalls_is_comm_wait(d->syscall))
			return 10;
	}
	return det_state_info(d->state)->score;
}

/* The communicator the rank issued its latest collective on, or NULL. */
static const struct det_comm *last_comm(const struct det_sample *s)
{
	const struct det_comm *c = NULL;

	for (int i = 0; i < s->ncomm; i++)
		if (s->comm[i].seq && !(s->comm[i].flags & DET_COMM_DEVICE) &&
		    (!c || s->comm[i].last_ns > c->last_ns))
			c = &s->comm[i];
	return c;
}

/* "ncclAllReduce #42 (1024 x float32) on comm 3f2a...": collective seq of the communicator as
 * its history has it, else (older than the history) its latest call. */
static void coll_text(const struct det_comm *c, uint64_t seq, char *buf, size_t len)
{
	char id[24] = "(unidentified)";
	unsigned api = c->api, dtype = c->dtype;
	uint64_t count = c->count;

	for (int i = 0; i < DET_COMM_HIST; i++)
		if (c->hist[i].seq == seq && seq) {
			api = c->hist[i].api;
			dtype = c->hist[i].dtype;
			count = c->hist[i].count;
		}
	if (c->id)
		snprintf(id, sizeof(id), "%016llx", (unsigned long long)c->id);
	if (c->flags & DET_COMM_GRAPH)
		snprintf(buf, len, "cuGraphLaunch #%llu", (unsigned long long)seq);
	else if (c->flags & DET_COMM_MPI)
		snprintf(buf, len, "%s #%llu (%llu elements) on comm %s", gpuapi_name(api),
			 (unsigned long long)seq, (unsigned long long)count, id);
	else if (c->flags & DET_COMM_DEVICE)
		snprintf(buf, len, "%s #%llu (%llu elements)", gpuapi_name(api),
			 (unsigned long long)seq, (unsigned long long)count);
	else
		snprintf(buf, len, "%s #%llu (%llu x %s) on comm %s", gpuapi_name(api),
			 (unsigned long long)seq, (unsigned long long)count,
			 gpuapi_dtype_name(dtype), id);
}

/* "an NCCL communicator", "an MPI communicator", ... */
static const char *comm_kind(const struct det_comm *c)
{
	return c->flags & DET_COMM_MPI	   ? "an MPI communicator"
	       : c->flags & DET_COMM_GRAPH ? "its CUDA graphs"
					   : "an NCCL communicator";
}

static void api_state(struct det_rank *d, const struct det_sample *s, uint64_t now)
{
	const struct det_comm *c = last_comm(s);
	char coll[128] = "";
	double secs = (double)since(now, s->api_since_ns) / NS;

	d->syscall = (int)s->api;
	d->state_since_ns = s->api_since_ns;
	if (FTBPF_API_IS_CUDA(s->api)) {
		d->state = RS_GPU_SYNC;
		if (c)
			coll_text(c, c->seq, coll, sizeof(coll));
		snprintf(d->reason, sizeof(d->reason),
			 "in a GPU synchronisation (%s) for %.1fs%s%s", gpuapi_name(s->api), secs,
			 c ? ", after " : "", coll);
	} else {
		int mpi = FTBPF_API_IS_MPI(s->api);

		d->state = mpi ? RS_MPI : RS_NCCL;
		if (FTBPF_API_IS_COLL(s->api) && c)
			snprintf(d->reason, sizeof(d->reason),
				 "in %s collective #%llu (%s) for %.1fs", mpi ? "MPI" : "NCCL",
				 (unsigned long long)s->api_seq, gpuapi_name(s->api), secs);
		else
			snprintf(d->reason, sizeof(d->reason), "inside %s for %.1fs",
				 gpuapi_name(s->api), secs);
	}
}

void det_rank_update(struct det_rank *d, const struct det_sample *s, uint64_t now,
		     const struct det_params *p)
{
	char nm[32], tmp[64];
	uint64_t base = s->progress_ns > s->adopted_ns ? s->progress_ns : s->adopted_ns;
	uint64_t quiet_since = s->last_exit_ns > s->adopted_ns ? s->last_exit_ns : s->adopted_ns;
	int key;

	d->syscall = -1;
	d->no_progress_ns = since(now, base);
	if (s->cpu_valid && d->have_prev && now > d->prev_ns) {
		d->cpu_frac = (double)(s->cpu_ns - d->prev_cpu_ns) / (double)(now - d->prev_ns);
		d->others_frac = s->others_cpu_ns >= d->prev_others_ns
				     ? (double)(s->others_cpu_ns - d->prev_others_ns) /
					   (double)(now - d->prev_ns)
				     : 0;
	} else if (!s->cpu_valid) {
		d->cpu_frac = 0;
		d->others_frac = 0;
	}
	if (s->cpu_valid) {
		d->prev_others_ns = s->others_cpu_ns;
		d->prev_cpu_ns = s->cpu_ns;
		d->prev_ns = now;
		d->have_prev = 1;
	}

	if (s->exited) {
		d->state = RS_EXITED;
		d->state_since_ns = s->exit_ns;
		det_exit_text(s->exit_code, tmp, sizeof(tmp));
		if ((s->exit_code & 0x7f) && s->sender_pid)
			snprintf(d->reason, sizeof(d->reason), "%s from pid %u (%.16s)", tmp,
				 s->sender_pid, s->sender_comm);
		else
			snprintf(d->reason, sizeof(d->reason), "%s", tmp);
	} else if (s->task_state == 'T' || s->task_state == 't') {
		d->state = RS_STOPPED;
		snprintf(d->reason, sizeof(d->reason), "%s",
			 s->task_state == 't' ? "stopped by a tracer"
					      : "stopped (job-control signal)");
	} else if (s->task_state == 'Z' || s->task_state == 'X') {
		d->state = RS_ZOMBIE;
		snprintf(d->reason, sizeof(d->reason), "main thread exited, process not reaped");
	} else if (s->task_state == 'D') {
		d->state = RS_DSTATE;
		d->syscall = s->cur_nr;
		if (s->cur_nr >= 0)
			snprintf(d->reason, sizeof(d->reason), "uninterruptible sleep in %s%s%s",
				 syscalls_format(s->cur_nr, nm, sizeof(nm)),
				 *s->wchan ? ", wchan " : "", s->wchan);
		else
			snprintf(d->reason, sizeof(d->reason), "uninterruptible sleep%s%s",
				 *s->wchan ? ", wchan " : "", s->wchan);
	} else if (s->api && since(now, s->api_since_ns) >= p->block_min_ns) {
		api_state(d, s, now);
	} else if (s->gpu_since_ns && s->cur_nr >= 0 &&
		   since(now, s->gpu_since_ns) >= p->block_min_ns) {
		d->state = RS_GPU;
		d->syscall = s->cur_nr;
		d->state_since_ns = s->gpu_since_ns;
		snprintf(d->reason, sizeof(d->reason),
			 "inside the GPU driver (ioctl 0x%x) for %.1fs%s%s%s", s->gpu_req,
			 (double)since(now, s->gpu_since_ns) / NS, *s->wchan ? " (wchan " : "",
			 s->wchan, *s->wchan ? ")" : "");
	} else if (s->cur_nr >= 0 && since(now, s->enter_ns) >= p->block_min_ns) {
		d->state = RS_BLOCKED;
		d->syscall = s->cur_nr;
		d->state_since_ns = s->enter_ns;
		snprintf(d->reason, sizeof(d->reason), "blocked in %s for %.1fs%s%s",
			 syscalls_format(s->cur_nr, nm, sizeof(nm)),
			 (double)since(now, s->enter_ns) / NS, *s->wchan ? " (wchan " : "",
			 s->wchan);
		if (*s->wchan)
			strncat(d->reason, ")", sizeof(d->reason) - strlen(d->reason) - 1);
	} else if (s->cur_nr < 0 &&
		   (d->cpu_frac >= 0.5 || (s->task_state == 'R' && d->cpu_frac > 0.05)) &&
		   since(now, quiet_since) >= p->spin_ns && since(now, base) >= p->spin_ns) {
		/* on CPU, or runnable and getting some on a busy host, without a syscall */
		d->state = RS_SPINNING;
		d->state_since_ns = quiet_since;
		snprintf(d->reason, sizeof(d->reason),
			 "on CPU (%.0f%%) without a syscall for %.1fs", d->cpu_frac * 100,
			 (double)since(now, quiet_since) / NS);
	} else {
		d->state = RS_RUNNING;
		snprintf(d->reason, sizeof(d->reason), "running, last progress %.1fs ago",
			 (double)d->no_progress_ns / NS);
	}

	key = state_key(d->state, d->syscall);
	if (key != d->prev_key || !d->key_since_ns) {
		d->prev_key = key;
		d->key_since_ns = now;
	}
	if (!(det_state_info(d->state)->flags & DET_SINCE_EVENT))
		d->state_since_ns = d->key_since_ns;
	d->score = score_of(d, s, p);
	d->hung = 0;
	d->culprit = 0;
}

static void add_culprit(struct det_job *out, int i)
{
	if (out->n_culprits < DET_MAX_CULPRITS)
		out->culprits[out->n_culprits++] = i;
}

/* The verdict's words (cut to fit: the evidence comes first). */
__attribute__((format(printf, 2, 3))) static void why(struct det_job *out, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(out->why, sizeof(out->why), fmt, ap);
	va_end(ap);
}

/* A host record (device 0) or a device's view (device 1)? */
static int of_view(const struct det_comm *c, int device)
{
	return !!(c->flags & DET_COMM_DEVICE) == device;
}

/* id 0 is a communicator created before the probes were attached (its unique id unseen). */
static const struct det_comm *comm_of(const struct det_sample *s, uint64_t id, int device)
{
	for (int i = 0; i < s->ncomm; i++)
		if (s->comm[i].id == id && of_view(&s->comm[i], device))
			return &s->comm[i];
	return NULL;
}

/* Unidentified communicators can be compared only while each rank has at most one of them
 * (then it is the same one everywhere: the job's world communicator). */
static int anon_comparable(const struct det_sample *s, int n)
{
	for (int i = 0; i < n; i++) {
		int k = 0;

		for (int c = 0; c < s[i].ncomm; c++)
			k += s[i].comm[c].id == 0;
		if (k > 1)
			return 0;
	}
	return 1;
}

/* Waiting for something other ranks do: the device, NCCL, MPI, or a syscall that is not a
 * sleep. */
static int waiting(const struct det_rank *d)
{
	return (det_state_info(d->state)->flags & DET_WAITS_FOR_OTHERS) ||
	       (d->state == RS_BLOCKED && !syscalls_is_sleep(d->syscall));
}

/* A communicator several live ranks here share: its members, the highest count, how many lag
 * behind it, one rank at it, and whether the ranks at it all wait. */
struct comm_view {
	int members, lag, ahead, all_wait;
	uint64_t max;
};

static void comm_look(const struct det_rank *d, const struct det_sample *s, int n, uint64_t id,
		      int device, struct comm_view *v)
{
	memset(v, 0, sizeof(*v));
	v->ahead = -1;
	v->all_wait = 1;
	for (int j = 0; j < n; j++) {
		const struct det_comm *cj = s[j].exited ? NULL : comm_of(&s[j], id, device);

		if (!cj)
			continue;
		v->members++;
		if (cj->seq > v->max)
			v->max = cj->seq;
	}
	for (int j = 0; j < n; j++) {
		const struct det_comm *cj = s[j].exited ? NULL : comm_of(&s[j], id, device);

		if (!cj)
			continue;
		if (cj->seq < v->max) {
			v->lag++;
		} else {
			v->ahead = j;
			if (d)
				v->all_wait &= waiting(&d[j]);
		}
	}
}

/* A rank's CUDA graph launches count only while they are what it does (more recent than any
 * collective it issued itself): replaying a step, not an evaluation on one rank. */
static int graph_current(const struct det_sample *s, const struct det_comm *g)
{
	for (int i = 0; i < s->ncomm; i++)
		if (!(s->comm[i].flags & (DET_COMM_GRAPH | DET_COMM_DEVICE)) &&
		    s->comm[i].last_ns > g->last_ns)
			return 0;
	return 1;
}

/* May this record be compared across ranks for the collective rule? */
static int coll_comparable(const struct det_sample *s, const struct det_comm *x)
{
	if (!x->id || (x->flags & DET_COMM_UNALIGNED))
		return 0;
	return !(x->flags & DET_COMM_GRAPH) || graph_current(s, x);
}

/* The lagging rank does work of its own that is not progress: its I/O (uninterruptible, or a
 * syscall that is not a wait on the others), or another of its threads does (a checkpoint
 * written by a thread). Not a hang at the collectives' pace: the step rule or the ceiling. */
static int lag_exempt(const struct det_rank *d, const struct det_sample *s)
{
	if (d->others_frac >= 0.2 || s->others_dstate || d->state == RS_DSTATE)
		return 1;
	return d->state == RS_BLOCKED && !syscalls_is_sleep(d->syscall) &&
	       !(syscalls_cadence(d->syscall) & FTBPF_SC_CAD_WAIT) && !s->wait_since_ns;
}

int det_counts_differ(const struct det_rank *d, const struct det_sample *s, int n)
{
	for (int i = 0; i < n; i++) {
		if (s[i].exited)
			continue;
		for (int c = 0; c < s[i].ncomm; c++) {
			const struct det_comm *x = &s[i].comm[c];
			int device = !!(x->flags & DET_COMM_DEVICE), members = 0, lag = 0,
			    exempt = 0;
			uint64_t max = 0;

			if (!coll_comparable(&s[i], x))
				continue;
			for (int j = 0; j < n; j++) {
				const struct det_comm *cj =
				    s[j].exited ? NULL : comm_of(&s[j], x->id, device);

				if (cj && coll_comparable(&s[j], cj) && cj->seq > max)
					max = cj->seq;
			}
			for (int j = 0; j < n; j++) {
				const struct det_comm *cj =
				    s[j].exited ? NULL : comm_of(&s[j], x->id, device);

				if (!cj || !coll_comparable(&s[j], cj))
					continue;
				members++;
				if (cj->seq < max) {
					lag++;
					exempt |= d && lag_exempt(&d[j], &s[j]);
				}
			}
			if (members >= 2 && lag && !exempt)
				return 1;
		}
	}
	return 0;
}

/*
 * Collective evidence: on a communicator that several ranks here share, the ranks that issued
 * fewer collectives than the others, while those others wait (in a GPU synchronisation, in
 * NCCL or MPI, or in the kernel), never entered the collective the others wait in; on a
 * device's view (the NCCL profiler's), the ranks whose device began fewer. Of several such
 * communicators the one with the fewest laggards wins. Returns 1 when culprits were named.
 */
static int comm_culprits(struct det_rank *d, const struct det_sample *s, int n, int device,
			 struct det_job *out)
{
	uint64_t best_id = 0, best_max = 0;
	int best_lag = 0, best_ahead = -1, anon = anon_comparable(s, n);
	struct comm_view v;

	for (int i = 0; i < n; i++) {
		if (s[i].exited)
			continue;
		for (int c = 0; c < s[i].ncomm; c++) {
			uint64_t id = s[i].comm[c].id;

			if ((!id && !anon) || !of_view(&s[i].comm[c], device) ||
			    (s[i].comm[c].flags & DET_COMM_UNALIGNED))
				continue;
			comm_look(d, s, n, id, device, &v);
			if (v.members >= 2 && v.lag && v.all_wait &&
			    (!best_lag || v.lag < best_lag)) {
				best_id = id;
				best_max = v.max;
				best_lag = v.lag;
				best_ahead = v.ahead;
			}
		}
	}
	if (!best_lag)
		return 0;
	for (int j = 0; j < n; j++) {
		const struct det_comm *cj = s[j].exited ? NULL : comm_of(&s[j], best_id, device);

		if (cj && cj->seq < best_max)
			add_culprit(out, j);
	}
	{
		int k = out->culprits[0];
		const struct det_comm *ck = comm_of(&s[k], best_id, device);
		const struct det_comm *ca = comm_of(&s[best_ahead], best_id, device);
		char coll[128];

		/* the first collective it missed: what the others issued next after its last */
		coll_text(ca, ck->seq + 1, coll, sizeof(coll));
		if (device)
			why(out,
			    "rank %d's device began %llu of these collectives, the others' "
			    "%llu: it never began %s (the NCCL profiler's view of the devices: "
			    "work before it on that device never ended); every rank issued it "
			    "and waits; rank %d is %s",
			    s[k].rank, (unsigned long long)ck->seq, (unsigned long long)best_max,
			    coll, s[k].rank, d[k].reason);
		else if (ca->flags & DET_COMM_GRAPH)
			why(out,
			    "rank %d launched %llu CUDA graphs, the others %llu: it never "
			    "launched %s, whose collectives the others wait in; it is %s",
			    s[k].rank, (unsigned long long)ck->seq, (unsigned long long)best_max,
			    coll, d[k].reason);
		else
			why(out,
			    "rank %d issued %llu collectives on %s, the others %llu: it never "
			    "entered %s, the first it missed (they wait in #%llu); it is %s",
			    s[k].rank, (unsigned long long)ck->seq, comm_kind(ca),
			    (unsigned long long)best_max, coll, (unsigned long long)best_max,
			    d[k].reason);
	}
	return 1;
}

/*
 * Every live rank of the whole world is here, issued the same collective on a communicator they
 * all share and waits for it (in a GPU synchronisation, NCCL or MPI): the host side cannot tell
 * which device or peer holds it. Returns that communicator, or NULL.
 */
static const struct det_comm *one_collective(const struct det_rank *d, const struct det_sample *s,
					     int n, int *device)
{
	const struct det_comm *c = NULL;
	int live = 0;
	struct comm_view v;

	*device = 0;
	for (int i = 0; i < n; i++) {
		if (s[i].exited)
			continue;
		live++;
		if (d[i].state != RS_GPU_SYNC && d[i].state != RS_NCCL && d[i].state != RS_MPI)
			return NULL;
		for (int k = 0; k < s[i].ncomm; k++)
			*device |= !!(s[i].comm[k].flags & DET_COMM_DEVICE);
		if (!c)
			c = last_comm(&s[i]);
	}
	/* every rank of the world is here: none can be elsewhere, not yet in it */
	if (live < 2 || !c || !c->seq || s[0].world_size != live)
		return NULL;
	comm_look(d, s, n, c->id, 0, &v);
	return v.members == live && !v.lag ? c : NULL;
}

/* The same, said in why with the collective; returns 1. */
static int all_in_one_collective(const struct det_rank *d, const struct det_sample *s, int n,
				 struct det_job *out)
{
	int device;
	const struct det_comm *c = one_collective(d, s, n, &device);
	char coll[128];

	if (!c)
		return 0;
	coll_text(c, c->seq, coll, sizeof(coll));
	if (c->flags & DET_COMM_MPI) { /* no device: the network, the library, a starved host */
		why(out,
		    "every rank issued %s and waits for it (%s): none is missing from it; the "
		    "cause is inside the collective (the network, the MPI library, ranks starved "
		    "of CPU), and the host side cannot tell which rank's",
		    coll, d[0].reason);
		return 1;
	}
	why(out,
	    "every rank issued %s and waits for it (%s): the cause is on a device or inside "
	    "the collective (a kernel that never ends, a device or link fault), and the "
	    "host side cannot tell which rank's; %s",
	    coll, d[0].reason,
	    device ? "the devices' view (NCCL profiler) shows every device began it too"
		   : "no device-side view names it (NCCL_PROFILER_PLUGIN=the path of "
		     "libnccl-profiler-ftbpf.so gives one)");
	return 1;
}

int det_rank_working(const struct det_rank *d, const struct det_sample *s)
{
	if (s->exited)
		return 0;
	/* its other threads compute or do I/O (a checkpoint written by a thread, a loader) */
	if (d->others_frac >= 0.2 || s->others_dstate)
		return 1;
	switch (d->state) {
	case RS_RUNNING:
	case RS_SPINNING: /* computing, however little CPU a busy host leaves it */
		if (s->wait_since_ns)
			return 0;
		if (s->cur_nr < 0)
			return d->cpu_frac >= 0.02 || s->task_state == 'R';
		return !syscalls_is_sleep(s->cur_nr) &&
		       !(syscalls_cadence(s->cur_nr) & FTBPF_SC_CAD_WAIT);
	case RS_BLOCKED: /* its own I/O (a save, its input), not a wait on the others (a read of
			    a socket is one: the kernel side says so in wait_since_ns) */
		return !syscalls_is_sleep(d->syscall) &&
		       !(syscalls_cadence(d->syscall) & FTBPF_SC_CAD_WAIT) && !s->wait_since_ns;
	case RS_DSTATE:
	case RS_GPU:
	case RS_GPU_SYNC: /* its device computes (a long kernel is not a hang of the others) */
		return 1;
	default:
		return 0;
	}
}

/* max(auto_k x p99, floor), or 0 when that is not shorter than the ceiling */
static uint64_t at_pace(const struct det_params *p, uint64_t p99)
{
	uint64_t t = (uint64_t)(p->auto_k * (double)p99);

	if (t < p->auto_floor_ns)
		t = p->auto_floor_ns;
	return t < p->soft_ns ? t : 0;
}

/* The soft timeout that applies to the job now (see det_job_eval_paced). */
static uint64_t paced_soft(const struct det_rank *d, const struct det_sample *s, int n,
			   const struct det_params *p, const struct det_pace *pace, int *paced,
			   int *paced_coll)
{
	uint64_t t, coll = 0;
	int device;

	*paced = 0;
	*paced_coll = 0;
	/* collectives: counts that differ and do not advance, whatever the ranks do */
	if (p->soft_auto && pace && pace->p99_coll_ns && det_counts_differ(d, s, n))
		coll = at_pace(p, pace->p99_coll_ns);
	if (coll) {
		*paced = 1;
		*paced_coll = 1;
	}
	if (!p->soft_auto || !pace || !pace->p99_step_ns || !pace->complete)
		return coll ? coll : p->soft_ns;
	for (int i = 0; i < n; i++)
		if (det_rank_working(&d[i], &s[i]))
			return coll ? coll : p->soft_ns;
	/* every rank inside one collective, none missing from it: a long collective looks the
	 * same (a starved host, a slow link); not a wait at the steps' pace */
	if (one_collective(d, s, n, &device))
		return coll ? coll : p->soft_ns;
	t = at_pace(p, pace->p99_step_ns);
	if (!t)
		return coll ? coll : p->soft_ns;
	*paced = 1;
	if (coll && coll <= t)
		return coll;
	*paced_coll = 0;
	return t;
}

void det_job_eval(struct det_rank *d, const struct det_sample *s, int n, uint64_t now,
		  uint64_t activity_ns, const struct det_params *p, struct det_job *out)
{
	det_job_eval_paced(d, s, n, now, activity_ns, p, NULL, out);
}

void det_job_eval_paced(struct det_rank *d, const struct det_sample *s, int n, uint64_t now,
			uint64_t activity_ns, const struct det_params *p,
			const struct det_pace *pace, struct det_job *out)
{
	uint64_t last = activity_ns;
	int first_dead = -1, maxs = -1, mins = 1000;

	memset(out, 0, sizeof(*out));
	for (int i = 0; i < n; i++) {
		if (s[i].exited) {
			out->exited++;
			if (d[i].score == 100 && !s[i].killed && !s[i].ends_hang &&
			    (first_dead < 0 || s[i].exit_ns < s[first_dead].exit_ns))
				first_dead = i;
			continue;
		}
		out->live++;
		uint64_t b =
		    s[i].progress_ns > s[i].adopted_ns ? s[i].progress_ns : s[i].adopted_ns;
		if (b > last)
			last = b;
	}
	if (first_dead >= 0) {
		out->failed = 1;
		out->rule = DET_RULE_DEAD;
		add_culprit(out, first_dead);
		d[first_dead].culprit = 1;
		snprintf(out->why, sizeof(out->why), "rank %d (pid %d) was the first to die: %s",
			 s[first_dead].rank, s[first_dead].pid, d[first_dead].reason);
	}
	if (!out->live)
		return;
	out->no_progress_ns = since(now, last);
	out->soft_ns = paced_soft(d, s, n, p, pace, &out->paced, &out->paced_coll);
	out->hard_ns =
	    p->hard_ns > p->soft_ns ? p->hard_ns - p->soft_ns + out->soft_ns : p->hard_ns;
	out->hung = out->no_progress_ns >= out->soft_ns;
	out->hard = out->no_progress_ns >= out->hard_ns;

	if (first_dead < 0 && comm_culprits(d, s, n, 0, out)) {
		out->rule = DET_RULE_NCCL;
	} else if (first_dead < 0 && comm_culprits(d, s, n, 1, out)) {
		out->rule = DET_RULE_DEVICE;
	} else if (first_dead < 0 && all_in_one_collective(d, s, n, out)) {
		out->rule = DET_RULE_ON_DEVICE;
	} else if (first_dead < 0) {
		/* Majority posture among all ranks (an early normal exit is a posture too). */
		int best_cnt = 0, best_key = -1;

		for (int i = 0; i < n; i++) {
			int k = state_key(d[i].state, d[i].syscall), cnt = 0;

			for (int j = 0; j < n; j++)
				cnt += state_key(d[j].state, d[j].syscall) == k;
			if (cnt > best_cnt) {
				best_cnt = cnt;
				best_key = k;
			}
			if (d[i].score > maxs)
				maxs = d[i].score;
			if (d[i].score < mins)
				mins = d[i].score;
		}
		if (n >= 3 && best_cnt * 2 > n && best_cnt < n) {
			int top = -1;

			for (int i = 0; i < n; i++)
				if (state_key(d[i].state, d[i].syscall) != best_key &&
				    d[i].score > top)
					top = d[i].score;
			for (int i = 0; i < n; i++)
				if (state_key(d[i].state, d[i].syscall) != best_key &&
				    d[i].score == top)
					add_culprit(out, i);
			out->rule = DET_RULE_MAJORITY;
			snprintf(out->why, sizeof(out->why),
				 "%d of %d ranks are %s; rank %d is not: %s", best_cnt, n,
				 det_state_name(best_key / 1024), s[out->culprits[0]].rank,
				 d[out->culprits[0]].reason);
		} else if (n == 1 && s[0].world_size <= 1) {
			/* a job of one rank: whatever it waits for, it is the job's own doing */
			add_culprit(out, 0);
			out->rule = DET_RULE_ONLY;
			snprintf(out->why, sizeof(out->why), "rank %d, the job's only rank, is %s",
				 s[0].rank, d[0].reason);
		} else if (maxs > mins || (maxs >= 60 && n > 0)) {
			for (int i = 0; i < n; i++)
				if (d[i].score == maxs)
					add_culprit(out, i);
			out->rule = DET_RULE_SCORE;
			snprintf(out->why, sizeof(out->why),
				 "rank %d is where no other rank waits: %s",
				 s[out->culprits[0]].rank, d[out->culprits[0]].reason);
		} else {
			out->rule = DET_RULE_ELSEWHERE;
			snprintf(out->why, sizeof(out->why),
				 "every rank here is %s: the cause may be outside this host",
				 n ? d[0].reason : "idle");
		}
	}
	if (!out->hung)
		return;
	for (int i = 0; i < n; i++)
		d[i].hung = !s[i].exited;
	for (int i = 0; i < out->n_culprits; i++)
		d[out->culprits[i]].culprit = 1;
}

static const char *const job_state_names[DJS__N] = {
    [DJS_OK] = "ok",
    [DJS_HUNG] = "hung",
    [DJS_FAILED] = "failed",
    [DJS_FINISHED] = "finished",
    [DJS_PREEMPTED] = "preempted",
    [DJS_RESTARTING] = "restarting",
    [DJS_STOPPED] = "stopped",
};

const char *det_job_state_name(enum det_job_state st)
{
	return (unsigned)st < DJS__N ? job_state_names[st] : "unknown";
}

enum det_job_state det_job_state(const struct det_sample *s, int n, const struct det_job *res,
				 const struct det_params *p, int hang_end)
{
	int stop = 0, restart = 0, saved = 0;

	for (int i = 0; i < n; i++) {
		int code =
		    s[i].exited && !(s[i].exit_code & 0x7f) ? (s[i].exit_code >> 8) & 0xff : -1;

		stop |= s[i].asked == DET_ASKED_STOP || (p->stop_code && code == p->stop_code);
		/* a rank the agent ended for a decision (a survivor of a failure) */
		restart |= s[i].asked == DET_ASKED_RESTART ||
			   (s[i].killed && hang_end != DET_HANG_END_AGENT);
		saved |=
		    s[i].asked == DET_ASKED_PREEMPT || (p->restart_code && code == p->restart_code);
	}
	if (hang_end == DET_HANG_END_AGENT)
		return DJS_HUNG;
	if (stop)
		return DJS_STOPPED;
	if (restart)
		return DJS_RESTARTING;
	if (hang_end || res->hung)
		return DJS_HUNG;
	if (res->failed)
		return DJS_FAILED;
	if (saved)
		return DJS_PREEMPTED;
	return res->live ? DJS_OK : DJS_FINISHED;
}
