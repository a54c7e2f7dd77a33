/* ftbpf-top's rendering of the model into frames of text lines: see top_render.c. */
#ifndef FTBPF_TOP_RENDER_H
#define FTBPF_TOP_RENDER_H

#include "top/top_model.h"

/* ---- frames: text lines with an attribute each ---- */
struct top_line {
	enum top_attr attr;
	int selected; /* the selection bar is on this line */
	char text[512];
};

struct top_frame {
	struct top_line *lines; /* owned */
	int n, cap;
	int width;
};

void top_frame_init(struct top_frame *f, int width);
void top_frame_fini(struct top_frame *f);
void top_frame_clear(struct top_frame *f, int width);
/* Append a line (printf-style), cut to the frame's width. */
void top_frame_add(struct top_frame *f, enum top_attr a, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The columns that fit in width, in order; REASON takes what is left; the GPU columns (GPU%,
 * GMEM) only when gpu (NVML answers here). Returns the count. */
int top_layout(int width, int gpu, enum top_col *ret_cols, int *ret_widths);

/*
 * The main screen: header, table, event pane, key line, for a width x height terminal
 * (height <= 0: every row and the last 10 events, for --once). socket is shown when the agent
 * cannot be reached.
 */
void top_render_main(struct top_model *m, struct top_frame *f, int width, int height,
		     const char *socket, int show_events);

/* One rank in detail, from an "explain" reply (NULL: not available, error says why). */
void top_render_detail(const struct top_model *m, struct json_object *explain, const char *error,
		       struct top_frame *f, int width);

/* A "stacks" reply for pid (NULL: not available, error says why), as `ftbpf stacks PID`
 * prints it: each thread's state and kernel stack, then the Python stacks. */
void top_render_stacks(struct json_object *stacks, int pid, const char *error, struct top_frame *f,
		       int width);

/* Append the heartbeat mesh's peers, one line each (the `P` view; --once ends with them). */
void top_render_peers(const struct top_model *m, struct top_frame *f);

/* The help screen. */
void top_render_help(struct top_frame *f, int width);

/* The key line that fits width (in full from 142 columns). */
const char *top_keys_line(int width);

#endif
