/*
 * 001_allreduce, known-bad (issue 44, clock evasion by a host thread):
 * honest for its first 16 calls (the correctness trials), then pkb_run
 * enqueues nothing on ctx->stream: it hands the call to a host thread of
 * its own, which waits 200 us and then does the honest work on a private
 * stream. The call's stream is empty when the judge's clock stops, so the
 * time would be a few microseconds, and by the end of the timing every
 * output set holds the right result, so a re-check after the timing alone
 * would pass. The judge copies the outputs of a call chosen at random right
 * after that call's end event (the late-work snapshot) and compares them
 * with the reference's of the same call: `mismatch`. pkb_fini drains the
 * thread's queue first, as a careful cheat would: work left running as the
 * process ends may fault, and under MPS that fault reaches the judge's
 * context (a runtime_error, bad_fault_after_fini.cu; without the drain this
 * file's outcome raced with the peers' exits).
 * pkb-expect: mismatch
 * pkb-args: --measure-perf --trials 1 --warmup 20 --iters 50
 */
#define pkb_run honest_run
#define pkb_fini honest_fini
#include "ok_oneshot_pull.cu"
#undef pkb_run
#undef pkb_fini
#include <pthread.h>
#include <string.h>
#include <unistd.h>

static long calls;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static pthread_cond_t idle = PTHREAD_COND_INITIALIZER;
static long finished;   /* calls the worker has completed */
/* every call, in order (the device barriers of the peers pair call k with
 * call k): a queue of contexts with their tensors */
#define Q 256
static struct late_call { pkb_ctx c; pkb_tensor in[8], out[8]; } q[Q];   /* 001: one of each */
static long head, tail;
static int started;
static cudaStream_t late;

static void *late_worker(void *arg)
{
	(void)arg;
	for (;;) {
		pthread_mutex_lock(&mu);
		while (head == tail)
			pthread_cond_wait(&cv, &mu);
		struct late_call lc = q[head % Q];
		head++;
		pthread_mutex_unlock(&mu);
		usleep(200);
		lc.c.in = lc.in;
		lc.c.out = lc.out;
		lc.c.stream = (struct CUstream_st *)late;
		honest_run(&lc.c);
		cudaStreamSynchronize(late);
		pthread_mutex_lock(&mu);
		finished++;
		pthread_cond_signal(&idle);
		pthread_mutex_unlock(&mu);
	}
	return NULL;
}

extern "C" int pkb_run(pkb_ctx *ctx)
{
	if (calls++ < 16)
		return honest_run(ctx);
	if (!started) {
		pthread_t t;
		if (cudaStreamCreateWithFlags(&late, cudaStreamNonBlocking) != cudaSuccess ||
		    pthread_create(&t, NULL, late_worker, NULL))
			return 1;
		started = 1;
	}
	pthread_mutex_lock(&mu);
	while (tail - head >= Q) {   /* full: wait for the worker (never, in practice) */
		pthread_mutex_unlock(&mu);
		usleep(50);
		pthread_mutex_lock(&mu);
	}
	struct late_call *lc = &q[tail % Q];
	lc->c = *ctx;
	memcpy(lc->in, ctx->in, (size_t)ctx->n_in * sizeof *lc->in);
	memcpy(lc->out, ctx->out, (size_t)ctx->n_out * sizeof *lc->out);
	tail++;
	pthread_cond_signal(&cv);
	pthread_mutex_unlock(&mu);
	return 0;
}

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	pthread_mutex_lock(&mu);
	while (finished < tail)
		pthread_cond_wait(&idle, &mu);
	pthread_mutex_unlock(&mu);
	return honest_fini(ctx);
}
