/* A job's part on the wire: see part_proto.h. */
#include "proto/part_proto.h"

#include <sodium.h>
#include <string.h>

/* Header (little-endian):
 *  0 magic "FP", 2 version, 3 flags, 4 nranks, 5 nedges, 6 nres, 7 naddrs,
 *  8 from.ip, 12 from.port, 14 chunk, 15 nchunks, 16 boot, 24 seq, 32 to.ip, 36 to.port,
 * 38 text length, 39 ncad (0 from agents before cadence parts), 40 to_boot, 48 sent_ms, 56 uid, 60 world_size, 64 ttl_ms,
 * 68 text_rank, 72 job (64 bytes, NUL-padded)
 * then naddrs x 4 (IPv4), nranks x 56, nedges x 24, nres x 12, ncad x 28, the text, the MAC
 * (32).
 * Rank: 0 rank, 4 pid, 8 state, 9 flags, 10 syscall, 12 score, 13 comm_api, 14 comm_dtype,
 * 15 0, 16 exit_code, 20 progress_age_ms, 24 state_age_ms, 28 exit_age_ms, 32 comm_id,
 * 40 comm_seq, 48 comm_count
 * Edge: 0 from_rank, 4 to_rank, 8 peer.ip, 12 peer.port, 14 how, 15 0, 16 local.ip,
 * 20 local.port, 22 0
 * Resolution: 0 ip, 4 port, 6 0, 8 rank
 * Cadence: 0 rank, 4 flags, 5 0 0 0, 8 own_ppm, 12 wait_ppm, 16 read_ppm, 20 step_us,
 * 24 window_ms
 */
#define PART_MAX_RANK	 (1 << 24)
#define PART_MAX_SEQ	 (1ull << 48) /* more collectives than a job can issue */
#define PART_MAX_PPM	 1000000u
#define PART_MAX_WIN	 3600000u  /* a cadence window of an hour at most */
#define PART_MAX_LATE_US 60000000u /* a lateness at a collective of a minute at most */

static void put16(uint8_t *b, uint16_t v)
{
	b[0] = (uint8_t)v;
	b[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *b, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		b[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *b, uint64_t v)
{
	put32(b, (uint32_t)v);
	put32(b + 4, (uint32_t)(v >> 32));
}

static uint16_t get16(const uint8_t *b)
{
	return (uint16_t)(b[0] | b[1] << 8);
}

static uint32_t get32(const uint8_t *b)
{
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static uint64_t get64(const uint8_t *b)
{
	return (uint64_t)get32(b) | (uint64_t)get32(b + 4) << 32;
}

const char *part_err_name(int err)
{
	switch (err) {
	case PART_OK:
		return "ok";
	case PART_E_SIZE:
		return "bad size";
	case PART_E_MAGIC:
		return "not a part";
	case PART_E_VERSION:
		return "unsupported version";
	case PART_E_MAC:
		return "authentication failed";
	case PART_E_FIELD:
		return "field out of range";
	}
	return "?";
}

int part_is_part(const uint8_t *buf, size_t len)
{
	return len >= 2 && buf[0] == 'F' && buf[1] == 'P';
}

void part_derive_key(const uint8_t mesh_key[MESH_KEY_BYTES], uint8_t key[MESH_KEY_BYTES])
{
	static const char ctx[] = "ftbpf job parts v1";

	crypto_generichash(key, MESH_KEY_BYTES, (const uint8_t *)ctx, sizeof(ctx) - 1, mesh_key,
			   MESH_KEY_BYTES);
}

static const char *text_of(const struct part_packet *p)
{
	int k = p->text_rank >= 0 ? jobview_part_rank(&p->part, p->text_rank) : -1;

	return k >= 0 ? p->part.ranks[k].reason : "";
}

/* The arrivals section (PART_F_ARR): its head, each cadence record's lateness, the firsts as
 * microseconds after the earliest known one (0xffffffff: not known there). */
static void arr_encode(const struct part_packet *p, uint8_t *b)
{
	const struct jv_part *pt = &p->part;
	uint64_t t0 = 0;

	for (int i = 0; i < pt->first.n; i++)
		if (pt->first.t[i] && (!t0 || pt->first.t[i] < t0))
			t0 = pt->first.t[i];
	put64(b, p->mono_ns);
	put64(b + 8, p->echo_ns);
	put64(b + 16, p->hold_ns);
	put64(b + 24, pt->first.n ? pt->first.comm : 0);
	put64(b + 32, pt->first.n ? pt->first.seq0 : 0);
	put64(b + 40, t0);
	put16(b + 48, (uint16_t)pt->first.n);
	b += PART_ARR_BYTES;
	for (int i = 0; i < pt->ncad; i++, b += PART_LATE_BYTES) {
		const struct cad_summary *c = &pt->cad[i];

		put32(b, c->late_us);
		put32(b + 4, c->err_us);
		put32(b + 8, c->gpu_us);
		put32(b + 12, c->read_us);
		put32(b + 16, c->comm_us);
		put32(b + 20, c->ncoll);
	}
	for (int i = 0; i < pt->first.n; i++, b += 4) {
		uint64_t us = (pt->first.t[i] - t0) / 1000;

		put32(b, !pt->first.t[i]      ? 0xffffffffu
			 : us > 0xfffffffeull ? 0xfffffffeu
					      : (uint32_t)us);
	}
}

int part_encode(const struct part_packet *p, const uint8_t key[MESH_KEY_BYTES], uint8_t *buf,
		size_t cap)
{
	const struct jv_part *pt = &p->part;
	const char *text = text_of(p);
	size_t tl = strnlen(text, PART_MAX_TEXT - 1), len, o;

	if (pt->nranks < 0 || pt->nranks > JV_MAX_RANKS || pt->nedges < 0 ||
	    pt->nedges > JV_MAX_EDGES || pt->nres < 0 || pt->nres > JV_MAX_RES || pt->naddrs < 0 ||
	    pt->naddrs > JV_MAX_ADDRS || pt->ncad < 0 || pt->ncad > JV_MAX_RANKS)
		return -1;
	if ((p->flags & PART_F_ARR) &&
	    (!(p->flags & PART_F_CAD) || pt->first.n < 0 || pt->first.n > ARR_FIRST_N))
		return -1;
	len = PART_HDR_BYTES + (size_t)pt->naddrs * 4 + (size_t)pt->nranks * PART_RANK_BYTES +
	      (size_t)pt->nedges * PART_EDGE_BYTES + (size_t)pt->nres * PART_RES_BYTES +
	      (size_t)pt->ncad * PART_CAD_BYTES + tl;
	if (p->flags & PART_F_ARR)
		len +=
		    PART_ARR_BYTES + (size_t)pt->ncad * PART_LATE_BYTES + (size_t)pt->first.n * 4;
	if (len + MESH_MAC_BYTES > cap || len + MESH_MAC_BYTES > PART_MAX_PACKET)
		return -1;
	memset(buf, 0, len);
	buf[0] = 'F';
	buf[1] = 'P';
	buf[2] = PART_VERSION;
	buf[3] = p->flags;
	buf[4] = (uint8_t)pt->nranks;
	buf[5] = (uint8_t)pt->nedges;
	buf[6] = (uint8_t)pt->nres;
	buf[7] = (uint8_t)pt->naddrs;
	put32(buf + 8, p->from.ip);
	put16(buf + 12, p->from.port);
	buf[14] = pt->chunk;
	buf[15] = pt->nchunks;
	put64(buf + 16, p->boot);
	put64(buf + 24, p->seq);
	put32(buf + 32, p->to.ip);
	put16(buf + 36, p->to.port);
	buf[38] = (uint8_t)tl;
	buf[39] = (uint8_t)pt->ncad;
	put64(buf + 40, p->to_boot);
	put64(buf + 48, p->sent_ms);
	put32(buf + 56, pt->uid);
	put32(buf + 60, (uint32_t)pt->world_size);
	put32(buf + 64, p->ttl_ms);
	put32(buf + 68, (uint32_t)(tl ? p->text_rank : -1));
	memcpy(buf + 72, pt->job, strnlen(pt->job, FTBPF_JOB_LEN - 1));
	o = PART_HDR_BYTES;
	for (int i = 0; i < pt->naddrs; i++, o += 4)
		put32(buf + o, pt->addrs[i]);
	for (int i = 0; i < pt->nranks; i++, o += PART_RANK_BYTES) {
		const struct jv_rank *r = &pt->ranks[i];
		uint8_t *b = buf + o;

		put32(b, (uint32_t)r->rank);
		put32(b + 4, r->pid);
		b[8] = r->state;
		b[9] = r->flags;
		put16(b + 10, (uint16_t)r->syscall);
		b[12] = r->score;
		b[13] = r->comm_api;
		b[14] = r->comm_dtype;
		put32(b + 16, (uint32_t)r->exit_code);
		put32(b + 20, r->progress_age_ms);
		put32(b + 24, r->state_age_ms);
		put32(b + 28, r->exit_age_ms);
		put64(b + 32, r->comm_id);
		put64(b + 40, r->comm_seq);
		put64(b + 48, r->comm_count);
	}
	for (int i = 0; i < pt->nedges; i++, o += PART_EDGE_BYTES) {
		const struct jv_edge *e = &pt->edges[i];
		uint8_t *b = buf + o;

		put32(b, (uint32_t)e->from_rank);
		put32(b + 4, (uint32_t)e->to_rank);
		put32(b + 8, e->peer.ip);
		put16(b + 12, e->peer.port);
		b[14] = e->how;
		put32(b + 16, e->local.ip);
		put16(b + 20, e->local.port);
	}
	for (int i = 0; i < pt->nres; i++, o += PART_RES_BYTES) {
		put32(buf + o, pt->res[i].ep.ip);
		put16(buf + o + 4, pt->res[i].ep.port);
		put32(buf + o + 8, (uint32_t)pt->res[i].rank);
	}
	for (int i = 0; i < pt->ncad; i++, o += PART_CAD_BYTES) {
		const struct cad_summary *c = &pt->cad[i];
		uint8_t *b = buf + o;

		put32(b, (uint32_t)c->rank);
		b[4] = (uint8_t)c->flags;
		put32(b + 8, c->own_ppm);
		put32(b + 12, c->wait_ppm);
		put32(b + 16, c->read_ppm);
		put32(b + 20, c->step_us);
		put32(b + 24, c->window_ms);
	}
	memcpy(buf + o, text, tl);
	o += tl;
	if (p->flags & PART_F_ARR)
		arr_encode(p, buf + o);
	crypto_auth_hmacsha256(buf + len, buf, len, key);
	return (int)(len + MESH_MAC_BYTES);
}

/* A job id as ident.c makes them: printable, no quotes or backslashes, NUL-terminated. */
static int job_ok(const uint8_t *b)
{
	int n = 0;

	while (n < FTBPF_JOB_LEN && b[n]) {
		if (b[n] < 0x21 || b[n] > 0x7e || b[n] == '"' || b[n] == '\\')
			return 0;
		n++;
	}
	if (!n || n == FTBPF_JOB_LEN)
		return 0;
	for (int i = n; i < FTBPF_JOB_LEN; i++)
		if (b[i])
			return 0;
	return 1;
}

/* Cadence records: ranks of the world, once each, fractions of wall time, known flags. */
static int cad_ok(const struct jv_part *pt)
{
	for (int i = 0; i < pt->ncad; i++) {
		const struct cad_summary *c = &pt->cad[i];

		if (c->rank < 0 || c->rank >= PART_MAX_RANK ||
		    (pt->world_size > 0 && c->rank >= pt->world_size) ||
		    (c->flags & ~(CAD_SUM_VALID | CAD_SUM_STRAGGLER | CAD_SUM_DATA | CAD_SUM_GPU |
				  CAD_SUM_ARR)) ||
		    ((c->flags & CAD_SUM_DATA) && (c->flags & CAD_SUM_GPU)) ||
		    c->own_ppm > PART_MAX_PPM || c->wait_ppm > PART_MAX_PPM ||
		    c->read_ppm > c->own_ppm || c->window_ms > PART_MAX_WIN ||
		    (!(c->flags & CAD_SUM_VALID) && (c->own_ppm || c->wait_ppm || c->step_us)))
			return 0;
		for (int k = 0; k < i; k++)
			if (pt->cad[k].rank == c->rank)
				return 0;
	}
	return 1;
}

static int ranks_ok(const struct jv_part *pt)
{
	for (int i = 0; i < pt->nranks; i++) {
		const struct jv_rank *r = &pt->ranks[i];

		if (r->rank < 0 || r->rank >= PART_MAX_RANK ||
		    (pt->world_size > 0 && r->rank >= pt->world_size) || r->state >= RS__N ||
		    (r->flags & ~(JV_R_EXITED | JV_R_KILLED | JV_R_CULPRIT | JV_R_COMM | JV_R_MPI |
				  JV_R_GRAPH)) ||
		    r->syscall < -1 || r->syscall > 1023 || r->score > 100 ||
		    r->comm_seq >= PART_MAX_SEQ ||
		    (!(r->flags & JV_R_COMM) && (r->comm_seq || r->comm_count || r->comm_api ||
						 (r->flags & JV_R_MPI) || (r->flags & JV_R_GRAPH))))
			return 0;
		for (int k = 0; k < i; k++)
			if (pt->ranks[k].rank == r->rank)
				return 0;
	}
	for (int i = 0; i < pt->nedges; i++) {
		const struct jv_edge *e = &pt->edges[i];

		if (jobview_part_rank(pt, e->from_rank) < 0 || e->to_rank < -2 ||
		    e->to_rank >= PART_MAX_RANK || e->how < JV_EDGE_RECV || e->how > JV_EDGE_REPLY)
			return 0;
	}
	for (int i = 0; i < pt->nres; i++)
		if (pt->res[i].rank < -2 || pt->res[i].rank >= PART_MAX_RANK ||
		    (pt->res[i].rank >= 0 && jobview_part_rank(pt, pt->res[i].rank) < 0))
			return 0;
	return cad_ok(pt);
}

/* The arrivals section: lateness within reason (a minute), its parts within it, the firsts a
 * run that never goes back in time. */
static int arr_decode(const uint8_t *b, int nf, struct part_packet *p)
{
	struct jv_part *pt = &p->part;
	uint64_t t0, last = 0;

	if (!(p->flags & PART_F_CAD))
		return -1;
	for (int i = 50; i < PART_ARR_BYTES; i++)
		if (b[i])
			return -1;
	p->mono_ns = get64(b);
	p->echo_ns = get64(b + 8);
	p->hold_ns = get64(b + 16);
	pt->first.comm = get64(b + 24);
	pt->first.seq0 = get64(b + 32);
	t0 = get64(b + 40);
	pt->first.n = nf;
	if (nf && (!pt->first.comm || !pt->first.seq0 || pt->first.seq0 >= PART_MAX_SEQ || !t0))
		return -1;
	if (!nf && (pt->first.comm || pt->first.seq0 || t0))
		return -1;
	b += PART_ARR_BYTES;
	for (int i = 0; i < pt->ncad; i++, b += PART_LATE_BYTES) {
		struct cad_summary *c = &pt->cad[i];

		c->late_us = get32(b);
		c->err_us = get32(b + 4);
		c->gpu_us = get32(b + 8);
		c->read_us = get32(b + 12);
		c->comm_us = get32(b + 16);
		c->ncoll = get32(b + 20);
		if (!(c->flags & CAD_SUM_ARR)) {
			if (c->late_us || c->err_us || c->gpu_us || c->read_us || c->comm_us ||
			    c->ncoll)
				return -1;
			continue;
		}
		if (!(c->flags & CAD_SUM_VALID) || c->late_us > PART_MAX_LATE_US ||
		    c->err_us > PART_MAX_LATE_US || c->ncoll > ARR_HIST ||
		    (uint64_t)c->gpu_us + c->read_us + c->comm_us > (uint64_t)c->late_us + 3)
			return -1;
	}
	for (int i = 0; i < nf; i++, b += 4) {
		uint32_t d = get32(b);

		pt->first.t[i] = d == 0xffffffffu ? 0 : t0 + (uint64_t)d * 1000;
		if (pt->first.t[i] && pt->first.t[i] < last)
			return -1;
		if (pt->first.t[i])
			last = pt->first.t[i];
	}
	return 0;
}

int part_decode(const uint8_t *buf, size_t len, const uint8_t key[MESH_KEY_BYTES],
		struct part_packet *p)
{
	struct jv_part *pt = &p->part;
	size_t body, o, tl, arr;
	int nr, ne, nres, na, nc, k, nf = 0;

	if (len < PART_HDR_BYTES + MESH_MAC_BYTES || len > PART_MAX_PACKET)
		return PART_E_SIZE;
	if (!part_is_part(buf, len))
		return PART_E_MAGIC;
	if (buf[2] != PART_VERSION)
		return PART_E_VERSION;
	nr = buf[4], ne = buf[5], nres = buf[6], na = buf[7], tl = buf[38], nc = buf[39];
	if (nr > JV_MAX_RANKS || ne > JV_MAX_EDGES || nres > JV_MAX_RES || na > JV_MAX_ADDRS ||
	    nc > JV_MAX_RANKS || tl > PART_MAX_TEXT - 1)
		return PART_E_SIZE;
	body = PART_HDR_BYTES + (size_t)na * 4 + (size_t)nr * PART_RANK_BYTES +
	       (size_t)ne * PART_EDGE_BYTES + (size_t)nres * PART_RES_BYTES +
	       (size_t)nc * PART_CAD_BYTES + tl;
	arr = body;
	if (buf[3] & PART_F_ARR) { /* its own size is in its head */
		if (arr + PART_ARR_BYTES + MESH_MAC_BYTES > len)
			return PART_E_SIZE;
		nf = get16(buf + arr + 48);
		if (nf > ARR_FIRST_N)
			return PART_E_SIZE;
		body += PART_ARR_BYTES + (size_t)nc * PART_LATE_BYTES + (size_t)nf * 4;
	}
	if (body + MESH_MAC_BYTES != len)
		return PART_E_SIZE;
	if (crypto_auth_hmacsha256_verify(buf + body, buf, body, key) != 0)
		return PART_E_MAC;
	memset(p, 0, sizeof(*p));
	p->flags = buf[3];
	pt->nranks = nr, pt->nedges = ne, pt->nres = nres, pt->naddrs = na, pt->ncad = nc;
	p->from.ip = get32(buf + 8);
	p->from.port = get16(buf + 12);
	pt->chunk = buf[14];
	pt->nchunks = buf[15];
	p->boot = get64(buf + 16);
	p->seq = get64(buf + 24);
	p->to.ip = get32(buf + 32);
	p->to.port = get16(buf + 36);
	p->to_boot = get64(buf + 40);
	p->sent_ms = get64(buf + 48);
	pt->uid = get32(buf + 56);
	pt->world_size = (int32_t)get32(buf + 60);
	p->ttl_ms = get32(buf + 64);
	p->text_rank = (int32_t)get32(buf + 68);
	if (!job_ok(buf + 72))
		return PART_E_FIELD;
	memcpy(pt->job, buf + 72, FTBPF_JOB_LEN);
	o = PART_HDR_BYTES;
	for (int i = 0; i < na; i++, o += 4)
		pt->addrs[i] = get32(buf + o);
	for (int i = 0; i < nr; i++, o += PART_RANK_BYTES) {
		struct jv_rank *r = &pt->ranks[i];
		const uint8_t *b = buf + o;

		r->rank = (int32_t)get32(b);
		r->pid = get32(b + 4);
		r->state = b[8];
		r->flags = b[9];
		r->syscall = (int16_t)get16(b + 10);
		r->score = b[12];
		r->comm_api = b[13];
		r->comm_dtype = b[14];
		r->exit_code = (int32_t)get32(b + 16);
		r->progress_age_ms = get32(b + 20);
		r->state_age_ms = get32(b + 24);
		r->exit_age_ms = get32(b + 28);
		r->comm_id = get64(b + 32);
		r->comm_seq = get64(b + 40);
		r->comm_count = get64(b + 48);
	}
	for (int i = 0; i < ne; i++, o += PART_EDGE_BYTES) {
		struct jv_edge *e = &pt->edges[i];
		const uint8_t *b = buf + o;

		e->from_rank = (int32_t)get32(b);
		e->to_rank = (int32_t)get32(b + 4);
		e->peer.ip = get32(b + 8);
		e->peer.port = get16(b + 12);
		e->how = b[14];
		e->local.ip = get32(b + 16);
		e->local.port = get16(b + 20);
	}
	for (int i = 0; i < nres; i++, o += PART_RES_BYTES) {
		pt->res[i].ep.ip = get32(buf + o);
		pt->res[i].ep.port = get16(buf + o + 4);
		pt->res[i].rank = (int32_t)get32(buf + o + 8);
	}
	for (int i = 0; i < nc; i++, o += PART_CAD_BYTES) {
		struct cad_summary *c = &pt->cad[i];
		const uint8_t *b = buf + o;

		if (b[5] || b[6] || b[7])
			return PART_E_FIELD;
		c->rank = (int32_t)get32(b);
		c->flags = b[4];
		c->own_ppm = get32(b + 8);
		c->wait_ppm = get32(b + 12);
		c->read_ppm = get32(b + 16);
		c->step_us = get32(b + 20);
		c->window_ms = get32(b + 24);
	}
	if (!p->from.ip || !p->from.port || !p->to.ip || !p->to.port || !pt->nchunks ||
	    pt->chunk >= pt->nchunks || (pt->world_size != -1 && pt->world_size < 1) ||
	    pt->world_size > PART_MAX_RANK || !p->ttl_ms || p->ttl_ms > PART_TTL_MAX_MS ||
	    ((p->flags & PART_F_CAD) && (nr || ne || nres || tl || !nc || pt->world_size < 1)) ||
	    !ranks_ok(pt))
		return PART_E_FIELD;
	k = p->text_rank >= 0 ? jobview_part_rank(pt, p->text_rank) : -1;
	if (tl && k < 0)
		return PART_E_FIELD;
	for (size_t i = 0; i < tl; i++)
		if (buf[o + i] < 0x20 || buf[o + i] > 0x7e)
			return PART_E_FIELD;
	if (k >= 0)
		memcpy(pt->ranks[k].reason, buf + o, tl);
	if ((p->flags & PART_F_ARR) && arr_decode(buf + arr, nf, p) < 0)
		return PART_E_FIELD;
	for (int i = 0; i < nc; i++) /* arrivals only where the section says them */
		if ((pt->cad[i].flags & CAD_SUM_ARR) && !(p->flags & PART_F_ARR))
			return PART_E_FIELD;
	return PART_OK;
}
