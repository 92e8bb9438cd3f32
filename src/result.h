/*
 * result.h -- eval's record (the --json `pkb eval` writes, docs/RESULTS.md)
 * read back into one struct, as wire.h does for the ranks' records. Its
 * readers: pkb sweep (the record's key and verdict), score and report
 * through summary.c (speedups, the roofline, where and when), pkb agent
 * (the verdict and the feedback of each step). Each once took the fields
 * it wanted with its own json_object_get chains and 0 or NULL for anything
 * absent; a wrong type went unnoticed.
 *
 * `outcome` is required. Every other field may be absent (an untimed eval
 * has no perf, a compile_error no launch, older pkb versions fewer fields)
 * or null, and reads as absent: NULL, NaN, -1 or 0 as each field says; one
 * present with another type is refused, naming it. Strings point into the
 * record: valid while it lives.
 */
#ifndef PKB_RESULT_H
#define PKB_RESULT_H

#include <jansson.h>
#include <stddef.h>

#define RESULT_MAX_COORDS 8

/* candidate_perf, reference_perf (docs/TIMING.md) */
struct result_perf {
	int present;
	long long n;                 /* timed calls; 0 absent */
	double median_ms, mean_ms, skew_ms;   /* NaN absent */
	int n_rank_median;
	double *rank_median_ms;      /* [n_rank_median]: each rank's median */
};

/* roofline (docs/ROOFLINE.md): a bound, or the error saying why none */
struct result_roofline {
	int present;
	const char *error;           /* NULL: there is a bound */
	const char *hw, *bottleneck; /* NULL absent */
	double bound_us, fraction, sol_score;   /* NaN absent (sol_score null: not scored) */
};

/* an output's worst element; ref and cand as eval wrote them: a number,
 * or a string ("nan", "inf") in ref_str / cand_str */
struct result_worst {
	int present;
	long long index;
	int n_coords;
	long long coords[RESULT_MAX_COORDS];
	double ref, cand, bound;     /* NaN absent (or a string) */
	const char *ref_str, *cand_str;
};

/* one output of one trial record (compare.c's record) */
struct result_output {
	const char *name;            /* NULL absent */
	const char *look;            /* untouched, zeros, local_only ...; NULL none */
	int ok, l2_failed;
	long long n, n_bad, n_bad_zero;   /* 0 absent */
	double l2_rel, l2_limit;     /* NaN absent */
	struct result_worst worst;
};

/* one trial on one rank */
struct result_trial {
	int trial, rank, ok;
	int n_out;
	struct result_output *out;
};

/* one rank of the launch: where it got to */
struct result_rank {
	int rank, done, failed;
	const char *phase, *message; /* NULL absent */
};

struct result {
	const char *outcome;         /* the verdict: pass, mismatch ... */
	int exit_code;               /* -1 absent */
	const char *message;         /* NULL absent */
	const char *dtype, *nvcc, *pkb_version, *date, *compiler_output;   /* NULL absent */
	long long m, n;              /* -1 absent */
	const char *timing_mode, *device;   /* timing.mode, timing.device; NULL absent */
	/* hardware: the versions the ranks report (NULL where they do not) */
	const char *driver, *cuda_runtime, *nccl;
	double speedup;              /* NaN absent */
	struct result_perf cand, ref;
	struct result_roofline roofline;
	int n_trials;
	struct result_trial *trials; /* trial_records, in the record's order */
	int n_ranks;
	struct result_rank *ranks;   /* launch.ranks */
};

/* r as a record with nothing in it (every field absent, outcome NULL) */
void result_none(struct result *r);
/* eval's record `rec` into r: 0, or -1 with `err` naming the field missing
 * or of the wrong type (r is then result_none's) */
int result_read(json_t *rec, struct result *r, char *err, size_t n);
void result_free(struct result *r);

#endif
