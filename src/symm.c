/*
 * symm.c -- symmetric memory of one rank (rank_env.h): a buffer on every
 * rank's GPU, each mapped into every other through CUDA IPC so that kernels
 * read and write peers over NVLink; and the signal pads of a device barrier
 * (pkb_dev_comm) made of one. Every call is collective: the ranks exchange
 * their IPC handles through the parent (coll_allgather).
 *
 * Across nodes (docs/MULTINODE.md) CUDA IPC reaches the ranks of this host
 * only: the others' entries in the peer table are NULL, and a device
 * barrier spans this host's ranks. launch.c says which ranks those are
 * (the job's host_first and host_size); on one node they are all W.
 */
#define _GNU_SOURCE
#include "symm.h"
#include "rank_link.h" /* defines: coll_allgather, host_barrier */
#include "util.h"

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* a failed step of symm_make, kept for the message of whoever called it */
static int symm_fail(struct rank_env *E, const char *what, cudaError_t e)
{
	snprintf(E->symm_err, sizeof E->symm_err, "%s: %s", what,
		 e == cudaSuccess ? "the ranks could not exchange handles" : cudaGetErrorString(e));
	return -1;
}

/* the ranks of this host: [*first, *first + *size), the job's (wire.c
 * checked that they hold this rank) */
static void host_ranks(const struct rank_env *E, int *first, int *size)
{
	*first = E->job.host_first;
	*size = E->job.host_size;
}

int symm_make(struct rank_env *E, size_t bytes, struct symm_block *b)
{
	memset(b, 0, sizeof *b);
	b->bytes = bytes;
	/* whole 2 MiB pages: a peer's copy engine wrote into an IPC-mapped 1 GiB + 5 KiB
	 * buffer at two thirds of the rate it reached into exactly 1 GiB (002
	 * ok_ce_steps, 256 MiB a rank, 4x H200: 3550 against 2251 us) */
	const size_t page = (size_t)2 << 20;
	size_t alloc = bytes ? (bytes + page - 1) / page * page : page;
	cudaError_t e;
	if ((e = cudaMalloc(&b->local, alloc)) != cudaSuccess ||
	    (e = cudaMemset(b->local, 0, alloc)) != cudaSuccess)
		return symm_fail(E, "cudaMalloc of a symmetric buffer", e);
	cudaIpcMemHandle_t mine, *all = xcalloc((size_t)E->world, sizeof *all);
	if ((e = cudaIpcGetMemHandle(&mine, b->local)) != cudaSuccess) {
		free(all);
		return symm_fail(E, "cudaIpcGetMemHandle", e);
	}
	if (coll_allgather(E, &mine, all, sizeof mine) < 0) {
		free(all);
		return symm_fail(E, "allgather of IPC handles", cudaSuccess);
	}
	b->peers = xcalloc((size_t)E->world, sizeof(void *));
	int first, size;
	host_ranks(E, &first, &size);
	for (int r = first; r < first + size; r++) {
		if (r == E->rank) {
			b->peers[r] = b->local;
			continue;
		}
		if ((e = cudaIpcOpenMemHandle(&b->peers[r], all[r],
					      cudaIpcMemLazyEnablePeerAccess)) != cudaSuccess) {
			free(all);
			return symm_fail(E, "cudaIpcOpenMemHandle of a peer's buffer", e);
		}
	}
	free(all);
	if ((e = cudaMalloc((void **)&b->peers_dev, (size_t)E->world * sizeof(void *))) != cudaSuccess ||
	    (e = cudaMemcpy(b->peers_dev, b->peers, (size_t)E->world * sizeof(void *),
			    cudaMemcpyHostToDevice)) != cudaSuccess)
		return symm_fail(E, "the peer table", e);
	/* every rank has mapped every buffer before anyone uses it */
	host_barrier(E);
	return 0;
}

void symm_free(struct rank_env *E, struct symm_block *b)
{
	if (!b->peers)
		return;
	for (int r = 0; r < E->world; r++)
		if (r != E->rank && b->peers[r])
			cudaIpcCloseMemHandle(b->peers[r]);
	cudaFree(b->peers_dev);
	cudaFree(b->local);
	free(b->peers);
	memset(b, 0, sizeof *b);
}

int make_dev_comm(struct rank_env *E, struct symm_block *pads, uint32_t **epochs,
			 uint32_t **err, pkb_dev_comm *c)
{
	size_t pad_bytes = (size_t)PKB_SIGNAL_SLOTS * (size_t)E->world * sizeof(uint32_t);
	if (symm_make(E, pad_bytes, pads) < 0 ||
	    cudaMalloc((void **)epochs, PKB_SIGNAL_SLOTS * sizeof(uint32_t)) != cudaSuccess ||
	    cudaMemset(*epochs, 0, PKB_SIGNAL_SLOTS * sizeof(uint32_t)) != cudaSuccess ||
	    cudaMalloc((void **)err, sizeof(uint32_t)) != cudaSuccess ||
	    cudaMemset(*err, 0, sizeof(uint32_t)) != cudaSuccess)
		return -1;
	int first, size;
	host_ranks(E, &first, &size);
	c->rank = E->rank - first;
	c->world = size;
	c->pads = (uint32_t *const *)pads->peers_dev + first;
	c->epochs = *epochs;
	c->err = *err;
	c->timeout_ns = E->device_timeout_ns;
	return 0;
}

