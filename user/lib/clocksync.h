/*
 * The offset between this host's CLOCK_MONOTONIC and another host's, with a bound on its error,
 * from the round trips of the parts the two agents exchange (NTP's on-wire method). Each part
 * carries its sender's clock when sent (t3) and echoes the last part it received from the
 * receiver (that part's send time t1, and how long it held it: t3 - t2); the receiver reads its
 * own clock on arrival (t4):
 *   offset = ((t2 - t1) + (t3 - t4)) / 2      (theirs - ours)
 *   delay  = (t4 - t1) - (t3 - t2)            (the round trip, less the hold)
 * The true offset lies within offset +/- delay / 2, and the two clocks' rates may differ (100 ppm
 * each) over the hold and since. Of the last CLK_SAMPLES samples the one with the shortest
 * round trip is kept.
 * Pure: tests/unit/test_clocksync.c.
 */
#ifndef FTBPF_CLOCKSYNC_H
#define FTBPF_CLOCKSYNC_H

#include <stdint.h>

#define CLK_SAMPLES    8
#define CLK_MAX_RTT_NS 2000000000ull  /* a sample from a longer round trip says little */
#define CLK_MAX_AGE_NS 60000000000ull /* a sample older than this is forgotten */
#define CLK_DRIFT_PPM  100
#define CLK_MAX_NS     (1ull << 62) /* a clock reading beyond this is not one */

struct clk_peer {
	uint64_t their_sent; /* their clock when they sent their latest part, 0 none */
	uint64_t rx_ns;	     /* our clock when it arrived */
	int n, head;
	struct {
		int64_t offset; /* theirs - ours */
		uint64_t delay;
		uint64_t hold; /* how long the peer held our part */
		uint64_t at;   /* our clock */
	} s[CLK_SAMPLES];
	uint64_t rejected; /* samples refused (a round trip that went back, or too long) */
};

/* A part from the peer arrived at now (ours): sent at their_sent (theirs), echoing echo (our
 * clock when we sent the part it answers, 0 none) held for hold ns. 1 when a sample was taken,
 * 0 when there was nothing to take, -1 when refused. */
int clk_receive(struct clk_peer *c, uint64_t their_sent, uint64_t echo, uint64_t hold,
		uint64_t now);
/* What our next part to the peer echoes: their latest send time and how long we held it. */
void clk_echo(const struct clk_peer *c, uint64_t now, uint64_t *ret_echo, uint64_t *ret_hold);
/* The estimate at now: theirs - ours, and its error bound. 0, or -1 with none. */
int clk_offset(const struct clk_peer *c, uint64_t now, int64_t *ret_offset, uint64_t *ret_bound);

#endif
