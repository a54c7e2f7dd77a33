/*
 * A kernel stack as text, one frame per string, innermost first: the lines of
 * /proc/PID/task/TID/stack, or the task snapshot's addresses as symbols (watch/sample.c reads
 * both). Pure: what reads them is in watch/; this keeps, parses and formats them.
 */
#ifndef FTBPF_KSTACK_H
#define FTBPF_KSTACK_H

#include <stddef.h>

struct json_object;

/* Room for what one read of /proc/PID/task/TID/stack gives (4095 bytes), and for the
 * snapshot's FTBPF_STACK_DEPTH frames of at most 159 characters each. */
#define KSTACK_TEXT 4096

struct kstack {
	int n;			/* frames */
	size_t len;		/* bytes of text used */
	char text[KSTACK_TEXT]; /* the frames, each ending with a NUL, one after another */
};

void kstack_init(struct kstack *ks);
/* Append frame f. 0, or -ENOSPC when it does not fit (it is not added). */
int kstack_add(struct kstack *ks, const char *f);
/*
 * Append the frames of /proc/PID/stack text: one per non-empty line. strip_addr: a frame is
 * what follows the line's first space ("[<0>] schedule+0x..." -> "schedule+0x..."), the
 * whole line when it has none. 0, or -ENOSPC at the first frame that did not fit (those
 * before it are in).
 */
int kstack_parse_proc(struct kstack *ks, const char *text, int strip_addr);
/* The frame after f (NULL: the first); NULL after the last. */
const char *kstack_next(const struct kstack *ks, const char *f);
/* The frames as a new JSON array of strings (the caller's). */
struct json_object *kstack_json(const struct kstack *ks);

#endif
