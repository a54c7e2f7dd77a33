/* Terminal-safe text: see textsafe.h. */
#include "lib/textsafe.h"

#include <stdio.h>
#include <string.h>

struct out {
	char buf[1024];
	size_t len;
	textsafe_emit_fn emit;
	void *ctx;
	int err;
};

static void put(struct out *o, const char *s, size_t n)
{
	if (o->err)
		return;
	if (o->len + n > sizeof(o->buf)) {
		int r = o->emit(o->ctx, o->buf, o->len);

		o->len = 0;
		if (r < 0) {
			o->err = r;
			return;
		}
	}
	memcpy(o->buf + o->len, s, n);
	o->len += n;
}

/* An invalid byte: \xNN in text, U+FFFD in JSON. */
static void bad_byte(struct out *o, enum textsafe_mode m, unsigned char c)
{
	char e[8];

	if (m == TEXTSAFE_JSON) {
		put(o, "\xef\xbf\xbd", 3);
		return;
	}
	snprintf(e, sizeof(e), "\\x%02x", c);
	put(o, e, 4);
}

/* A valid but unsafe code point: its bytes as \xNN in text, \uNNNN in JSON. */
static void unsafe_cp(struct out *o, enum textsafe_mode m, const unsigned char *s, size_t n,
		      unsigned cp)
{
	char e[8];

	if (m == TEXTSAFE_JSON) {
		snprintf(e, sizeof(e), "\\u%04x", cp);
		put(o, e, 6);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		snprintf(e, sizeof(e), "\\x%02x", s[i]);
		put(o, e, 4);
	}
}

/* The length of the UTF-8 sequence led by c (0: not a lead byte), and the range its second
 * byte must be in (no overlong forms, surrogates, or code points past U+10FFFF). */
static size_t seq_len(unsigned char c, unsigned char *lo, unsigned char *hi)
{
	*lo = 0x80;
	*hi = 0xbf;
	if (c >= 0xc2 && c <= 0xdf)
		return 2;
	if (c >= 0xe0 && c <= 0xef) {
		if (c == 0xe0)
			*lo = 0xa0;
		if (c == 0xed)
			*hi = 0x9f;
		return 3;
	}
	if (c >= 0xf0 && c <= 0xf4) {
		if (c == 0xf0)
			*lo = 0x90;
		if (c == 0xf4)
			*hi = 0x8f;
		return 4;
	}
	return 0;
}

size_t textsafe_utf8_len(const char *in, size_t n)
{
	const unsigned char *s = (const unsigned char *)in;
	unsigned char lo, hi;
	size_t len;

	if (!n)
		return 0;
	if (s[0] < 0x80)
		return 1;
	len = seq_len(s[0], &lo, &hi);
	if (!len || len > n)
		return 0;
	for (size_t i = 1; i < len; i++)
		if (s[i] < (i == 1 ? lo : 0x80) || s[i] > (i == 1 ? hi : 0xbf))
			return 0;
	return len;
}

/* Code points a terminal acts on or that reorder text: C1 controls, bidi embeddings,
 * overrides and isolates, line and paragraph separators. */
static int unsafe(unsigned cp)
{
	return (cp >= 0x80 && cp <= 0x9f) || (cp >= 0x202a && cp <= 0x202e) ||
	       (cp >= 0x2066 && cp <= 0x2069) || cp == 0x2028 || cp == 0x2029 || cp == 0x200e ||
	       cp == 0x200f || cp == 0x061c;
}

/* One step over s[0..n): bytes consumed, or 0 when a sequence is cut at the end. */
static size_t step(struct out *o, enum textsafe_mode m, const unsigned char *s, size_t n, int final)
{
	unsigned char c = s[0], lo, hi;
	size_t len, i;
	unsigned cp;

	if (c == '\n' || c == '\t' || (c >= 0x20 && c < 0x7f)) {
		put(o, (const char *)s, 1);
		return 1;
	}
	if (c < 0x80) { /* C0 control or DEL */
		unsafe_cp(o, m, s, 1, c);
		return 1;
	}
	len = seq_len(c, &lo, &hi);
	if (!len) {
		bad_byte(o, m, c);
		return 1;
	}
	for (i = 1; i < len; i++) {
		if (i >= n) {
			if (!final)
				return 0;
			bad_byte(o, m, c);
			return 1;
		}
		if (s[i] < (i == 1 ? lo : 0x80) || s[i] > (i == 1 ? hi : 0xbf)) {
			bad_byte(o, m, c);
			return 1;
		}
	}
	cp = len == 2 ? (c & 0x1fu) : len == 3 ? (c & 0x0fu) : (c & 0x07u);
	for (i = 1; i < len; i++)
		cp = (cp << 6) | (s[i] & 0x3fu);
	if (unsafe(cp))
		unsafe_cp(o, m, s, len, cp);
	else
		put(o, (const char *)s, len);
	return len;
}

int textsafe_write(struct textsafe *ts, const char *in, size_t n, int final, textsafe_emit_fn emit,
		   void *ctx)
{
	struct out o = {.emit = emit, .ctx = ctx};
	const unsigned char *s = (const unsigned char *)in;
	size_t pos = 0;

	/* a sequence cut at the end of the last write: complete it with this one's bytes */
	while (ts->ncarry) {
		unsigned char tmp[4];
		size_t take = n < 4 - ts->ncarry ? n : 4 - ts->ncarry, used;

		memcpy(tmp, ts->carry, ts->ncarry);
		memcpy(tmp + ts->ncarry, s, take);
		used = step(&o, ts->mode, tmp, ts->ncarry + take, final);
		if (!used) { /* still cut: keep waiting */
			memcpy(ts->carry + ts->ncarry, s, take);
			ts->ncarry += take;
			return o.err;
		}
		if (used >= ts->ncarry) {
			pos = used - ts->ncarry;
			ts->ncarry = 0;
		} else { /* only part of the carry was consumed (an invalid lead byte) */
			memmove(ts->carry, ts->carry + used, ts->ncarry - used);
			ts->ncarry -= used;
		}
	}
	while (pos < n && !o.err) {
		size_t used = step(&o, ts->mode, s + pos, n - pos, final);

		if (!used) {
			memcpy(ts->carry, s + pos, n - pos);
			ts->ncarry = n - pos;
			break;
		}
		pos += used;
	}
	if (!o.err && o.len)
		o.err = emit(ctx, o.buf, o.len) < 0 ? -1 : 0;
	return o.err;
}
