/*
 * stats.c -- see stats.h. Percentiles interpolate linearly between order
 * statistics (numpy's default), std is the sample deviation (n - 1).
 */
#include "stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double quantile(const double *x, int n, double q)
{
	double pos = q * (n - 1);
	int lo = (int)floor(pos);
	int hi = lo + 1 < n ? lo + 1 : lo;
	return x[lo] + (pos - lo) * (x[hi] - x[lo]);
}

void stats_compute(double *x, int n, struct stats *s)
{
	memset(s, 0, sizeof *s);
	s->n = n;
	if (n <= 0)
		return;
	qsort(x, (size_t)n, sizeof *x, cmp_double);
	double sum = 0;
	for (int i = 0; i < n; i++)
		sum += x[i];
	s->mean = sum / n;
	double var = 0;
	for (int i = 0; i < n; i++)
		var += (x[i] - s->mean) * (x[i] - s->mean);
	s->std = n > 1 ? sqrt(var / (n - 1)) : 0;
	s->min = x[0];
	s->max = x[n - 1];
	s->median = quantile(x, n, 0.5);
	s->p90 = quantile(x, n, 0.9);
}
