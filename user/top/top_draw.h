/*
 * ftbpf-top's drawing: paints a frame (user/top/top_render.h) on the terminal with
 * ncurses. The curses screen is this module's; nothing else calls curses.
 */
#ifndef FTBPF_TOP_DRAW_H
#define FTBPF_TOP_DRAW_H

#include "top/top_render.h"

/* Start curses (color: use colors when the terminal has them). Returns 0 or -ENOTTY. */
int top_draw_init(int color);
void top_draw_fini(void);

/* The terminal's size now. */
void top_draw_size(int *ret_width, int *ret_height);

/*
 * Paint f from its line `first` (detail view scrolling), then prompt (if not NULL) on the last
 * line with the cursor after it.
 */
void top_draw_frame(const struct top_frame *f, int first, const char *prompt);

/* Next key, waiting at most timeout_ms; -1 none. KEY_* values as curses gives them. */
int top_draw_key(int timeout_ms);

#endif
