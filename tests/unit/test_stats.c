/*
 * test_stats.c -- timing statistics: median, p90 (linear interpolation),
 * sample standard deviation, and the per-iteration max over ranks.
 */
#include "t.h"
#include "report.h"
#include "stats.h"
#include "wire.h"

#include <math.h>
#include <string.h>

/* a whole perf record (wire.h) of three timed calls, as a rank sends it */
static json_t *perf_rec(int rank, double a, double b, double c)
{
	double times[3] = { a, b, c }, starts[3] = { 0, 2, 4 };
	struct wire_perf p = { .rank = rank, .n = 3, .times_ms = times, .start_ms = starts,
			       .host_ms = 8.0, .span_ms = 7.5, .groups = 3, .block = 10,
			       .recheck_ok = 1, .recheck = json_array() };
	strcpy(p.solution, "candidate");
	strcpy(p.mode, "warm");
	strcpy(p.device, "NVIDIA H200");
	json_t *j = wire_perf_pack(&p);
	json_decref(p.recheck);
	return j;
}

int main(void)
{
	double x[] = { 5, 1, 4, 2, 3 };
	struct stats s;
	stats_compute(x, 5, &s);
	CHECK(s.n == 5 && s.median == 3 && s.min == 1 && s.max == 5 && s.mean == 3);
	CHECK(fabs(s.p90 - 4.6) < 1e-12);
	CHECK(fabs(s.std - sqrt(2.5)) < 1e-12);
	double y[] = { 1, 2, 3, 4 };
	stats_compute(y, 4, &s);
	CHECK(s.median == 2.5);
	stats_compute(y, 0, &s);
	CHECK(s.n == 0);

	/* the figure of an iteration is the slowest rank's */
	json_t *perf = json_array();
	json_array_append_new(perf, perf_rec(0, 1.0, 5.0, 1.0));
	json_array_append_new(perf, perf_rec(1, 2.0, 1.0, 3.0));
	struct perf_summary ps;
	report_perf(perf, "candidate", 2, 3, &ps);
	CHECK(ps.ok && ps.st.n == 3 && ps.st.median == 3.0 && ps.st.min == 2.0 && ps.st.max == 5.0);
	CHECK(ps.skew_ms == 2.0 && !ps.escaped && ps.recheck_ok);
	/* work that escaped the stream: the host clock far above the events */
	json_object_set_new(json_array_get(perf, 1), "host_ms", json_real(40.0));
	report_perf(perf, "candidate", 2, 3, &ps);
	CHECK(ps.escaped);
	/* a rank missing: no summary */
	report_perf(perf, "candidate", 3, 3, &ps);
	CHECK(!ps.ok);
	/* a record that is not whole is not used: its rank is missing */
	json_object_del(json_array_get(perf, 1), "start_ms");
	report_perf(perf, "candidate", 2, 3, &ps);
	CHECK(!ps.ok);
	json_decref(perf);
	return t_done("test_stats");
}
