/*
 * Text from other users (job names, comms, paths, Python frames) made safe for a terminal
 * before the CLI prints it: control bytes (but newline and tab), DEL, C1 controls, bidi
 * overrides and bytes that are not UTF-8 are escaped, so nothing a user put in a name can move
 * the cursor, retitle a terminal or hide text. Text mode escapes them as \xNN; JSON mode as
 * \uNNNN (invalid bytes as U+FFFD), so the output stays the same JSON.
 */
#ifndef FTBPF_TEXTSAFE_H
#define FTBPF_TEXTSAFE_H

#include <stddef.h>

enum textsafe_mode { TEXTSAFE_TEXT = 0, TEXTSAFE_JSON = 1 };

struct textsafe {
	enum textsafe_mode mode;
	unsigned char carry[4]; /* the start of a UTF-8 sequence cut at the end of a write */
	size_t ncarry;
};

typedef int (*textsafe_emit_fn)(void *ctx, const char *buf, size_t len);

/* Pass in[0..n) through emit in its safe form. A UTF-8 sequence cut at the end waits in ts
 * for the next call; final: nothing follows (what waits is escaped). 0, or what emit
 * returned when it failed (< 0). */
int textsafe_write(struct textsafe *ts, const char *in, size_t n, int final, textsafe_emit_fn emit,
		   void *ctx);

/* The length of the valid UTF-8 sequence at s[0..n) (1 for ASCII), 0 when s does not start
 * one (a stray byte, an overlong form, a surrogate, a sequence cut short). */
size_t textsafe_utf8_len(const char *s, size_t n);

#endif
