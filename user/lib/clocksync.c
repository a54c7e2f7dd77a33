/* Another host's clock against ours, from part round trips: see clocksync.h. */
#include "lib/clocksync.h"

int clk_receive(struct clk_peer *c, uint64_t their_sent, uint64_t echo, uint64_t hold, uint64_t now)
{
	uint64_t rtt;
	int64_t t1, t2, t3, t4;

	if (!their_sent || their_sent > CLK_MAX_NS || echo > CLK_MAX_NS || hold > CLK_MAX_NS ||
	    now > CLK_MAX_NS)
		return their_sent ? -1 : 0; /* (so that no difference below overflows) */
	if (their_sent > c->their_sent || !c->their_sent) { /* parts may arrive out of order */
		c->their_sent = their_sent;
		c->rx_ns = now;
	}
	if (!echo)
		return 0;
	if (echo > now || now - echo < hold || now - echo > CLK_MAX_AGE_NS || hold > their_sent) {
		c->rejected++;
		return -1;
	}
	rtt = (now - echo) - hold;
	if (rtt > CLK_MAX_RTT_NS) {
		c->rejected++;
		return -1;
	}
	t1 = (int64_t)echo;
	t2 = (int64_t)(their_sent - hold);
	t3 = (int64_t)their_sent;
	t4 = (int64_t)now;
	c->s[c->head].offset = ((t2 - t1) + (t3 - t4)) / 2;
	c->s[c->head].delay = rtt;
	c->s[c->head].hold = hold;
	c->s[c->head].at = now;
	c->head = (c->head + 1) % CLK_SAMPLES;
	if (c->n < CLK_SAMPLES)
		c->n++;
	return 1;
}

void clk_echo(const struct clk_peer *c, uint64_t now, uint64_t *ret_echo, uint64_t *ret_hold)
{
	*ret_echo = c->their_sent;
	*ret_hold = c->their_sent && now >= c->rx_ns ? now - c->rx_ns : 0;
}

int clk_offset(const struct clk_peer *c, uint64_t now, int64_t *ret_offset, uint64_t *ret_bound)
{
	int best = -1;

	for (int i = 0; i < c->n; i++)
		if (now >= c->s[i].at && now - c->s[i].at <= CLK_MAX_AGE_NS &&
		    (best < 0 || c->s[i].delay < c->s[best].delay ||
		     (c->s[i].delay == c->s[best].delay && c->s[i].at > c->s[best].at)))
			best = i;
	if (best < 0)
		return -1;
	*ret_offset = c->s[best].offset;
	/* half the round trip, and what two clocks' rates may differ by over the peer's hold (it
	 * is measured with its clock) and since the sample */
	*ret_bound = c->s[best].delay / 2 +
		     (c->s[best].hold + (now - c->s[best].at)) / 1000000 * CLK_DRIFT_PPM * 2;
	return 0;
}
