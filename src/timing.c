/*
 * timing.c -- the timing engine of one judge (docs/TIMING.md): one solution
 * process after the other (the candidate, then the reference), each from
 * the same first input content; input groups over 3 x L2 rotated through
 * blocks of calls released together by a launch gate, each block's groups
 * drawn anew behind the gate; ranks aligned by a device barrier before
 * every call; the judge's events around each call of the solution process
 * (stream memory operations on shared words: solhost.c has the other
 * half); snapshots of calls drawn at random, and the last output of each
 * output set, compared between the two solutions. What to do when (which
 * group, which output set, the gate's state, block sizes) is perfplan.c's,
 * tested on the host; this file does it on the GPU.
 */
#define _GNU_SOURCE
#include "timing.h"
#include "inputs.h"    /* defines: gen_inputs, gen_inputs_async, draw_host_many */
#include "judgecmp.h"  /* defines: copy_outputs, compare_keep_first */
#include "kernels.h"   /* defines: kern_gate, kern_barrier, kern_l2_flush, kern_checksum */
#include "perfplan.h"  /* defines: perf_plan_make, perf_track, perf_gate */
#include "rank_env.h"  /* defines: struct rank_env */
#include "rank_link.h" /* defines: phase, rank_fail, sol_command, coll_allgather, CUDA_OR */
#include "symm.h"      /* defines: make_dev_comm, symm_free */
#include "therm.h"     /* defines: therm_open, therm_read, therm_wait, THERM_SLACK_C */
#include "util.h"

#include <cuda_runtime_api.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

/* at most this many snapshots, and at most SNAP_BYTES of them */
#define MAX_SNAP 16
#define SNAP_BYTES ((size_t)1 << 30)

struct perf_run {
	int s;               /* index into the job's solutions */
	double *ms;          /* per timed iteration, this rank */
	double *start_ms;    /* its start, from the timed phase's base event */
	int n;
	struct perf_track track; /* where its calls went (perfplan.h) */
	double host_ms;      /* host wall of all timed blocks */
	double span_ms;      /* block-start event to last end event, per block, summed */
	int gate_expired;    /* timed blocks whose launch gate expired */
	int snap_ok;         /* its snapshots matched the reference's */
	int inputs_modified; /* a timed call of it wrote into an input group */
	json_t *snap_outs;   /* the mismatches of the first that did not */
	struct wire_heat heat; /* the GPU as NVML read it (wire.h) */
};

struct perf_set {
	struct perf_plan plan;
	void **in[PERF_MAX_GROUPS];         /* [group][tensor] */
	void *staging[PERF_MAX_GROUPS][PKB_MAX_TENSORS]; /* pinned, host-drawn tensors */
	int gen[PERF_MAX_GROUPS];           /* the content generation each group holds */
	uint64_t *sums;                     /* device: [group][tensor] checksum of that content */
	uint64_t *now_sum;                  /* device: checksum scratch */
	uint32_t *modified;                 /* device: set when a group's content changed */
	void **out[MAX_SOL][PERF_MAX_GROUPS + 1]; /* [solution][set][tensor]: each solution
						  * has its own, so that the re-check reads
						  * what that solution wrote */
	void *flush;                        /* 2 x L2, read to leave L2 clean */
	size_t flush_bytes;
	char device[256];                   /* the GPU's name, for the roofline */
	/* the launch gate: host memory mapped for the device */
	volatile uint32_t *gate;            /* [0] the host's release word, [1] expired */
	volatile uint32_t *gate_dev;        /* the same words, as the device sees them */
	uint32_t gate_gen;
	struct perf_gate gate_state;        /* on until it expired twice (perfplan.h) */
	uint32_t word;                      /* the last go word written this solution */
	pkb_dev_comm align;                 /* the judges' alignment barrier */
	cudaEvent_t *ev, base;
	struct perf_run run[MAX_SOL];
	/* the late-work check: the outputs of one call of each of n_snap timed
	 * blocks, block and call chosen at random per launch and told to no
	 * solution, copied by the judge's stream right after that call's end
	 * event */
	int n_snap, snap_block[MAX_SNAP], snap_call[MAX_SNAP];
	void *snap[MAX_SNAP][PKB_MAX_TENSORS];       /* device, the judge's */
	void *cand_snap[MAX_SNAP][PKB_MAX_TENSORS];  /* host: the candidate's */
	int timed_block;                              /* of the solution being timed */
	struct therm *therm;                          /* NULL: heat not read */
};

/* A block's calls are enqueued behind a gate kernel and released at once, so
 * the GPU runs them back to back and no call's events include the host's
 * enqueue time (docs/TIMING.md). A solution that synchronises inside its
 * run cannot be gated: the gate expires after GATE_NS and the block runs
 * as enqueued; after two expiries the gate is left off. */
#define GATE_NS 200000000ull

static void *dev_alloc(struct rank_env *E, size_t bytes)
{
	void *p = NULL;
	CUDA_OR(E, OUT_RUNTIME_ERROR, cudaMalloc(&p, bytes + 16));
	return p;
}

/* checksums of group g's tensors, as generated, into ps->sums */
static void sum_group(struct rank_env *E, struct perf_set *ps, int g, uint64_t *dst)
{
	for (int i = 0; i < E->io.n_in; i++)
		if (kern_checksum(ps->in[g][i], tensor_desc_bytes(&E->io.in[i]), dst + i,
				  (struct CUstream_st *)E->stream))
			rank_fail(E, OUT_RUNTIME_ERROR, "input checksum failed");
}

/* group g's content still as drawn, else ps->modified is set */
static void check_group(struct rank_env *E, struct perf_set *ps, int g)
{
	uint64_t *want = ps->sums + (size_t)g * PKB_MAX_TENSORS;
	sum_group(E, ps, g, ps->now_sum);
	for (int i = 0; i < E->io.n_in; i++)
		if (kern_flag_if_differ(ps->now_sum + i, want + i, ps->modified,
					(struct CUstream_st *)E->stream))
			rank_fail(E, OUT_RUNTIME_ERROR, "input check failed");
}

/* Group g gets content no call has seen: the next generation (`what`:
 * its host-drawn tensors already drawn into its staging, or, in warmup,
 * kept). Its current content is checked first: a call that wrote into its
 * inputs is caught. */
static void regen_group(struct rank_env *E, struct perf_set *ps, int g, enum gen_what what)
{
	check_group(E, ps, g);
	ps->gen[g]++;
	gen_inputs_async(E, perf_trial(g, ps->gen[g]), ps->in[g], ps->staging[g], what);
	sum_group(E, ps, g, ps->sums + (size_t)g * PKB_MAX_TENSORS);
}

/* The host-drawn tensors of a timed block's next generations, drawn into
 * the groups' staging before the block's gate is enqueued, on several
 * threads: on the host they cost up to 0.7 s a group (060 at W = 2), and
 * drawn behind the gate they outlasted it (GATE_NS), so two blocks of
 * warmup turned the gate off for the whole timing of 060, 050 and 055
 * (2x H200, 2026-11-28). Staged content is the judge's alone: it reaches
 * the GPU by the copies regen_group enqueues behind the gate. 0 when the
 * problem draws nothing on the host. */
static int draw_block(struct rank_env *E, struct perf_set *ps, long call, int count)
{
	int host = 0;
	for (int i = 0; i < E->io.n_in; i++)
		host |= E->io.in[i].dist.kind == PKB_DIST_HOST;
	if (!host)
		return 0;
	int trials[PERF_MAX_GROUPS];
	void **staging[PERF_MAX_GROUPS];
	for (int k = 0; k < count; k++) {
		int g = perf_group(&ps->plan, call + k);   /* no group twice in a block */
		trials[k] = perf_trial(g, ps->gen[g] + 1);
		staging[k] = ps->staging[g];
	}
	draw_host_many(E, count, trials, staging);
	return 1;
}

/* every group's content still as drawn (the last block's calls are checked
 * here, the others when their groups are drawn anew) */
static void check_groups(struct rank_env *E, struct perf_set *ps)
{
	for (int g = 0; g < ps->plan.groups; g++)
		check_group(E, ps, g);
	CUDA_OR(E, OUT_RUNTIME_ERROR, cudaStreamSynchronize(E->stream));
}

static void flush_l2(struct rank_env *E, struct perf_set *ps)
{
	if (kern_l2_flush(ps->flush, ps->flush_bytes, (struct CUstream_st *)E->stream))
		rank_fail(E, OUT_RUNTIME_ERROR, "L2 flush launch failed");
}

static void perf_prepare(struct rank_env *E, struct perf_set *ps, enum perf_mode mode,
			 int warmup, int iters, int block)
{
	struct cudaDeviceProp prop;
	CUDA_OR(E, OUT_RUNTIME_ERROR, cudaGetDeviceProperties(&prop, E->device));
	size_t in_bytes = 0;
	for (int i = 0; i < E->io.n_in; i++)
		in_bytes += tensor_desc_bytes(&E->io.in[i]);
	/* ranks may hold inputs of different sizes (a scatter's root holds W
	 * slabs): the plan must be the same everywhere, so it is made from the
	 * least and the most any rank holds */
	size_t *all = xcalloc((size_t)E->world, sizeof *all);
	if (coll_allgather(E, &in_bytes, all, sizeof in_bytes) < 0)
		rank_fail(E, OUT_INTERNAL, "the ranks could not agree on input groups");
	size_t least = in_bytes, most = in_bytes;
	for (int r = 0; r < E->world; r++) {
		least = all[r] < least ? all[r] : least;
		most = all[r] > most ? all[r] : most;
	}
	free(all);
	perf_plan_make(&ps->plan, mode, least, most, (size_t)prop.l2CacheSize, warmup, iters, block);
	snprintf(ps->device, sizeof ps->device, "%s", prop.name);

	int G = ps->plan.groups;
	ps->sums = dev_alloc(E, (size_t)G * PKB_MAX_TENSORS * sizeof(uint64_t));
	ps->now_sum = dev_alloc(E, PKB_MAX_TENSORS * sizeof(uint64_t));
	ps->modified = dev_alloc(E, sizeof(uint32_t));
	CUDA_OR(E, OUT_RUNTIME_ERROR, cudaMemset(ps->modified, 0, sizeof(uint32_t)));
	for (int g = 0; g < G; g++) {
		ps->in[g] = xcalloc(PKB_MAX_TENSORS, sizeof(void *));
		for (int i = 0; i < E->io.n_in; i++)
			ps->in[g][i] = dev_alloc(E, tensor_desc_bytes(&E->io.in[i]));
		gen_inputs(E, perf_trial(g, 0), ps->in[g]);
		sum_group(E, ps, g, ps->sums + (size_t)g * PKB_MAX_TENSORS);
	}
	for (int s = 0; s < E->n_sol; s++)
		for (int k = 0; k < ps->plan.out_sets; k++) {
			ps->out[s][k] = xcalloc(PKB_MAX_TENSORS, sizeof(void *));
			for (int i = 0; i < E->io.n_out; i++) {
				size_t b = tensor_desc_bytes(&E->io.out[i]);
				ps->out[s][k][i] = dev_alloc(E, b);
				/* nothing left over from earlier allocations */
				CUDA_OR(E, OUT_RUNTIME_ERROR, cudaMemset(ps->out[s][k][i], 0xff, b));
			}
		}
	void *gate = NULL;
	CUDA_OR(E, OUT_RUNTIME_ERROR, cudaHostAlloc(&gate, 2 * sizeof(uint32_t), cudaHostAllocMapped));
	ps->gate = gate;
	ps->gate[0] = ps->gate[1] = 0;
	CUDA_OR(E, OUT_RUNTIME_ERROR, cudaHostGetDevicePointer((void **)&ps->gate_dev, gate, 0));
	perf_gate_init(&ps->gate_state);
	ps->flush_bytes = 2 * (size_t)prop.l2CacheSize;
	ps->flush = dev_alloc(E, ps->flush_bytes);
	CUDA_OR(E, OUT_RUNTIME_ERROR, cudaMemset(ps->flush, 0, ps->flush_bytes));
	CUDA_OR(E, OUT_RUNTIME_ERROR, cudaStreamSynchronize(E->stream));
	/* no L2 set aside for persisting accesses: lines marked persisting
	 * would survive the cold timing's flush (issue 44). A candidate cannot
	 * set the limit (the loader refuses cudaDeviceSetLimit/cuCtxSetLimit);
	 * perf_l2_check makes sure of it after the timed calls. */
	cudaError_t e = cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0);
	if (e == cudaErrorUnsupportedLimit)   /* a GPU without it (before Ampere) */
		cudaGetLastError();
	else
		CUDA_OR(E, OUT_RUNTIME_ERROR, e);
	if (e == cudaSuccess)
		CUDA_OR(E, OUT_RUNTIME_ERROR, cudaCtxResetPersistingL2Cache());
}

/* the L2 set-aside still 0 after the timed calls, else flagged */
static void perf_l2_check(struct rank_env *E)
{
	size_t persisting = 0;
	if (cudaDeviceGetLimit(&persisting, cudaLimitPersistingL2CacheSize) != cudaSuccess) {
		cudaGetLastError();   /* no such limit on this GPU: nothing to set aside */
		return;
	}
	if (persisting)
		rank_fail(E, OUT_FLAGGED, "%zu bytes of L2 were set aside for persisting accesses "
			  "during the timed calls: cached lines survive the harness's flush, so the "
			  "times are not trusted", persisting);
}

static void perf_release(struct rank_env *E, struct perf_set *ps)
{
	for (int g = 0; g < ps->plan.groups; g++) {
		for (int i = 0; i < E->io.n_in; i++)
			cudaFree(ps->in[g][i]);
		free(ps->in[g]);
	}
	for (int s = 0; s < E->n_sol; s++)
		for (int k = 0; k < ps->plan.out_sets; k++) {
			for (int i = 0; i < E->io.n_out; i++)
				cudaFree(ps->out[s][k][i]);
			free(ps->out[s][k]);
		}
	cudaFree(ps->sums);
	cudaFree(ps->now_sum);
	cudaFree(ps->modified);
	cudaFree(ps->flush);
	for (int j = 0; j < ps->n_snap; j++)
		for (int i = 0; i < E->io.n_out; i++) {
			cudaFree(ps->snap[j][i]);
			free(ps->cand_snap[j][i]);
		}
	cudaFreeHost((void *)ps->gate);
	for (int g = 0; g < PERF_MAX_GROUPS; g++)
		for (int i = 0; i < PKB_MAX_TENSORS; i++)
			if (ps->staging[g][i])
				cudaFreeHost(ps->staging[g][i]);
}


/* the calls whose outputs the judge snapshots: one call of each of n_snap
 * timed blocks (every block, up to 16 and 1 GiB), block and call drawn from
 * the OS per launch (the same for every solution of it). A candidate that
 * skips a fraction p of its calls is caught with probability about
 * 1 - (1 - p)^n_snap, wherever in a block the calls it skips are. */
static void snap_plan(struct rank_env *E, struct perf_set *ps)
{
	int blocks = (ps->plan.iters + ps->plan.block - 1) / ps->plan.block;
	size_t out_bytes = 0;
	for (int i = 0; i < E->io.n_out; i++)
		out_bytes += tensor_desc_bytes(&E->io.out[i]);
	size_t fit = out_bytes ? SNAP_BYTES / out_bytes : MAX_SNAP;
	int n = blocks < MAX_SNAP ? blocks : MAX_SNAP;
	n = (size_t)n > fit ? (int)(fit ? fit : 1) : n;
	/* rank 0 draws, every rank takes its draw: the ranks snapshot the same calls */
	uint64_t seed = 0;
	if (E->rank == 0 && getrandom(&seed, sizeof seed, 0) != (ssize_t)sizeof seed)
		rank_fail(E, OUT_ENV_ERROR, "cannot draw from the OS (getrandom)");
	uint64_t *all = xcalloc((size_t)E->world, sizeof *all);
	if (coll_allgather(E, &seed, all, sizeof seed) < 0)
		rank_fail(E, OUT_INTERNAL, "lost the parent");
	seed = all[0];
	free(all);
	int *order = xcalloc((size_t)blocks, sizeof *order);
	for (int b = 0; b < blocks; b++)
		order[b] = b;
	for (int b = blocks - 1; b > 0; b--) {   /* Fisher-Yates */
		seed = mix64(seed + 0x9e3779b97f4a7c15ull);
		int r = (int)(seed % (uint64_t)(b + 1)), t = order[b];
		order[b] = order[r];
		order[r] = t;
	}
	ps->n_snap = n;
	for (int j = 0; j < n; j++) {
		ps->snap_block[j] = order[j];
		seed = mix64(seed + 0x9e3779b97f4a7c15ull);
		ps->snap_call[j] = (int)(seed % (uint64_t)ps->plan.block);
		for (int i = 0; i < E->io.n_out; i++) {
			size_t b = tensor_desc_bytes(&E->io.out[i]);
			ps->snap[j][i] = dev_alloc(E, b);
			ps->cand_snap[j][i] = xmalloc(b + 1);
		}
	}
	free(order);
}

/* after the end event of call k of a timed block of `count` calls, on the
 * judge's stream: the chosen call of this block (the last, if the block is
 * shorter than the draw) */
static void snapshot(struct rank_env *E, struct perf_set *ps, int s, int o, int k, int count)
{
	for (int j = 0; j < ps->n_snap; j++) {
		int at = ps->snap_call[j] < count ? ps->snap_call[j] : count - 1;
		if (ps->snap_block[j] != ps->timed_block || k != at)
			continue;
		for (int i = 0; i < E->io.n_out; i++)
			CUDA_OR(E, OUT_RUNTIME_ERROR,
				cudaMemcpyAsync(ps->snap[j][i], ps->out[s][o][i],
						tensor_desc_bytes(&E->io.out[i]),
						cudaMemcpyDeviceToDevice, E->stream));
	}
}

/* The candidate is timed first: its snapshots wait on the host; the
 * reference's are compared with them, the same calls on the same content
 * (perf_rewind). Late work -- a done word written before the outputs
 * were -- is a mismatch here. A lone solution (pkb run) keeps its own. */
static int snap_check(struct rank_env *E, struct perf_set *ps, int s, json_t *outs)
{
	int ok = 1;
	json_t *one = json_array();
	for (int j = 0; j < ps->n_snap; j++) {
		if (s != 0 || E->n_sol == 1) {
			copy_outputs(E, ps->snap[j], ps->cand_snap[j]);
			continue;
		}
		for (int i = 0; i < E->io.n_out; i++)
			memcpy(E->host_out[i], ps->cand_snap[j][i], tensor_desc_bytes(&E->io.out[i]));
		copy_outputs(E, ps->snap[j], E->host_ref);
		compare_keep_first(E, one, outs, &ok);
	}
	json_decref(one);
	return ok;
}

/* `count` calls of the solution process, timed ones between events of the
 * judge's stream. The calls run in the solution process, on its stream,
 * each behind a wait for the judge's "go" word and followed by a write of
 * its "done" word (solhost.c:perf_block); the judge's stream per call:
 * (cold: the L2 flush), the ranks' alignment barrier, the start event, go,
 * a wait for done, the end event. Under MPS the two contexts meet on the
 * GPU without a host round trip: the clock is the judge's, and what the
 * solution process does after it writes done is not on it (docs/TIMING.md).
 * ev[2 * block] marks where this rank's stream starts the block (past the
 * launch gate), for the escape check. Afterwards the groups the block used
 * get fresh content and L2 is left clean, so every block starts alike. */
static void perf_block(struct rank_env *E, struct perf_set *ps, struct perf_run *pr, int count,
		       int timed, pkb_dev_comm align, cudaEvent_t *ev, cudaEvent_t base)
{
	cudaEvent_t start = ev[2 * ps->plan.block];
	const struct perf_plan *P = &ps->plan;
	struct CUstream_st *st = (struct CUstream_st *)E->stream;
	CUDA_OR(E, OUT_RUNTIME_ERROR, cudaDeviceSynchronize());
	int staged = timed && draw_block(E, ps, pr->track.call, count);
	int gated = ps->gate_state.on;
	/* a timed block run without the gate counts as one whose gate
	 * expired: left off after two expiries (warmup's included), it was
	 * not in the count, and the record said 0 */
	pr->gate_expired += timed && !gated;
	if (gated && kern_gate(ps->gate_dev, ++ps->gate_gen, GATE_NS, ps->gate_dev + 1, st))
		rank_fail(E, OUT_RUNTIME_ERROR, "launch gate failed");
	if (timed)
		cudaEventRecord(start, E->stream);
	/* The groups of this block get their fresh content here, behind the
	 * gate: it exists only once the solution process has enqueued the
	 * block's calls, so no call's work can be done ahead of its clock, at
	 * enqueue time (issue 36: work done synchronously before the gate
	 * opened was off every clock). Their old content is checked first.
	 * Warmup blocks draw only the device-drawn tensors anew: 500 draws
	 * of host-drawn ones per solution took 060's launch 328 s (W = 2, 2x
	 * H200), and no warmup call is timed or compared (docs/TIMING.md). */
	for (long c = pr->track.call; c < pr->track.call + count; c++)
		regen_group(E, ps, perf_group(P, c),
			    !timed ? GEN_DEVICE_ONLY : staged ? GEN_STAGED : GEN_ALL);
	flush_l2(E, ps);
	json_t *calls = json_array();
	uint32_t base_word = ps->word;
	for (int k = 0; k < count; k++) {
		int g, o;
		perf_next_call(P, &pr->track, ps->gen, &g, &o);
		json_array_append_new(calls, json_pack("[i,i]", g, o));
		uint32_t v = ++ps->word;
		if (P->mode == PERF_COLD)
			flush_l2(E, ps);
		if (kern_barrier(align, st))
			rank_fail(E, OUT_RUNTIME_ERROR, "alignment barrier launch failed");
		if (timed)
			cudaEventRecord(ev[2 * k], E->stream);
		if (kern_write_u32(E->flags, v, st) || kern_wait_geq(E->flags + 1, v, st))
			rank_fail(E, OUT_ENV_ERROR, "stream memory operations failed (cuStreamWrite"
				  "Value32/cuStreamWaitValue32): the judge cannot time another "
				  "process without them");
		if (timed)
			cudaEventRecord(ev[2 * k + 1], E->stream);
		if (timed)
			snapshot(E, ps, pr->s, o, k, count);
	}
	sol_command(E, json_pack("{s:s,s:I,s:o}", "op", "block", "base", (json_int_t)base_word,
				 "calls", calls), "enqueued");
	uint64_t t0 = now_ns();
	if (gated) {
		/* the host clock starts at the release: it sees what the GPU ran */
		__atomic_store_n(&ps->gate[0], ps->gate_gen, __ATOMIC_RELEASE);
		t0 = now_ns();
	}
	/* its "synced" first: a solution process that dies or fails mid-block
	 * is seen there, where the judge's stream would wait for its done word
	 * until the deadline */
	sol_command(E, NULL, "synced");
	wait_stream(E, "the judge's timing stream");
	if (gated && ps->gate[1]) {
		ps->gate[1] = 0;
		pr->gate_expired += timed;
		perf_gate_expired(&ps->gate_state);
	}
	if (timed) {
		pr->host_ms += (double)(now_ns() - t0) / 1e6;
		float span;
		cudaEventElapsedTime(&span, start, ev[2 * count - 1]);
		pr->span_ms += span;
		for (int k = 0; k < count; k++) {
			float ms, at;
			CUDA_OR(E, OUT_RUNTIME_ERROR, cudaEventElapsedTime(&ms, ev[2 * k], ev[2 * k + 1]));
			CUDA_OR(E, OUT_RUNTIME_ERROR, cudaEventElapsedTime(&at, base, ev[2 * k]));
			pr->start_ms[pr->n] = at;
			pr->ms[pr->n++] = ms;
		}
	}
}

/* the IPC handles of the groups and of solution s's output sets, for its process */
static json_t *perf_handles(struct rank_env *E, struct perf_set *ps, int s)
{
	json_t *groups = json_array(), *sets = json_array();
	for (int g = 0; g < ps->plan.groups; g++)
		json_array_append_new(groups, ipc_handles(E, ps->in[g], E->io.n_in));
	for (int k = 0; k < ps->plan.out_sets; k++)
		json_array_append_new(sets, ipc_handles(E, ps->out[s][k], E->io.n_out));
	return json_pack("{s:s,s:o,s:o,s:b}", "op", "perf", "groups", groups, "sets", sets,
			 "graph", ps->plan.mode == PERF_GRAPH);
}

/* Every group back to its first content: each solution sees the same
 * sequence of input content, so that the reference's output sets hold what
 * the candidate's must (the re-check, perf_recheck) */
static void perf_rewind(struct rank_env *E, struct perf_set *ps)
{
	for (int g = 0; g < ps->plan.groups; g++) {
		ps->gen[g] = 0;
		gen_inputs(E, perf_trial(g, 0), ps->in[g]);
		sum_group(E, ps, g, ps->sums + (size_t)g * PKB_MAX_TENSORS);
	}
	CUDA_OR(E, OUT_RUNTIME_ERROR, cudaMemset(E->flags, 0, 2 * sizeof(uint32_t)));
	CUDA_OR(E, OUT_RUNTIME_ERROR, cudaDeviceSynchronize());
	ps->word = 0;
	perf_gate_init(&ps->gate_state);
}

/* After timing: each output set holds the result of its last call. Both
 * solutions made the same calls on the same content (perf_rewind), so the
 * reference's set o holds what the candidate's set o must. */
static int perf_recheck(struct rank_env *E, struct perf_set *ps, struct perf_run *ref,
			struct perf_run *cand, json_t *outs)
{
	int ok = 1;
	json_t *one = json_array();
	for (int o = 0; o < ps->plan.out_sets; o++) {
		int g, gen, rg, rgen;
		int have = perf_recheck_of(&ps->plan, &cand->track, o, &g, &gen);
		int rhave = perf_recheck_of(&ps->plan, &ref->track, o, &rg, &rgen);
		if (have != rhave || (have && (g != rg || gen != rgen)))
			rank_fail(E, OUT_INTERNAL, "the reference's and the candidate's timed calls "
				  "differ (output set %d)", o);
		if (!have)
			continue;
		copy_outputs(E, ps->out[ref->s][o], E->host_ref);
		copy_outputs(E, ps->out[cand->s][o], E->host_out);
		compare_keep_first(E, one, outs, &ok);
	}
	json_decref(one);
	return ok;
}

static int therm_temp(void *t)
{
	int c, mhz;
	return therm_read(t, &c, &mhz) < 0 ? -1 : c;
}

/* Heat (therm.h): a solution timed after another waits until the GPU is at
 * most THERM_SLACK_C above the temperature the first one's warmup began at
 * (a candidate that heats the GPU in its pkb_fini would hand the reference
 * lower boost clocks), at most THERM_WAIT_S; then the reading as its warmup
 * begins. Still above after the wait: hot_c, which flags the evaluation. */
static void heat_before(struct rank_env *E, struct perf_set *ps, struct perf_run *pr)
{
	if (!ps->therm)
		return;
	const struct wire_heat *first = pr->s == 0 && E->n_sol == 2 ? &ps->run[1].heat : NULL;
	struct wire_heat *h = &pr->heat;
	if (first && first->read) {
		int target = first->temp_c[0] + THERM_SLACK_C, now;
		if (therm_temp(ps->therm) > target)
			phase(E, PH_TIMING, "waiting for the GPU to cool to %d C before the %s's "
			      "warmup", target, E->job.sol[pr->s].role);
		h->cool_s = therm_wait(therm_temp, ps->therm, target, THERM_WAIT_S, 0.1, &now);
		if (now > target)
			h->hot_c = now - first->temp_c[0];
	}
	h->read = therm_read(ps->therm, &h->temp_c[0], &h->sm_mhz[0]) == 0;
}

int perf_heat_mark(struct rank_env *E)
{
	return E->perf && E->perf->therm ? therm_temp(E->perf->therm) : -1;
}

void perf_heat_fini(struct rank_env *E, int s, int before)
{
	int after = perf_heat_mark(E);
	if (before >= 0 && after >= 0)
		E->perf->run[s].heat.fini_rise_c = after - before;
}

void perf_begin(struct rank_env *E)
{
	enum perf_mode mode = E->job.perf.mode;   /* wire.c took only a known one */
	phase(E, PH_TIMING, "preparing %d+%d %s calls per solution", E->job.perf.warmup,
	      E->job.perf.iters, perf_mode_name(mode));
	/* the clock is the judge's, the calls another process's: without MPS
	 * the two contexts time-slice and each call pays ~275 us (H100,
	 * tests/gpu/judge_probe.cu; docs/MPS.md) */
	int mps = 0;
	if (cudaDeviceGetAttribute(&mps, cudaDevAttrMpsEnabled, E->device) != cudaSuccess || !mps)
		rank_fail(E, OUT_ENV_ERROR, "timing needs an NVIDIA MPS daemon serving this GPU "
			  "(the judge times another process's calls; docs/MPS.md): none is");
	struct perf_set *ps = xcalloc(1, sizeof *ps);
	perf_prepare(E, ps, mode, E->job.perf.warmup, E->job.perf.iters,
		     E->job.perf.block);
	if (make_dev_comm(E, &E->align_pads, &E->align_epochs, &E->align_err, &ps->align) < 0)
		rank_fail(E, OUT_RUNTIME_ERROR, "cannot allocate the alignment barrier: %s",
			  E->symm_err);
	snap_plan(E, ps);
	char bus[64], why[300];
	if (cudaDeviceGetPCIBusId(bus, sizeof bus, E->device) == cudaSuccess)
		ps->therm = therm_open(bus, why, sizeof why);
	int block = ps->plan.block;
	ps->ev = xcalloc((size_t)(2 * block + 1), sizeof *ps->ev);
	for (int k = 0; k <= 2 * block; k++)
		CUDA_OR(E, OUT_RUNTIME_ERROR, cudaEventCreate(&ps->ev[k]));
	CUDA_OR(E, OUT_RUNTIME_ERROR, cudaEventCreate(&ps->base));
	E->perf = ps;
}

/* warmup, then the timed blocks of solution s, in its process */
void perf_solution(struct rank_env *E, int s)
{
	struct perf_set *ps = E->perf;
	struct perf_run *pr = &ps->run[s];
	const char *role = E->job.sol[s].role;
	int warmup = ps->plan.warmup, iters = ps->plan.iters, block = ps->plan.block;
	phase(E, PH_TIMING, "warmup of the %s", role);
	perf_rewind(E, ps);
	sol_command(E, perf_handles(E, ps, s), "ok");
	memset(pr, 0, sizeof *pr);
	pr->s = s;
	heat_before(E, ps, pr);
	pr->ms = xcalloc((size_t)iters + (size_t)block, sizeof(double));
	pr->start_ms = xcalloc((size_t)iters + (size_t)block, sizeof(double));
	for (int done = 0, cnt; done < warmup; done += cnt) {
		cnt = perf_warmup_calls(done, warmup, block);
		perf_block(E, ps, pr, cnt, 0, ps->align, ps->ev, ps->base);
	}
	phase(E, PH_TIMING, "timed calls of the %s", role);
	if (kern_barrier(ps->align, (struct CUstream_st *)E->stream))
		rank_fail(E, OUT_RUNTIME_ERROR, "alignment barrier launch failed");
	CUDA_OR(E, OUT_RUNTIME_ERROR, cudaEventRecord(ps->base, E->stream));
	ps->timed_block = 0;
	for (int done = 0; done < iters; done += block, ps->timed_block++)
		perf_block(E, ps, pr, perf_block_calls(done, iters, block), 1, ps->align, ps->ev,
			   ps->base);
	uint32_t aerr = 0, modified = 0;
	cudaMemcpy(&aerr, E->align_err, 4, cudaMemcpyDeviceToHost);
	if (aerr)
		rank_fail(E, OUT_TIMEOUT, "the harness's alignment barrier gave up (a rank stalled)");
	check_groups(E, ps);
	CUDA_OR(E, OUT_RUNTIME_ERROR, cudaMemcpy(&modified, ps->modified, 4, cudaMemcpyDeviceToHost));
	/* this solution's: the flag starts clear for the next */
	pr->inputs_modified = modified != 0;
	CUDA_OR(E, OUT_RUNTIME_ERROR, cudaMemset(ps->modified, 0, sizeof(uint32_t)));
	perf_l2_check(E);
	if (pr->heat.read && therm_read(ps->therm, &pr->heat.temp_c[1], &pr->heat.sm_mhz[1]) < 0)
		pr->heat.read = 0;
	/* the reference, timed last, carries the verdict of the snapshots */
	pr->snap_outs = json_array();
	pr->snap_ok = snap_check(E, ps, s, pr->snap_outs);
}

/* the perf record of every solution, the candidate's re-checked */
void perf_end(struct rank_env *E)
{
	struct perf_set *ps = E->perf;
	/* after every solution process has ended: none can touch its outputs */
	phase(E, PH_FINI, "re-checking the outputs of timed calls");
	for (int s = 0; s < E->n_sol; s++) {
		json_t *outs = json_array();
		/* the reference is not checked against itself; a lone solution
		 * (pkb run) has nothing to be checked against */
		struct perf_run *pr = &ps->run[s];
		int ok = s == 0 ? 1 : perf_recheck(E, ps, &ps->run[0], &ps->run[s], outs);
		if (s > 0 && !ps->run[0].snap_ok) {
			ok = 0;
			json_array_extend(outs, ps->run[0].snap_outs);
		}
		struct wire_perf wp = {
			.rank = E->rank, .n = pr->n, .times_ms = pr->ms,
			.start_ms = pr->start_ms, .host_ms = pr->host_ms,
			.span_ms = pr->span_ms, .groups = ps->plan.groups, .block = ps->plan.block,
			.inputs_modified = pr->inputs_modified, .recheck_ok = ok,
			.gate_expired = pr->gate_expired, .recheck = outs, .heat = pr->heat,
		};
		snprintf(wp.solution, sizeof wp.solution, "%s", E->job.sol[s].role);
		snprintf(wp.mode, sizeof wp.mode, "%s", perf_mode_name(ps->plan.mode));
		snprintf(wp.device, sizeof wp.device, "%s", ps->device);
		send_result(E, wire_perf_pack(&wp));
		json_decref(outs);
		free(pr->ms);
		free(pr->start_ms);
	}
	for (int s = 0; s < E->n_sol; s++)
		json_decref(ps->run[s].snap_outs);
	for (int k = 0; k <= 2 * ps->plan.block; k++)
		cudaEventDestroy(ps->ev[k]);
	cudaEventDestroy(ps->base);
	free(ps->ev);
	perf_release(E, ps);
	therm_close(ps->therm);
	symm_free(E, &E->align_pads);
	cudaFree(E->align_epochs);
	cudaFree(E->align_err);
	free(ps);
	E->perf = NULL;
}
