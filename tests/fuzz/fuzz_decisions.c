/*
 * libFuzzer target: the decision records and keys read from the store (etcd or the local
 * file), which another node or a damaged file may have written. Every parser either accepts
 * the input, and then formats what it read back into a record it accepts again, or rejects it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/decisions.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1), buf[DEC_VALUE_MAX];
	struct dec_gen g;
	struct dec_ckpt c;
	struct dec_report r;
	struct dec_done d;
	struct dec_member m;
	struct dec_bind b;
	struct dec_out o;
	struct dec_run rn;
	struct dec_launch l;
	struct dec_launches ls;
	uint64_t x, y;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = 0;
	if (dec_gen_parse(s, &g) == 0 && dec_gen_format(&g, buf, sizeof(buf)) == 0 &&
	    dec_gen_parse(buf, &g) < 0)
		abort();
	if (dec_ckpt_parse(s, &c) == 0 && dec_ckpt_format(&c, buf, sizeof(buf)) == 0 &&
	    dec_ckpt_parse(buf, &c) < 0)
		abort();
	if (dec_report_parse(s, &r) == 0 && dec_report_format(&r, buf, sizeof(buf)) == 0 &&
	    dec_report_parse(buf, &r) < 0)
		abort();
	if (dec_done_parse(s, &d) == 0 && dec_done_format(&d, buf, sizeof(buf)) == 0 &&
	    dec_done_parse(buf, &d) < 0)
		abort();
	if (dec_member_parse(s, &m) == 0 && dec_member_format(&m, buf, sizeof(buf)) == 0 &&
	    dec_member_parse(buf, &m) < 0)
		abort();
	if (dec_out_parse(s, &o) == 0 && dec_out_format(&o, buf, sizeof(buf)) == 0 &&
	    dec_out_parse(buf, &o) < 0)
		abort();
	if (dec_bind_parse(s, &b) == 0 && dec_bind_format(&b, buf, sizeof(buf)) == 0 &&
	    dec_bind_parse(buf, &b) < 0)
		abort();
	if (dec_run_parse(s, &rn) == 0 && dec_run_format(&rn, buf, sizeof(buf)) == 0 &&
	    dec_run_parse(buf, &rn) < 0)
		abort();
	if (dec_launch_parse(s, &l) == 0 && dec_launch_format(&l, buf, sizeof(buf)) == 0 &&
	    dec_launch_parse(buf, &l) < 0)
		abort();
	if (dec_launches_parse(s, &ls) == 0 && dec_launches_format(&ls, buf, sizeof(buf)) == 0 &&
	    dec_launches_parse(buf, &ls) < 0)
		abort();
	dec_key_numbers(s, "gen", &x, NULL);
	dec_key_numbers(s, "run", &x, NULL);
	dec_key_numbers(s, "bind", &x, &y);
	dec_key_numbers(s, "ckpt", &x, &y);
	dec_node_valid(s);
	dec_cause_parse(s);
	free(s);
	return 0;
}
