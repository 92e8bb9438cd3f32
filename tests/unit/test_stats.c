/*
 * test_stats.c -- timing statistics: median, p90 (linear interpolation),
 * sample standard deviation, and the per-iteration max over ranks.
 */
#include "t.h"
#include "report.h"
#include "stats.h"

#include <math.h>
#include <string.h>

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
	json_array_append_new(perf, json_pack("{s:s,s:i,s:[f,f,f],s:f,s:f,s:b,s:i}", "solution", "candidate",
					      "rank", 0, "times_ms", 1.0, 5.0, 1.0, "host_ms", 8.0,
					      "span_ms", 7.5, "recheck_ok", 1, "groups", 3));
	json_array_append_new(perf, json_pack("{s:s,s:i,s:[f,f,f],s:f,s:f,s:b,s:i}", "solution", "candidate",
					      "rank", 1, "times_ms", 2.0, 1.0, 3.0, "host_ms", 8.0,
					      "span_ms", 7.5, "recheck_ok", 1, "groups", 3));
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
	json_decref(perf);
	return t_done("test_stats");
}
