#include "top/top_draw.h"

#include <curses.h>
#include <errno.h>
#include <string.h>

static attr_t attr_of[TA_N];

int top_draw_init(int color)
{
	if (!initscr())
		return -ENOTTY;
	cbreak();
	noecho();
	keypad(stdscr, TRUE);
	nonl();
	curs_set(0);
	set_escdelay(25);
	for (int i = 0; i < TA_N; i++)
		attr_of[i] = A_NORMAL;
	attr_of[TA_TITLE] = A_BOLD;
	attr_of[TA_INFO] = A_NORMAL;
	attr_of[TA_WARN] = A_BOLD;
	attr_of[TA_ERROR] = A_BOLD | A_UNDERLINE;
	attr_of[TA_HUNG] = A_BOLD;
	attr_of[TA_CULPRIT] = A_BOLD | A_STANDOUT;
	attr_of[TA_EXITED] = A_DIM;
	attr_of[TA_SELECTED] = A_REVERSE;
	attr_of[TA_KEYS] = A_REVERSE;
	if (color && has_colors() && start_color() == OK) {
		use_default_colors();
		init_pair(1, COLOR_WHITE, COLOR_RED);  /* culprit */
		init_pair(2, COLOR_YELLOW, -1);	       /* hung, warnings */
		init_pair(3, COLOR_RED, -1);	       /* errors */
		init_pair(4, COLOR_BLACK, COLOR_CYAN); /* selection, keys */
		init_pair(5, COLOR_GREEN, -1);	       /* titles */
		attr_of[TA_CULPRIT] = A_BOLD | COLOR_PAIR(1);
		attr_of[TA_HUNG] = A_BOLD | COLOR_PAIR(2);
		attr_of[TA_WARN] = COLOR_PAIR(2);
		attr_of[TA_ERROR] = A_BOLD | COLOR_PAIR(3);
		attr_of[TA_KEYS] = COLOR_PAIR(4);
		attr_of[TA_TITLE] = A_BOLD | COLOR_PAIR(5);
	}
	return 0;
}

void top_draw_fini(void)
{
	if (!isendwin())
		endwin();
}

void top_draw_size(int *ret_width, int *ret_height)
{
	int h, w;

	getmaxyx(stdscr, h, w);
	*ret_width = w;
	*ret_height = h;
}

void top_draw_frame(const struct top_frame *f, int first, const char *prompt)
{
	int h, w, rows;

	getmaxyx(stdscr, h, w);
	rows = prompt ? h - 1 : h;
	erase();
	for (int y = 0; y < rows && first + y < f->n; y++) {
		const struct top_line *l = &f->lines[first + y];
		attr_t a = attr_of[l->attr];

		if (l->selected) /* the row keeps its kind (culprit, hung) under the bar */
			a = (l->attr == TA_NORMAL ? attr_of[TA_SELECTED] : a | A_REVERSE);
		attrset(a);
		mvaddnstr(y, 0, l->text, w);
		if (l->selected || l->attr == TA_KEYS || l->attr == TA_CULPRIT) /* a full bar */
			for (int x = (int)strlen(l->text); x < w; x++)
				mvaddch(y, x, ' ');
	}
	attrset(A_NORMAL);
	if (prompt) {
		mvaddnstr(h - 1, 0, prompt, w - 1);
		curs_set(1);
	} else {
		curs_set(0);
	}
	refresh();
}

int top_draw_key(int timeout_ms)
{
	int c;

	timeout(timeout_ms);
	c = getch();
	return c == ERR ? -1 : c;
}
