/*
 * hostdraw.c -- see hostdraw.h.
 */
#include "hostdraw.h"
#include "util.h"      /* defines: sha256 */

#include <pthread.h>
#include <unistd.h>

/* The key of one tensor's draw: SHA-256 of (seed, problem, trial, rank or
 * "all", tensor), its first 8 bytes. One-way, so that a solution that
 * recovers the key of a tensor it sees (host-drawn inputs are splitmix64
 * streams of it, and splitmix64 can be run backwards) learns neither the
 * seed nor a peer's key: a chain of mix64 steps was a bijection at every
 * step, and its constants are public (issue 44: inputs regenerated instead
 * of communicated). */
uint64_t hostdraw_key(const struct hostdraw *h, int trial, int tensor, int same)
{
	int64_t words[5] = { (int64_t)h->seed, h->p->id, trial, same ? -1 : h->rank, tensor };
	unsigned char md[32];
	sha256(words, sizeof words, md);
	uint64_t k = 0;
	for (int i = 0; i < 8; i++)
		k = k << 8 | md[i];
	return k;
}

struct pkb_dims hostdraw_dims(const struct hostdraw *h, int trial)
{
	struct pkb_dims d = h->dims;
	d.trial = trial;
	d.common_seed = hostdraw_key(h, trial, -1, 1);
	return d;
}

int hostdraw_one(const struct hostdraw *h, int trial, void *const *staging)
{
	struct pkb_dims d = hostdraw_dims(h, trial);
	for (int i = 0; i < h->io->n_in; i++) {
		const struct pkb_tensor_desc *t = &h->io->in[i];
		if (t->dist.kind != PKB_DIST_HOST)
			continue;
		uint64_t key = hostdraw_key(h, trial, i, t->same_on_all_ranks);
		if (!staging[i] || h->p->gen_host(&d, i, key, staging[i], tensor_desc_bytes(t)) != 0)
			return i;
	}
	return -1;
}

struct draw_job {
	const struct hostdraw *h;
	int n, step, first;
	const int *trials;
	void *const *const *staging;
	int failed;
};

static void *draw_some(void *arg)
{
	struct draw_job *j = arg;
	for (int k = j->first; k < j->n && j->failed < 0; k += j->step)
		j->failed = hostdraw_one(j->h, j->trials[k], j->staging[k]);
	return NULL;
}

int hostdraw_many(const struct hostdraw *h, int n, const int *trials, void *const *const *staging,
		  int threads)
{
	int T = threads < 1 ? 1 : threads > HOSTDRAW_MAX_THREADS ? HOSTDRAW_MAX_THREADS : threads;
	if (T > n)
		T = n > 0 ? n : 1;
	struct draw_job jobs[HOSTDRAW_MAX_THREADS];
	pthread_t th[HOSTDRAW_MAX_THREADS];
	int made[HOSTDRAW_MAX_THREADS] = { 0 };
	for (int t = 0; t < T; t++) {
		jobs[t] = (struct draw_job){ h, n, T, t, trials, staging, -1 };
		made[t] = t > 0 && pthread_create(&th[t], NULL, draw_some, &jobs[t]) == 0;
	}
	for (int t = 0; t < T; t++)
		if (!made[t])
			draw_some(&jobs[t]);   /* the caller's share, and any thread not made */
	int failed = -1;
	for (int t = 0; t < T; t++) {
		if (made[t])
			pthread_join(th[t], NULL);
		if (failed < 0)
			failed = jobs[t].failed;
	}
	return failed;
}

int hostdraw_threads(int host_size)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	long per = cpus / (host_size > 0 ? host_size : 1);
	return per < 1 ? 1 : per > HOSTDRAW_MAX_THREADS ? HOSTDRAW_MAX_THREADS : (int)per;
}
