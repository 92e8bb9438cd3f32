/*
 * hosttest_ce_sim.cu -- the copy-engine candidates (001 ok_ce_twoshot; 002,
 * 005, 006, 007, 008 ok_ce_steps) and pkb_ce_run (include/pkb_ce.cuh)
 * replayed on the host, no GPU, at every world size from 2 to 8 (the lent
 * machines have 2 or 4 GPUs, 8 only at times) and at sizes and tails that cut
 * the last step into 1 to 11 parts.
 *
 * Every rank's pkb_init and pkb_run run as they are, three calls back to
 * back, but their stream operations are recorded, not launched (PKB_CE_SIM,
 * and macros for the CUDA calls): a copy, a sum or a local copy reads and
 * writes byte ranges; an event record and wait order two streams; the n-th
 * barrier of every rank meets the n-th of every other. The harness's own
 * operations stand around each call on the rank's stream: fresh inputs and
 * poisoned outputs before, the outputs read after. Then:
 *   - every barrier must be met by every rank, and the operations must form
 *     no cycle (else the GPUs would hang);
 *   - any two operations that touch the same byte, one of them writing, must
 *     be ordered by streams, events and barriers (else they race);
 *   - run in one order that respects those, every rank's output of every call
 *     must be the collective's result, exactly (fp32 sums of small integers).
 * Prints "ok N cases, 0 failed" or a FAIL line per broken case (the first
 * few), and exits 1 on any. Built with nvcc by tests/cli/t0190-header-host.sh,
 * which also breaks pkb_ce_run in two ways to show that races are caught.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>
#include <cuda_runtime.h>
#include "pkb.h"
#include "pkb_device.cuh"
#include "pkb_copy.cuh"

/* what pkb_ce.cuh leaves to us under PKB_CE_SIM, and the CUDA calls it makes */
#define PKB_CE_SIM
struct pkb_ce;
struct pkb_ce_sum;
static void pkb_ce_meet(const pkb_dev_comm &comm, cudaStream_t st);
static void pkb_ce_local_copy(void *dst, const void *src, size_t bytes, cudaStream_t st);
static int pkb_ce_sum_range(const struct pkb_ce *ce, int world, const struct pkb_ce_sum *sum,
			    size_t off, size_t n, cudaStream_t st);
static cudaError_t sim_memcpy(void *dst, const void *src, size_t n, cudaStream_t st);
static cudaError_t sim_record(cudaEvent_t ev, cudaStream_t st);
static cudaError_t sim_wait(cudaStream_t st, cudaEvent_t ev);
static cudaError_t sim_stream_create(cudaStream_t *st);
static cudaError_t sim_event_create(cudaEvent_t *ev);
static cudaError_t sim_nothing(void)
{
	return cudaSuccess;
}
#define cudaMemcpyAsync(dst, src, n, kind, st) sim_memcpy(dst, src, n, st)
#define cudaEventRecord(ev, st) sim_record(ev, st)
#define cudaStreamWaitEvent(st, ev, flags) sim_wait(st, ev)
#define cudaStreamCreateWithFlags(st, flags) sim_stream_create(st)
#define cudaEventCreateWithFlags(ev, flags) sim_event_create(ev)
#define cudaStreamSynchronize(st) sim_nothing()
#define cudaEventDestroy(ev) sim_nothing()
#define cudaStreamDestroy(st) sim_nothing()
#define cudaGetLastError() sim_nothing()

/* the candidates' knobs, set per case */
static size_t sim_tail;
static int sim_chunks;
#define TAIL sim_tail
#define CHUNKS sim_chunks

/* each candidate's entry points under names of its own: sim_init_001, ... (the
 * renames expand where the candidate uses them, with SIM_ID as it is then) */
#define SIM_PASTE(a, b) a##b
#define SIM_NAME(a, b) SIM_PASTE(a, b)
#define pkb_abi_version SIM_NAME(sim_abi_, SIM_ID)
#define pkb_init SIM_NAME(sim_init_, SIM_ID)
#define pkb_run SIM_NAME(sim_run_, SIM_ID)
#define pkb_fini SIM_NAME(sim_fini_, SIM_ID)
#define SIM_ID 001
#include "problems/001_allreduce/solutions/ok_ce_twoshot.cu"
#undef SIM_ID
#define SIM_ID 002
#include "problems/002_allgather/solutions/ok_ce_steps.cu"
#undef SIM_ID
#define SIM_ID 005
#include "problems/005_scatter/solutions/ok_ce_steps.cu"
#undef SIM_ID
#define SIM_ID 006
#include "problems/006_gather/solutions/ok_ce_steps.cu"
#undef SIM_ID
#define SIM_ID 007
#include "problems/007_reducescatter/solutions/ok_ce_steps.cu"
#undef SIM_ID
#define SIM_ID 008
#include "problems/008_alltoall/solutions/ok_ce_steps.cu"
#undef SIM_ID
#undef pkb_abi_version
#undef pkb_init
#undef pkb_run
#undef pkb_fini

/* ------------------------------------------------------------------------ */
/* the recorded operations */

enum { OP_COPY, OP_SUM, OP_MARK, OP_MEET, OP_HOST_PRE, OP_HOST_POST };

struct access {
	const char *lo;
	size_t n;
	bool write;
	int op;
};

struct op {
	int kind, rank, call;
	const char *what;
	char *dst;                      /* OP_COPY, OP_SUM */
	std::vector<const char *> src;  /* OP_COPY: one; OP_SUM: the terms */
	size_t n;
	int arrivals;                   /* OP_MEET */
	std::vector<int> succ;
	int npred;
};

struct buffer {
	char *base;
	size_t n;
	int rank;
	const char *what;
};

static struct {
	int rank, call;                 /* whose code runs now, in which call (-1: init) */
	std::vector<op> ops;
	std::vector<access> acc;
	std::vector<int> stream_last;   /* per stream: its last operation, or -1 */
	std::vector<int> event_op;      /* per event: the operation of its last record */
	std::vector<int> meets;         /* per barrier n: its OP_MEET */
	int barriers[8];                /* per rank: barriers so far */
	std::vector<buffer> bufs;
	std::vector<std::vector<void *>> symm;   /* per symm_alloc: every rank's buffer */
	std::vector<size_t> symm_bytes;
	int nsymm[8];
	const char *trouble;            /* the first thing a recorder could not accept */
} S;

static int cases, fails;

static void fail(const char *fmt, ...)
{
	if (fails++ < 12) {
		va_list ap;
		va_start(ap, fmt);
		printf("FAIL ");
		vprintf(fmt, ap);
		printf("\n");
		va_end(ap);
	}
}

static int stream_index(cudaStream_t st)
{
	return (int)(uintptr_t)st - 1;
}

static void edge(int from, int to)
{
	S.ops[from].succ.push_back(to);
	S.ops[to].npred++;
}

/* a new operation, after the last one on its stream (stream < 0: none) */
static int add_op(int kind, int stream, const char *what)
{
	op o = {};
	o.kind = kind;
	o.rank = S.rank;
	o.call = S.call;
	o.what = what;
	S.ops.push_back(o);
	int i = (int)S.ops.size() - 1;
	if (stream >= 0) {
		if (S.stream_last[stream] >= 0)
			edge(S.stream_last[stream], i);
		S.stream_last[stream] = i;
	}
	return i;
}

/* the buffer that holds [p, p + n), or -1 */
static int buffer_of(const char *p, size_t n)
{
	for (size_t b = 0; b < S.bufs.size(); b++)
		if (p >= S.bufs[b].base && p + n <= S.bufs[b].base + S.bufs[b].n)
			return (int)b;
	return -1;
}

static void touch(int op, const char *p, size_t n, bool write)
{
	if (!n)
		return;
	if (buffer_of(p, n) < 0 && !S.trouble)
		S.trouble = write ? "a write outside every buffer" : "a read outside every buffer";
	S.acc.push_back(access{ p, n, write, op });
}

static char *new_buffer(size_t n, int rank, const char *what)
{
	char *p = (char *)malloc(n ? n : 1);
	memset(p, 0xab, n);   /* neither a value nor "poisoned": reading it unwritten shows */
	S.bufs.push_back(buffer{ p, n, rank, what });
	return p;
}

/* ------------------------------------------------------------------------ */
/* the recorders */

static void record_copy(void *dst, const void *src, size_t n, cudaStream_t st, const char *what)
{
	int i = add_op(OP_COPY, stream_index(st), what);
	S.ops[i].dst = (char *)dst;
	S.ops[i].src.push_back((const char *)src);
	S.ops[i].n = n;
	touch(i, (const char *)src, n, false);
	touch(i, (const char *)dst, n, true);
}

static cudaError_t sim_memcpy(void *dst, const void *src, size_t n, cudaStream_t st)
{
	record_copy(dst, src, n, st, "copy engine");
	return cudaSuccess;
}

static void pkb_ce_local_copy(void *dst, const void *src, size_t bytes, cudaStream_t st)
{
	if (bytes)   /* as the real one: nothing on the stream for no bytes */
		record_copy(dst, src, bytes, st, "local copy");
}

static cudaError_t sim_record(cudaEvent_t ev, cudaStream_t st)
{
	S.event_op[(int)(uintptr_t)ev - 1] = add_op(OP_MARK, stream_index(st), "event record");
	return cudaSuccess;
}

static cudaError_t sim_wait(cudaStream_t st, cudaEvent_t ev)
{
	int i = add_op(OP_MARK, stream_index(st), "event wait");
	int rec = S.event_op[(int)(uintptr_t)ev - 1];
	if (rec >= 0)   /* an event never recorded is complete: CUDA waits for nothing */
		edge(rec, i);
	return cudaSuccess;
}

static cudaError_t sim_stream_create(cudaStream_t *st)
{
	S.stream_last.push_back(-1);
	*st = (cudaStream_t)(uintptr_t)S.stream_last.size();
	return cudaSuccess;
}

static cudaError_t sim_event_create(cudaEvent_t *ev)
{
	S.event_op.push_back(-1);
	*ev = (cudaEvent_t)(uintptr_t)S.event_op.size();
	return cudaSuccess;
}

static void pkb_ce_meet(const pkb_dev_comm &comm, cudaStream_t st)
{
	(void)comm;
	int n = S.barriers[S.rank]++;
	while ((int)S.meets.size() <= n)
		S.meets.push_back(add_op(OP_MEET, -1, "barrier"));
	int arrive = add_op(OP_MARK, stream_index(st), "barrier arrive");
	edge(arrive, S.meets[n]);
	S.ops[S.meets[n]].arrivals++;
	int depart = add_op(OP_MARK, stream_index(st), "barrier depart");
	edge(S.meets[n], depart);
}

static int pkb_ce_sum_range(const struct pkb_ce *ce, int world, const struct pkb_ce_sum *sum,
			    size_t off, size_t n, cudaStream_t st)
{
	if (sum->dtype != PKB_FP32) {
		S.trouble = "a sum of another dtype than the simulated fp32";
		return 1;
	}
	int i = add_op(OP_SUM, stream_index(st), "sum");
	op &o = S.ops[i];
	o.dst = (char *)sum->dst + off;
	o.n = n;
	o.src.push_back((const char *)sum->own + off);
	for (int k = 0; k < world; k++)
		if (k != sum->skip)
			o.src.push_back((const char *)ce->stage.local + (size_t)k * ce->slot + off);
	for (const char *p : S.ops[i].src)
		touch(i, p, n, false);
	touch(i, (const char *)sum->dst + off, n, true);
	return 0;
}

/* ------------------------------------------------------------------------ */
/* the harness's side */

static int fake_symm_alloc(pkb_ctx *ctx, size_t bytes, pkb_symm *out)
{
	int k = S.nsymm[ctx->rank]++;
	if ((int)S.symm.size() <= k) {
		S.symm.emplace_back();
		S.symm_bytes.push_back(bytes);
		for (int r = 0; r < ctx->world; r++)
			S.symm[k].push_back(new_buffer(bytes, r, "symmetric buffer"));
	} else if (S.symm_bytes[k] != bytes) {
		S.trouble = "symm_alloc of different sizes on different ranks";
		return 1;
	}
	out->local = S.symm[k][ctx->rank];
	out->peers = S.symm[k].data();
	out->peers_dev = S.symm[k].data();
	out->bytes = bytes;
	return 0;
}

static int fake_host_barrier(pkb_ctx *)
{
	return 0;
}

static int fake_allgather(pkb_ctx *, const void *, void *, size_t)
{
	S.trouble = "host_allgather, which no copy-engine candidate uses";
	return 1;
}

static void fake_log(pkb_ctx *ctx, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	printf("log of rank %d: %s\n", ctx->rank, line);
}

static const pkb_services svc = { fake_symm_alloc, fake_host_barrier, fake_allgather, fake_log };

struct candidate {
	int id;
	const char *name;
	int (*init)(pkb_ctx *), (*run)(pkb_ctx *), (*fini)(pkb_ctx *);
};

static const candidate cands[] = {
	{ 1, "001 ok_ce_twoshot", sim_init_001, sim_run_001, sim_fini_001 },
	{ 2, "002 ok_ce_steps", sim_init_002, sim_run_002, sim_fini_002 },
	{ 5, "005 ok_ce_steps", sim_init_005, sim_run_005, sim_fini_005 },
	{ 6, "006 ok_ce_steps", sim_init_006, sim_run_006, sim_fini_006 },
	{ 7, "007 ok_ce_steps", sim_init_007, sim_run_007, sim_fini_007 },
	{ 8, "008 ok_ce_steps", sim_init_008, sim_run_008, sim_fini_008 },
};

/* element i of rank r's input in call c: small integers, so every fp32 sum is exact */
static float value(int r, int c, int64_t i)
{
	return (float)((r + 1) * 64 + c * 8 + (int)(i % 61));
}

/* elements of rank r's input and output (n: the base M x N) */
static int64_t in_numel(int id, int r, int w, int64_t n)
{
	return id == 7 || id == 8 || (id == 5 && r == 0) ? w * n : n;
}

static int64_t out_numel(int id, int r, int w, int64_t n)
{
	return id == 2 || id == 8 || (id == 6 && r == 0) ? w * n : n;
}

/* element i of rank r's output in call c, as the problem's README says */
static float expected(int id, int r, int w, int c, int64_t n, int64_t i)
{
	float s = 0;
	switch (id) {
	case 1: for (int k = 0; k < w; k++) s += value(k, c, i); return s;
	case 2: return value((int)(i / n), c, i % n);
	case 5: return value(0, c, r * n + i);
	case 6: return r == 0 ? value((int)(i / n), c, i % n) : value(r, c, i);
	case 7: for (int k = 0; k < w; k++) s += value(k, c, r * n + i); return s;
	case 8: return value((int)(i / n), c, r * n + i % n);
	}
	return 0;
}

/* ------------------------------------------------------------------------ */
/* one case */

/* A hang: a barrier not every rank reaches, or operations waiting on each
 * other in a cycle. Else `order` gets an order of the operations that
 * respects every edge. */
static bool hangs(const char *tag, int w, std::vector<int> &order)
{
	for (size_t b = 0; b < S.meets.size(); b++)
		if (S.ops[S.meets[b]].arrivals != w) {
			fail("%s: barrier %zu is reached by %d of %d ranks: the GPUs would hang", tag,
			     b, S.ops[S.meets[b]].arrivals, w);
			return true;
		}
	const int nops = (int)S.ops.size();
	std::vector<int> npred(nops);
	for (int i = 0; i < nops; i++)
		if (!(npred[i] = S.ops[i].npred))
			order.push_back(i);
	for (size_t k = 0; k < order.size(); k++)
		for (int s : S.ops[order[k]].succ)
			if (!--npred[s])
				order.push_back(s);
	if ((int)order.size() != nops) {
		fail("%s: the operations wait on each other in a cycle: the GPUs would hang", tag);
		return true;
	}
	return false;
}

/* A race: two operations on one byte, one writing, that no stream, event or
 * barrier orders (`order`: from hangs) */
static bool races(const char *tag, const std::vector<int> &order)
{
	/* before[i]: the operations that complete before operation i starts */
	const int nops = (int)S.ops.size(), words = (nops + 63) / 64;
	std::vector<uint64_t> before((size_t)nops * words, 0);
	for (int v : order)
		for (int s : S.ops[v].succ) {
			uint64_t *d = &before[(size_t)s * words];
			const uint64_t *a = &before[(size_t)v * words];
			for (int k = 0; k < words; k++)
				d[k] |= a[k];
			d[v / 64] |= 1ull << (v % 64);
		}
	auto ordered = [&](int a, int b) {
		return (before[(size_t)b * words + a / 64] >> (a % 64) & 1) ||
		       (before[(size_t)a * words + b / 64] >> (b % 64) & 1);
	};
	/* the accesses to each buffer, pair by pair */
	std::vector<std::vector<int>> by_buffer(S.bufs.size());
	for (size_t k = 0; k < S.acc.size(); k++)
		by_buffer[buffer_of(S.acc[k].lo, S.acc[k].n)].push_back((int)k);
	for (size_t b = 0; b < by_buffer.size(); b++)
		for (size_t x = 0; x < by_buffer[b].size(); x++)
			for (size_t y = x + 1; y < by_buffer[b].size(); y++) {
				const access &p = S.acc[by_buffer[b][x]], &q = S.acc[by_buffer[b][y]];
				if (p.op == q.op || !(p.write || q.write) || p.lo >= q.lo + q.n ||
				    q.lo >= p.lo + p.n || ordered(p.op, q.op))
					continue;
				const op &o = S.ops[p.op], &u = S.ops[q.op];
				fail("%s: a race on rank %d's %s (bytes %td-%td): %s of rank %d, call "
				     "%d, and %s of rank %d, call %d", tag, S.bufs[b].rank,
				     S.bufs[b].what, (p.lo > q.lo ? p.lo : q.lo) - S.bufs[b].base,
				     (p.lo + p.n < q.lo + q.n ? p.lo + p.n : q.lo + q.n) -
					     S.bufs[b].base,
				     o.what, o.rank, o.call, u.what, u.rank, u.call);
				return true;
			}
	return false;
}


#define CALLS 3

static void run_case(const candidate &cand, int w, int64_t n, size_t tail, int chunks)
{
	char tag[160];
	snprintf(tag, sizeof tag, "%s W=%d numel=%lld tail=%zu chunks=%d", cand.name, w,
		 (long long)n, tail, chunks);
	cases++;
	for (buffer &b : S.bufs)
		free(b.base);
	S.ops.clear();
	S.acc.clear();
	S.stream_last.clear();
	S.event_op.clear();
	S.meets.clear();
	S.bufs.clear();
	S.symm.clear();
	S.symm_bytes.clear();
	memset(S.barriers, 0, sizeof S.barriers);
	memset(S.nsymm, 0, sizeof S.nsymm);
	S.trouble = NULL;
	sim_tail = tail;
	sim_chunks = chunks;

	pkb_ctx ctx[8];
	pkb_tensor in[8], out[8];
	for (int r = 0; r < w; r++) {
		S.rank = r;
		S.call = -1;
		in[r] = pkb_tensor{};
		out[r] = pkb_tensor{};
		in[r].dtype = out[r].dtype = PKB_FP32;
		in[r].ndim = out[r].ndim = 1;
		in[r].numel = in[r].shape[0] = in_numel(cand.id, r, w, n);
		out[r].numel = out[r].shape[0] = out_numel(cand.id, r, w, n);
		in[r].bytes = (size_t)in[r].numel * 4;
		out[r].bytes = (size_t)out[r].numel * 4;
		ctx[r] = pkb_ctx{};
		ctx[r].abi_version = PKB_ABI_VERSION;
		ctx[r].rank = ctx[r].local_rank = r;
		ctx[r].world = w;
		ctx[r].dtype = PKB_FP32;
		ctx[r].n_in = ctx[r].n_out = 1;
		ctx[r].in = &in[r];
		ctx[r].out = &out[r];
		ctx[r].svc = &svc;
		ctx[r].dev.rank = r;
		ctx[r].dev.world = w;
		ctx[r].m = 1;
		ctx[r].n = n;
		cudaStream_t st;
		sim_stream_create(&st);   /* stream r: rank r's */
		ctx[r].stream = (struct CUstream_st *)st;
		if (cand.init(&ctx[r]) || S.trouble) {
			fail("%s: pkb_init of rank %d failed%s%s", tag, r, S.trouble ? ": " : "",
			     S.trouble ? S.trouble : "");
			return;
		}
	}
	/* the same input and output buffers every call: the harness's worst case */
	for (int r = 0; r < w; r++) {
		in[r].data = new_buffer(in[r].bytes, r, "input");
		out[r].data = new_buffer(out[r].bytes, r, "output");
	}
	for (int c = 0; c < CALLS; c++)
		for (int r = 0; r < w; r++) {
			S.rank = r;
			S.call = c;
			const int main_stream = stream_index((cudaStream_t)ctx[r].stream);
			int pre = add_op(OP_HOST_PRE, main_stream,
					 "the harness's fresh inputs, poisoned outputs");
			touch(pre, (const char *)in[r].data, in[r].bytes, true);
			touch(pre, (const char *)out[r].data, out[r].bytes, true);
			if (cand.run(&ctx[r]) || S.trouble) {
				fail("%s: pkb_run of rank %d, call %d, failed%s%s", tag, r, c,
				     S.trouble ? ": " : "", S.trouble ? S.trouble : "");
				return;
			}
			int post = add_op(OP_HOST_POST, main_stream, "the harness's read of the outputs");
			touch(post, (const char *)in[r].data, in[r].bytes, false);
			touch(post, (const char *)out[r].data, out[r].bytes, false);
		}
	for (int r = 0; r < w; r++)
		cand.fini(&ctx[r]);

	std::vector<int> order;
	if (hangs(tag, w, order) || races(tag, order))
		return;
	/* the data, in that order */
	for (int v : order) {
		const op &o = S.ops[v];
		const int r = o.rank, c = o.call;
		if (o.kind == OP_COPY) {
			memmove(o.dst, o.src[0], o.n);
		} else if (o.kind == OP_SUM) {
			for (size_t e = 0; e < o.n / 4; e++) {
				float s = 0, t;
				for (const char *p : o.src) {
					memcpy(&t, p + 4 * e, 4);
					s += t;
				}
				memcpy(o.dst + 4 * e, &s, 4);
			}
		} else if (o.kind == OP_HOST_PRE) {
			float *x = (float *)in[r].data;
			for (int64_t i = 0; i < in[r].numel; i++)
				x[i] = value(r, c, i);
			memset(out[r].data, 0xff, out[r].bytes);
		} else if (o.kind == OP_HOST_POST) {
			const float *y = (const float *)out[r].data;
			for (int64_t i = 0; i < out[r].numel; i++)
				if (y[i] != expected(cand.id, r, w, c, n, i)) {
					uint32_t bits;
					memcpy(&bits, &y[i], 4);
					fail("%s: rank %d, call %d: element %lld of %lld is %g (bits "
					     "0x%08x), not %g", tag, r, c, (long long)i,
					     (long long)out[r].numel, (double)y[i], bits,
					     (double)expected(cand.id, r, w, c, n, i));
					return;
				}
		}
	}
}

int main(void)
{
	/* elements of each rank's base tensor: one (chunks of nothing at W > 1), and odd
	 * counts (short last chunks), which the tails below cut into 1 to 11 parts */
	static const int64_t numels[] = { 1, 3003, 4103 };
	/* no halving; 16 bytes (down to the last unit); 4 KiB; more than any step */
	static const size_t tails[] = { 0, 16, 4096, (size_t)1 << 30 };
	for (const candidate &cand : cands)
		for (int w = 2; w <= 8; w++)
			for (int64_t n : numels)
				for (size_t t : tails)
					for (int chunks = 1; chunks <= 3; chunks += 2)
						run_case(cand, w, n, t, chunks);
	for (buffer &b : S.bufs)
		free(b.base);
	printf("ok %d cases, %d failed\n", cases, fails);
	return fails != 0;
}
