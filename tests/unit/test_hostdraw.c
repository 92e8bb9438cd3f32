/*
 * test_hostdraw.c -- the inputs' keys and host draws (src/hostdraw.c): the
 * key is the SHA-256 construction inputs have always had (pinned by value,
 * so a change shows as every input, reference result and ref-cache entry
 * changing); several trials drawn on threads are byte for byte what one
 * thread draws; a tensor shared by all ranks is drawn from one key, the
 * others from one per rank; a missing buffer or a failing gen_host is said by index.
 */
#include "../../src/hostdraw.h"
#include "t.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { N = 6 };

static struct hostdraw setup(const char *id, int world, int rank, struct pkb_io *io)
{
	struct hostdraw h = { .p = problem_find(id), .io = io, .seed = 42, .rank = rank };
	h.dims = (struct pkb_dims){ .world = world, .rank = rank, .m = 1024, .n = 1024,
				    .dtype = PKB_BF16 };
	CHECK(h.p && problem_describe(h.p, &h.dims, io) == 0);
	return h;
}

/* one buffer per host-drawn input of io, zeroed */
static void **buffers(const struct pkb_io *io)
{
	void **b = calloc(PKB_MAX_TENSORS, sizeof *b);
	for (int i = 0; i < io->n_in; i++)
		if (io->in[i].dist.kind == PKB_DIST_HOST)
			b[i] = calloc(1, tensor_desc_bytes(&io->in[i]) + 16);
	return b;
}

static int same(const struct pkb_io *io, void **a, void **b)
{
	for (int i = 0; i < io->n_in; i++)
		if (a[i] && memcmp(a[i], b[i], tensor_desc_bytes(&io->in[i])))
			return 0;
	return 1;
}

static void release(void **b)
{
	for (int i = 0; i < PKB_MAX_TENSORS; i++)
		free(b[i]);
	free(b);
}

static int fail_gen(const struct pkb_dims *d, int index, uint64_t seed, void *buf, size_t bytes)
{
	(void)d, (void)seed, (void)buf, (void)bytes;
	return index == 2 ? -1 : 0;
}

int main(void)
{
	struct pkb_io io;
	struct hostdraw h = setup("64", 4, 1, &io);
	/* the key as inputs.c has drawn it since the seed became one-way:
	 * SHA-256 of (seed, problem, trial, rank or -1, tensor) as int64 LE,
	 * its first 8 bytes big-endian (Python's hashlib gives these two) */
	CHECK(hostdraw_key(&h, 3, 2, 0) == 0x95d8b7075b53c6cdull);
	CHECK(hostdraw_key(&h, 3, -1, 1) == 0x688a13ffaf938ccbull);
	CHECK(hostdraw_dims(&h, 3).common_seed == 0x688a13ffaf938ccbull);
	CHECK(hostdraw_dims(&h, 3).trial == 3);

	/* N trials on 4 threads, on N (more than asked: capped), on 1, and
	 * one by one: the same bytes, trial for trial */
	int trials[N] = { 1000000, 1000064, 1000001, 1000130, 7, 1000002 };
	void **one[N], **many[N], **wide[N], **single[N];
	for (int k = 0; k < N; k++) {
		one[k] = buffers(&io);
		many[k] = buffers(&io);
		wide[k] = buffers(&io);
		single[k] = buffers(&io);
		CHECK(hostdraw_one(&h, trials[k], one[k]) == -1);
	}
	CHECK(hostdraw_many(&h, N, trials, (void *const *const *)many, 4) == -1);
	CHECK(hostdraw_many(&h, N, trials, (void *const *const *)wide, 64) == -1);
	CHECK(hostdraw_many(&h, N, trials, (void *const *const *)single, 0) == -1);
	int all = 1, differ = 1;
	for (int k = 0; k < N; k++) {
		all &= same(&io, one[k], many[k]) && same(&io, one[k], wide[k]) &&
		       same(&io, one[k], single[k]);
		differ &= k == 0 || !same(&io, one[0], one[k]);
	}
	CHECKF(all, "threads drew other bytes than one thread");
	CHECKF(differ, "two trials drew the same content");
	/* gen_host itself, with the key and dims: what hostdraw_one wrote */
	struct pkb_dims d = hostdraw_dims(&h, trials[1]);
	void *direct = calloc(1, tensor_desc_bytes(&io.in[0]));
	CHECK(h.p->gen_host(&d, 0, hostdraw_key(&h, trials[1], 0, io.in[0].same_on_all_ranks),
			    direct, tensor_desc_bytes(&io.in[0])) == 0);
	CHECK(!memcmp(direct, one[1][0], tensor_desc_bytes(&io.in[0])));
	free(direct);
	for (int k = 0; k < N; k++) {
		release(one[k]);
		release(many[k]);
		release(wide[k]);
		release(single[k]);
	}

	/* a tensor shared by all ranks is drawn from one key on every rank
	 * (its generator may still take the rank's part of it: 048's x_local
	 * rows); a per-rank tensor's key and content differ between ranks */
	struct pkb_io i0, i3;
	struct hostdraw a = setup("48", 4, 0, &i0), b = setup("48", 4, 3, &i3);
	CHECK(i0.in[0].dist.kind == PKB_DIST_HOST && i0.in[0].same_on_all_ranks);
	CHECK(hostdraw_key(&a, 5, 0, 1) == hostdraw_key(&b, 5, 0, 1));
	CHECK(hostdraw_key(&a, 5, 0, 0) != hostdraw_key(&b, 5, 0, 0));
	CHECK(hostdraw_dims(&a, 5).common_seed == hostdraw_dims(&b, 5).common_seed);
	struct pkb_io j0, j2;
	struct hostdraw c = setup("64", 4, 0, &j0), e = setup("64", 4, 2, &j2);
	void **bc = buffers(&j0), **be = buffers(&j2);
	CHECK(hostdraw_one(&c, 5, bc) == -1 && hostdraw_one(&e, 5, be) == -1);
	CHECK(!j0.in[0].same_on_all_ranks && memcmp(bc[0], be[0], tensor_desc_bytes(&j0.in[0])));

	/* a host-drawn input without a buffer, and a failing gen_host: the
	 * input's index, from one thread or several */
	free(bc[1]);
	bc[1] = NULL;
	CHECK(hostdraw_one(&c, 5, bc) == 1);
	struct pkb_problem failing = *c.p;
	failing.gen_host = fail_gen;
	struct hostdraw f = c;
	f.p = &failing;
	void **bf[3] = { buffers(&j0), buffers(&j0), buffers(&j0) };
	int t3[3] = { 1, 2, 3 };
	CHECK(hostdraw_many(&f, 3, t3, (void *const *const *)bf, 3) == 2);
	CHECK(hostdraw_many(&f, 3, t3, (void *const *const *)bf, 1) == 2);
	for (int k = 0; k < 3; k++)
		release(bf[k]);
	release(bc);
	release(be);

	int t = hostdraw_threads(4);
	CHECK(t >= 1 && t <= HOSTDRAW_MAX_THREADS);
	CHECK(hostdraw_threads(0) >= 1 && hostdraw_threads(1 << 20) == 1);
	return t_done("test_hostdraw");
}
