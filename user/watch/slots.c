/*
 * Slots: a registered process's own one-entry mmapable map (ftbpf/slot.h), entered in the
 * tracker's slots map for the BPF program and pinned beside the tracker's maps (when they are
 * pinned) so that it outlives an agent restart.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ftbpf/slot.h"
#include "tracker.skel.h"
#include "watch/tracker_int.h"

static int slot_bit(struct tracker *t, uint32_t tgid, int on)
{
	int fd = bpf_map__fd(t->skel->maps.slot_bits);
	uint32_t idx = tgid / 64;
	uint64_t w = 0;

	if (idx >= t->nwords)
		return -ERANGE;
	bpf_map_lookup_elem(fd, &idx, &w);
	w = on ? w | (1ull << (tgid & 63)) : w & ~(1ull << (tgid & 63));
	return bpf_map_update_elem(fd, &idx, &w, BPF_ANY) ? -errno : 0;
}

/* Where slot tgid is pinned: 0, or -ENOENT when nothing is pinned (no pin dir). */
static int slot_pin_path(const struct tracker *t, uint32_t tgid, char *buf, size_t len)
{
	if (!*t->pin_dir)
		return -ENOENT;
	snprintf(buf, len, "%s/slot_%u", t->pin_dir, tgid);
	return 0;
}

static int slot_map(int fd, struct ftbpf_slot **ret)
{
	void *p = mmap(NULL, sizeof(struct ftbpf_slot), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	if (p == MAP_FAILED)
		return -errno;
	*ret = p;
	return 0;
}

int tracker_slot_create(struct tracker *t, uint32_t tgid, uint64_t start_ns, int *ret_fd,
			struct ftbpf_slot **ret_slot)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = BPF_F_MMAPABLE);
	struct ftbpf_slot *s = NULL;
	char path[512];
	int fd, r;

	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "ftbpf_slot", sizeof(uint32_t),
			    sizeof(struct ftbpf_slot), 1, &opts);
	if (fd < 0)
		return -errno;
	r = slot_map(fd, &s);
	if (r < 0) {
		close(fd);
		return r;
	}
	memset(s, 0, sizeof(*s));
	s->magic = FTBPF_SLOT_MAGIC;
	s->version = FTBPF_SLOT_VERSION;
	s->owner_start_ns = start_ns;
	s->saved_step = -1;
	s->saving_step = -1;
	s->ack_step = -1;
	s->dec.ckpt_step = -1;
	s->dec.resume_step = -1;
	if (slot_pin_path(t, tgid, path, sizeof(path)) == 0) {
		unlink(path);
		if (bpf_obj_pin(fd, path)) {
			r = -errno;
			tracker_slot_remove(t, tgid, fd, s);
			return r;
		}
	}
	if (bpf_map_update_elem(bpf_map__fd(t->skel->maps.slots), &tgid, &fd, BPF_ANY) ||
	    slot_bit(t, tgid, 1)) {
		r = errno ? -errno : -EIO;
		tracker_slot_remove(t, tgid, fd, s);
		return r;
	}
	*ret_fd = fd;
	*ret_slot = s;
	return 0;
}

static int start_differs(uint64_t x, uint64_t y)
{
	return (x > y ? x - y : y - x) >= FTBPF_START_SLACK_NS;
}

int tracker_slot_open(struct tracker *t, uint32_t tgid, uint64_t start_ns, int *ret_fd,
		      struct ftbpf_slot **ret_slot)
{
	char path[512];
	int fd, r;

	if (slot_pin_path(t, tgid, path, sizeof(path)) < 0)
		return -ENOENT;
	fd = bpf_obj_get(path);
	if (fd < 0)
		return -errno;
	r = slot_map(fd, ret_slot);
	if (r < 0 || (*ret_slot)->magic != FTBPF_SLOT_MAGIC ||
	    ((*ret_slot)->owner_start_ns && start_differs((*ret_slot)->owner_start_ns, start_ns))) {
		/* another process's slot (an earlier one at this pid): it goes */
		tracker_slot_remove(t, tgid, fd, r < 0 ? NULL : *ret_slot);
		return r < 0 ? r : -ESTALE;
	}
	if (!(*ret_slot)->owner_start_ns) /* made by an older agent; the caller checked the pid */
		(*ret_slot)->owner_start_ns = start_ns;
	*ret_fd = fd;
	return 0;
}

void tracker_slot_remove(struct tracker *t, uint32_t tgid, int fd, struct ftbpf_slot *s)
{
	char path[512];

	slot_bit(t, tgid, 0);
	bpf_map_delete_elem(bpf_map__fd(t->skel->maps.slots), &tgid);
	if (slot_pin_path(t, tgid, path, sizeof(path)) == 0)
		unlink(path);
	if (s)
		munmap(s, sizeof(*s));
	if (fd >= 0)
		close(fd);
}

int tracker_slots_prune(struct tracker *t, int (*keep)(void *ctx, uint32_t tgid), void *ctx)
{
	struct dirent *de;
	DIR *d;
	int n = 0;

	if (!*t->pin_dir)
		return 0; /* nothing pinned: no slot outlived its agent */
	d = opendir(t->pin_dir);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		unsigned long tgid;
		char *end;

		if (strncmp(de->d_name, "slot_", 5) || !isdigit((unsigned char)de->d_name[5]))
			continue;
		tgid = strtoul(de->d_name + 5, &end, 10);
		if (*end || tgid > UINT32_MAX || keep(ctx, (uint32_t)tgid))
			continue;
		tracker_slot_remove(t, (uint32_t)tgid, -1, NULL);
		n++;
	}
	closedir(d);
	return n;
}
