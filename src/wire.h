/*
 * wire.h -- the parent-rank contract (issue 22): the job the parent sends
 * each rank, as one struct with one pack and one unpack (jansson), used by
 * job.c (writes it), launch.c (addresses it to each rank), rank.c and the
 * fake rank of the tests (read it). Unpack refuses a message with a missing
 * key or a wrong type and says which, where each reader once took 0 or NULL
 * for anything absent. The keys are the ones the job always had.
 *
 * Values are typed in the struct (issue 39): the mode, the dtype and the
 * timing mode are enums, written on the wire by their names, and unpack
 * refuses a name it does not know (the judge reports it) where the judge
 * once took an unknown timing mode for warm.
 */
#ifndef PKB_WIRE_H
#define PKB_WIRE_H

#include "perfplan.h"  /* defines: enum perf_mode, perf_mode_name */
#include "pkb.h"       /* defines: pkb_dtype */

#include <jansson.h>
#include <stddef.h>

#define WIRE_MAX_SOL 2

struct wire_solution {
	char role[16];            /* "reference", "candidate" */
	char so[4096];            /* the built shared object */
	int nccl;                 /* needs the NCCL communicator */
};

/* what the ranks do with the solutions: on the wire "eval" or "run" */
enum wire_mode { WIRE_EVAL, WIRE_RUN, WIRE_MODE_COUNT };
const char *wire_mode_name(enum wire_mode m);

struct wire_job {
	enum wire_mode mode;
	char problem[16];         /* the problem's id, as digits */
	long long m, n;           /* base shape */
	pkb_dtype dtype;          /* on the wire dtype_name's ("bf16") */
	long long seed;
	int seed_drawn;           /* drawn by this node, not given: across nodes
				     node 0's is used (rendezvous.c) */
	int trials, trial0;
	int device_timeout_ms;    /* 0: the rank's default (5000) */
	char save_dir[4096];      /* run --save; "" none */
	char ref_cache[4096];     /* eval --ref-cache: the judge's store of the
				     reference's trial outputs (refcache.h); "" none */
	int sandbox;              /* 1: the rank enters its sandbox before loading
				     (src/sandbox.h); 0: --no-sandbox */
	double atol, rtol;        /* < 0: the problem's own */
	int n_sol;
	struct wire_solution sol[WIRE_MAX_SOL];
	int has_perf;             /* --measure-perf */
	struct {
		int warmup, iters, block;
		enum perf_mode mode;   /* perfplan.h's table names it on the wire */
	} perf;
	int rank, world, local_rank;   /* launch.c's, per rank; -1 until then */
	/* the ranks of rank's host, [host_first, host_first + host_size): the
	 * ones whose memory it can map (symm.c); all W on one node */
	int host_first, host_size;
};

/* defaults: eval, bf16, no save_dir, no tolerances, no perf, sandboxed, not
 * yet addressed */
void wire_job_init(struct wire_job *j);
/* the job as sent (its address only when rank >= 0) */
json_t *wire_job_pack(const struct wire_job *j);
/* launch.c: the copy of the job for rank r, whose host holds ranks
 * [host_first, host_first + host_size) */
void wire_job_address(json_t *job, int rank, int world, int local_rank, int host_first,
		      int host_size);
/* 0, or -1 with `err` naming the key that is missing, of the wrong type, too
 * long, out of range or (mode, dtype, perf.mode) not a name it knows;
 * `addressed`: rank, world, local_rank, host_first and host_size required */
int wire_job_unpack(json_t *in, struct wire_job *j, int addressed, char *err, size_t n);

/* ---- the records a rank sends back (MSG_RESULT), one struct per kind.
 * The per-output compare records (name, ok, n, n_bad, l2_rel, worst, ...)
 * stay JSON: they go to --json as they are (docs/RESULTS.md). ---- */

/* "trial": one eval trial on one rank */
struct wire_trial {
	int trial, rank, ok;
	char gpu[96];             /* the rank's GPU, by name; "" not said */
	json_t *outputs;          /* array of compare records; pack takes a reference */
};
/* "run": the output statistics of pkb run on one rank */
struct wire_run {
	int rank;
	char gpu[96];             /* as wire_trial's */
	json_t *outputs;          /* array of {name, mean_abs, amax, nonfinite} */
};
/* A GPU's heat around one solution's timing (therm.h; read 0: not read,
 * not on the wire): C and SM MHz as its warmup began and after its timed
 * calls, the wait for the GPU to cool before its warmup, the degrees it was
 * still above the first solution's start after that wait (0: within the
 * slack), and the degrees its pkb_fini and exit raised the GPU's. */
struct wire_heat {
	int read, temp_c[2], sm_mhz[2], hot_c, fini_rise_c;
	double cool_s;
};
/* "perf": one solution's timed calls on one rank (docs/TIMING.md) */
struct wire_perf {
	char solution[16];        /* role */
	int rank;
	int n;                    /* timed calls */
	double *times_ms;         /* [n] each call's events */
	double *start_ms;         /* [n] its start from the timed phase's base event */
	double host_ms, span_ms;  /* host wall and event span of the timed blocks */
	int groups, block;
	char mode[16];
	int inputs_modified, recheck_ok, gate_expired;
	char device[256];
	json_t *recheck;          /* array of compare records of failed re-checks */
	struct wire_heat heat;
};

json_t *wire_trial_pack(const struct wire_trial *t);
json_t *wire_run_pack(const struct wire_run *r);
json_t *wire_perf_pack(const struct wire_perf *p);
/* its object: the perf record's "therm", and eval's "gpu_heat" of a summary */
json_t *wire_heat_pack(const struct wire_heat *h);
/* 0, or -1 naming what is wrong. outputs/recheck are borrowed from `in`;
 * wire_perf_unpack allocates the arrays: wire_perf_free */
int wire_trial_unpack(json_t *in, struct wire_trial *t, char *err, size_t n);
int wire_run_unpack(json_t *in, struct wire_run *r, char *err, size_t n);
int wire_perf_unpack(json_t *in, struct wire_perf *p, char *err, size_t n);
void wire_perf_free(struct wire_perf *p);
/* any record: its kind known and the record whole (launch.c checks every
 * MSG_RESULT with it before the caller sees it) */
int wire_record_check(json_t *in, char *err, size_t n);

#endif
