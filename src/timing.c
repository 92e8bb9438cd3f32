/*
 * timing.c -- the timing engine of one rank (docs/TIMING.md): input groups
 * over 3 x L2 rotated through blocks of calls released together by a launch
 * gate, ranks aligned by a device barrier before every call, events per
 * call, the blocks' groups regenerated after each, and the outputs of the
 * last calls re-checked against the reference. What to do when (which
 * group, which output set, the gate's state, block sizes, ABBA) is
 * perfplan.c's, tested on the host; this file does it on the GPU.
 */
#define _GNU_SOURCE
#include "kernels.h"   /* defines: kern_gate, kern_barrier, kern_l2_flush, kern_checksum */
#include "perfplan.h"  /* defines: perf_plan_make, perf_track, perf_gate */
#include "rank_env.h"  /* defines: struct rank_env, rank_fail, gen_inputs, make_dev_comm */
#include "util.h"

#include <cuda_runtime_api.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct perf_set {
	struct perf_plan plan;
	void **in[PERF_MAX_GROUPS];         /* [group][tensor] */
	int gen[PERF_MAX_GROUPS];           /* the content generation each group holds */
	uint64_t *sums;                     /* device: [group][tensor] checksum of that content */
	uint64_t *now_sum;                  /* device: checksum scratch */
	uint32_t *modified;                 /* device: set when a group's content changed */
	void **out[MAX_SOL][PERF_MAX_GROUPS + 1]; /* [solution][set][tensor]: each solution
						  * has its own, so that the re-check reads
						  * what that solution wrote */
	void *chk_in[PKB_MAX_TENSORS];      /* the re-check's inputs and reference outputs */
	void *chk_out[PKB_MAX_TENSORS];
	void *flush;                        /* 2 x L2, read to leave L2 clean */
	size_t flush_bytes;
	cudaGraphExec_t graph[MAX_SOL][PERF_MAX_GROUPS];
	char device[256];                   /* the GPU's name, for the roofline */
	/* the launch gate: host memory mapped for the device */
	volatile uint32_t *gate;            /* [0] the host's release word, [1] expired */
	volatile uint32_t *gate_dev;        /* the same words, as the device sees them */
	uint32_t gate_gen;
	struct perf_gate gate_state;        /* on until it expired twice (perfplan.h) */
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

/* Group g gets content no call has seen: the next generation. Its current
 * content is checked first: a call that wrote into its inputs is caught. */
static void regen_group(struct rank_env *E, struct perf_set *ps, int g)
{
	uint64_t *want = ps->sums + (size_t)g * PKB_MAX_TENSORS;
	sum_group(E, ps, g, ps->now_sum);
	for (int i = 0; i < E->io.n_in; i++)
		if (kern_flag_if_differ(ps->now_sum + i, want + i, ps->modified,
					(struct CUstream_st *)E->stream))
			rank_fail(E, OUT_RUNTIME_ERROR, "input check failed");
	ps->gen[g]++;
	gen_inputs(E, perf_trial(g, ps->gen[g]), ps->in[g]);
	sum_group(E, ps, g, want);
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
			for (int i = 0; i < E->io.n_out; i++)
				ps->out[s][k][i] = dev_alloc(E, tensor_desc_bytes(&E->io.out[i]));
		}
	for (int i = 0; i < E->io.n_in; i++)
		ps->chk_in[i] = dev_alloc(E, tensor_desc_bytes(&E->io.in[i]));
	for (int i = 0; i < E->io.n_out; i++)
		ps->chk_out[i] = dev_alloc(E, tensor_desc_bytes(&E->io.out[i]));
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
		for (int s = 0; s < MAX_SOL; s++)
			if (ps->graph[s][g])
				cudaGraphExecDestroy(ps->graph[s][g]);
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
	for (int i = 0; i < E->io.n_in; i++)
		cudaFree(ps->chk_in[i]);
	for (int i = 0; i < E->io.n_out; i++)
		cudaFree(ps->chk_out[i]);
	cudaFree(ps->sums);
	cudaFree(ps->now_sum);
	cudaFree(ps->modified);
	cudaFree(ps->flush);
	cudaFreeHost((void *)ps->gate);
}

/* graph mode: one graph per group, each a capture of one call on that
 * group's inputs and output set (output set = group in this mode) */
static void perf_capture(struct rank_env *E, struct perf_set *ps, int s)
{
	struct solution *sol = &E->sol[s];
	for (int g = 0; g < ps->plan.groups; g++) {
		cudaGraph_t graph = NULL;
		CUDA_OR(E, OUT_RUNTIME_ERROR, cudaStreamSynchronize(E->stream));
		CUDA_OR(E, OUT_RUNTIME_ERROR,
			cudaStreamBeginCapture(E->stream, cudaStreamCaptureModeThreadLocal));
		refresh_ctx(E, sol, ps->in[g], ps->out[s][g]);
		int rc = sol->run(&sol->ctx);
		cudaError_t e = cudaStreamEndCapture(E->stream, &graph);
		if (rc != 0 || e != cudaSuccess || !graph) {
			cudaGetLastError();
			rank_fail(E, OUT_RUNTIME_ERROR, "graph mode: the %s cannot be captured in a "
				  "CUDA graph (%s): work outside ctx->stream, a synchronisation, or "
				  "pkb_run returned %d", sol->role,
				  e != cudaSuccess ? cudaGetErrorString(e) : "no graph", rc);
		}
		e = cudaGraphInstantiate(&ps->graph[s][g], graph, 0);
		cudaGraphDestroy(graph);
		if (e != cudaSuccess)
			rank_fail(E, OUT_RUNTIME_ERROR, "graph mode: cannot instantiate the %s's "
				  "graph: %s", sol->role, cudaGetErrorString(e));
	}
}

struct perf_run {
	int s;               /* index into E->sol */
	double *ms;          /* per timed iteration, this rank */
	double *start_ms;    /* its start, from the timed phase's base event */
	int n;
	struct perf_track track; /* where its calls went (perfplan.h) */
	double host_ms;      /* host wall of all timed blocks */
	double span_ms;      /* block-start event to last end event, per block, summed */
	int gate_expired;    /* timed blocks whose launch gate expired */
};

/* `count` calls of one solution; timed ones get events. Ranks are aligned by
 * a device barrier before every call, outside the events. ev[2 * block]
 * marks where this rank's stream starts the block (past the launch gate):
 * the escape check compares the host clock with the span from there, so
 * that waiting at the first barrier for a rank that released its gate later
 * (an input group to regenerate that is larger on some ranks) is on both
 * clocks, not only the host's. Afterwards the
 * groups it used get fresh content and L2 is left clean, so every block
 * starts from the same state. */
static void perf_block(struct rank_env *E, struct perf_set *ps, struct perf_run *pr, int count,
		       int timed, pkb_dev_comm align, cudaEvent_t *ev, cudaEvent_t base)
{
	cudaEvent_t start = ev[2 * ps->plan.block];
	struct solution *sol = &E->sol[pr->s];
	const struct perf_plan *P = &ps->plan;
	CUDA_OR(E, OUT_RUNTIME_ERROR, cudaDeviceSynchronize());
	int gated = ps->gate_state.on;
	if (gated && kern_gate(ps->gate_dev, ++ps->gate_gen, GATE_NS, ps->gate_dev + 1,
			       (struct CUstream_st *)E->stream))
		rank_fail(E, OUT_RUNTIME_ERROR, "launch gate failed");
	uint64_t t0 = now_ns();
	if (timed)
		cudaEventRecord(start, E->stream);
	long c0 = pr->track.call;
	for (int k = 0; k < count; k++) {
		int g, o;
		perf_next_call(P, &pr->track, ps->gen, &g, &o);
		if (P->mode == PERF_COLD)
			flush_l2(E, ps);
		if (kern_barrier(align, (struct CUstream_st *)E->stream))
			rank_fail(E, OUT_RUNTIME_ERROR, "alignment barrier launch failed");
		if (timed)
			cudaEventRecord(ev[2 * k], E->stream);
		if (P->mode == PERF_GRAPH)
			CUDA_OR(E, OUT_RUNTIME_ERROR, cudaGraphLaunch(ps->graph[pr->s][g], E->stream));
		else
			sol_call(E, sol, ps->in[g], ps->out[pr->s][o]);
		if (timed)
			cudaEventRecord(ev[2 * k + 1], E->stream);
	}
	if (gated) {
		/* the host clock starts at the release: it sees what the GPU ran */
		__atomic_store_n(&ps->gate[0], ps->gate_gen, __ATOMIC_RELEASE);
		t0 = now_ns();
	}
	wait_stream(E, sol->role);
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
	for (long c = c0; c < pr->track.call; c++)
		regen_group(E, ps, perf_group(P, c));
	flush_l2(E, ps);
}

/* After timing: each output set holds the result of its last call, whose
 * group and generation are known. The inputs of that call are drawn again,
 * the reference computes their output, and the two must match. Every rank
 * makes the same reference calls in the same order (they are collective). */
static int perf_recheck(struct rank_env *E, struct perf_set *ps, struct perf_run *pr,
			json_t *outs)
{
	int ok = 1;
	struct solution *ref = &E->sol[0];
	json_t *one = json_array();
	for (int o = 0; o < ps->plan.out_sets; o++) {
		int g, gen;
		if (!perf_recheck_of(&ps->plan, &pr->track, o, &g, &gen))
			continue;
		void *in[PKB_MAX_TENSORS];
		memcpy(in, ps->chk_in, sizeof in);
		gen_inputs(E, perf_trial(g, gen), in);
		poison_outputs(E, ps->chk_out);
		host_barrier(E);
		sol_call(E, ref, in, ps->chk_out);
		wait_stream(E, ref->role);
		copy_outputs(E, ps->chk_out, E->host_ref);
		copy_outputs(E, ps->out[pr->s][o], E->host_out);
		json_array_clear(one);
		if (!compare_outputs(E, one) && ok) {
			ok = 0;
			json_array_extend(outs, one);
		}
	}
	json_decref(one);
	return ok;
}

void do_perf(struct rank_env *E)
{
	int warmup = E->job.perf.warmup;
	int iters = E->job.perf.iters;
	int block = E->job.perf.block;
	int mode = perf_mode_parse(E->job.perf.mode);
	if (mode < 0)
		mode = PERF_WARM;
	phase(E, PH_TIMING, "preparing %d+%d %s calls per solution", warmup, iters,
	      perf_mode_name((enum perf_mode)mode));
	struct perf_set ps;
	memset(&ps, 0, sizeof ps);
	perf_prepare(E, &ps, (enum perf_mode)mode, warmup, iters, block);
	block = ps.plan.block;
	if (mode == PERF_GRAPH)
		for (int s = 0; s < E->n_sol; s++)
			perf_capture(E, &ps, s);

	pkb_dev_comm align;
	if (make_dev_comm(E, &E->align_pads, &E->align_epochs, &E->align_err, &align) < 0)
		rank_fail(E, OUT_RUNTIME_ERROR, "cannot allocate the alignment barrier: %s",
			  E->symm_err);
	cudaEvent_t *ev = xcalloc((size_t)(2 * block + 1), sizeof *ev), base;
	for (int k = 0; k <= 2 * block; k++)
		CUDA_OR(E, OUT_RUNTIME_ERROR, cudaEventCreate(&ev[k]));
	CUDA_OR(E, OUT_RUNTIME_ERROR, cudaEventCreate(&base));

	struct perf_run pr[MAX_SOL];
	memset(pr, 0, sizeof pr);
	for (int s = 0; s < E->n_sol; s++) {
		pr[s].s = s;
		pr[s].ms = xcalloc((size_t)iters + (size_t)block, sizeof(double));
		pr[s].start_ms = xcalloc((size_t)iters + (size_t)block, sizeof(double));
	}
	/* warmup, then timed blocks interleaved ABBA so that drift of clocks or
	 * temperature hits every solution alike */
	phase(E, PH_TIMING, "warmup");
	for (int done = 0; done < warmup; done += block)
		for (int s = 0; s < E->n_sol; s++)
			perf_block(E, &ps, &pr[s], perf_block_calls(done, warmup, block), 0,
				   align, ev, base);
	phase(E, PH_TIMING, "timed calls");
	if (kern_barrier(align, (struct CUstream_st *)E->stream))
		rank_fail(E, OUT_RUNTIME_ERROR, "alignment barrier launch failed");
	CUDA_OR(E, OUT_RUNTIME_ERROR, cudaEventRecord(base, E->stream));
	for (int b = 0, done = 0; done < iters; b++, done += block) {
		int cnt = perf_block_calls(done, iters, block);
		for (int k = 0; k < E->n_sol; k++) {
			int s = perf_abba(b, k, E->n_sol);
			perf_block(E, &ps, &pr[s], cnt, 1, align, ev, base);
		}
	}
	uint32_t aerr = 0, modified = 0;
	cudaMemcpy(&aerr, E->align_err, 4, cudaMemcpyDeviceToHost);
	if (aerr)
		rank_fail(E, OUT_TIMEOUT, "the harness's alignment barrier gave up (a rank stalled)");
	CUDA_OR(E, OUT_RUNTIME_ERROR, cudaMemcpy(&modified, ps.modified, 4, cudaMemcpyDeviceToHost));

	perf_l2_check(E);
	phase(E, PH_TIMING, "re-checking the outputs of timed calls");
	for (int s = 0; s < E->n_sol; s++) {
		struct solution *sol = &E->sol[s];
		check_dev_err(E, sol);
		json_t *outs = json_array();
		/* the reference is not checked against itself, unless it is the
		 * only solution (pkb run) */
		int ok = s == 0 && E->n_sol > 1 ? 1 : perf_recheck(E, &ps, &pr[s], outs);
		struct wire_perf wp = {
			.rank = E->rank, .n = pr[s].n, .times_ms = pr[s].ms,
			.start_ms = pr[s].start_ms, .host_ms = pr[s].host_ms,
			.span_ms = pr[s].span_ms, .groups = ps.plan.groups, .block = block,
			.inputs_modified = modified != 0, .recheck_ok = ok,
			.gate_expired = pr[s].gate_expired, .recheck = outs,
		};
		snprintf(wp.solution, sizeof wp.solution, "%s", sol->role);
		snprintf(wp.mode, sizeof wp.mode, "%s", perf_mode_name(ps.plan.mode));
		snprintf(wp.device, sizeof wp.device, "%s", ps.device);
		send_result(E, wire_perf_pack(&wp));
		json_decref(outs);
		free(pr[s].ms);
		free(pr[s].start_ms);
	}
	for (int k = 0; k <= 2 * block; k++)
		cudaEventDestroy(ev[k]);
	cudaEventDestroy(base);
	free(ev);
	perf_release(E, &ps);
	symm_free(E, &E->align_pads);
	cudaFree(E->align_epochs);
	cudaFree(E->align_err);
}
