/*
 * stats.h -- summary statistics of per-iteration times (docs/TIMING.md).
 */
#ifndef PKB_STATS_H
#define PKB_STATS_H

struct stats {
	int n;
	double median, mean, min, max, p90, std;
};

#ifdef __cplusplus
extern "C" {
#endif

/* x is sorted in place */
void stats_compute(double *x, int n, struct stats *s);

#ifdef __cplusplus
}
#endif

#endif
