/*
 * summary.h -- the runs of `pkb score` and `pkb report` as structs: each
 * results.jsonl (pkb sweep) read once into per-problem candidates, the
 * metrics of score.h computed once, and both commands print from these,
 * so that every number of the HTML page is the one `pkb score --json` gives.
 */
#ifndef PKB_SUMMARY_H
#define PKB_SUMMARY_H

#include "score.h"

#include <jansson.h>
#include <stdint.h>

/* outcomes in the order the tables show them; "other" is env_error and
 * internal_error (the harness's fault, not the candidate's) */
enum { OC_PASS, OC_NO_CODE, OC_COMPILE, OC_LOAD, OC_MISMATCH, OC_RUNTIME, OC_TIMEOUT,
       OC_FLAGGED, OC_OTHER, OC_COUNT };
extern const char *const sum_outcome_names[OC_COUNT];
/* How far a candidate got, higher further: pass > flagged (right, but its
 * time not trusted) > mismatch (ran, wrong) > runtime_error = timeout
 * (loaded, did not finish) > load_refused (compiled, refused by the loader)
 * > compile_error > other (the harness failed: unknown) > no_code. A
 * problem with no correct candidate shows its furthest (docs/SWEEP.md). */
extern const int sum_outcome_rank[OC_COUNT];

#define SUM_MAX_P 16
#define SUM_MAX_K 8

/* A candidate's outcome is the verdict the metrics count: its record's,
 * except that a pass timed under the roofline's bound is flagged (as eval
 * flags it; a record of an older pkb or another tool may not be), and a
 * pass at the announced shape that failed at the hidden shape (pkb sweep's
 * second evaluation, docs/SWEEP.md) takes the hidden shape's outcome. */
struct sum_cand {
	char *sample, *candidate, *log;   /* log relative to the run dir */
	int outcome;
	int announced;      /* the outcome at the announced shape alone (the bound checked) */
	int hidden;         /* the hidden shape's outcome; -1: not evaluated there */
	int below_bound;    /* recorded as pass, timed under the bound: flagged here */
	double speedup, sol, fraction;    /* NaN when not timed / no bound */
};

struct sum_problem {
	int id;
	const char *category;
	struct sum_cand *c;
	int n, correct;
	int correct_announced;   /* correct at the announced shape, whatever the hidden one said */
	int best;           /* index of the fastest correct candidate, else the first of
			     * the furthest (sum_outcome_rank); -1 none */
	const char *name;   /* the problem's, "?" when this checkout lacks it */
};

/* what a run is, for the page's header: from DIR/run.json (pkb generate,
 * pkb agent) and the records kept; "-" where neither says. Several values
 * among the records are joined with ", " (sorted); dates as a range. */
struct sum_meta {
	char *model, *provider, *mode, *temperature;   /* run.json */
	char *samples, *world, *gpu, *driver, *cuda, *nccl, *pkb, *date;
};

struct sum_run {
	char *dir, *name;
	char *label;                 /* the model, else the folder; made unique on the page */
	struct sum_meta meta;
	struct sum_problem *p;
	int np;
	int records, left_out;
	json_t *left_reasons;        /* reason -> count */
	int oc[OC_COUNT];            /* over every candidate */
	json_t *oc_by_cat;           /* category -> [OC_COUNT counts] */
	int candidates;
	double pass_at[SUM_MAX_K];   /* pass@k for k = 1..nk: mean over problems with n >= k */
	double pass_announced[SUM_MAX_K];   /* the same, the announced shape alone */
	int hidden_n;                /* candidates evaluated at a hidden shape */
	int hidden_failed;           /* of those, correct at the announced shape only */
	int below_bound;             /* recorded as pass with a time under the bound */
	double fast_p[SUM_MAX_P];    /* per p: mean over problems of the fraction of samples */
	double geo_raw, geo_clamped; int geo_n;
	double mean_sol, mean_fraction; int sol_n, fraction_n;
	json_t *fast_by_cat;         /* category -> fast_1 */
};

struct sum_set {
	struct sum_run *r;
	int nr;
	double p[SUM_MAX_P];
	int np, nk;
	char *fingerprint;           /* the records kept: this hardware and timing */
	int resamples;               /* sum_json's bands (sum_bootstrap): 1000 and seed 1 unless */
	uint64_t seed;               /* set after sum_load; 0 resamples: none */
};

/* read the runs (directories with results.jsonl, or the .jsonl files);
 * p: the fast_p thresholds; -1 with an error printed */
int sum_load(struct sum_set *s, char **paths, int n, const double *p, int np, int nk);
json_t *sum_json(const struct sum_set *s);
void sum_free(struct sum_set *s);
/* Percentile bootstrap over the problems of run r: B resamples of its
 * problems with replacement (splitmix64 seeded with seed and the run's
 * name, so a run's bands do not depend on the other runs), each giving
 * pass@k for k = 1..s->nk (mean over the drawn problems with n >= k) and
 * fast_p at each of p[np] (mean over the drawn problems). lo[m], hi[m]:
 * the 2.5th and 97.5th percentiles (linear between order statistics) of
 * metric m: pass@1..nk first, then the np fast_p; NaN when no resample
 * gives a value. est[m]: the metric over all the problems (score's). */
void sum_bootstrap(const struct sum_set *s, const struct sum_run *r, const double *p, int np,
		   int B, uint64_t seed, double *est, double *lo, double *hi);
/* x as the tables print it: "-" for NaN, 58.3% (pct) or 1.145 */
const char *sum_fmt(double x, int pct, char *buf, int n);
/* the definitions printed under every table (text; the page uses them too) */
extern const char sum_definitions[];

#endif
