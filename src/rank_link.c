/*
 * rank_link.c -- see rank_link.h. Moved out of rank.c (issue 39) so that
 * rank.c, timing.c, symm.c and solhost.c all call down into it and none
 * calls back up.
 */
#define _GNU_SOURCE
#include "rank_link.h"
#include "exitcode.h"  /* defines: outcome_name */
#include "phases.h"    /* defines: phase_kind_name */
#include "proto.h"     /* defines: proto_send, proto_recv */
#include "solproc.h"   /* defines: solproc_send, solproc_wait, solproc_kill */
#include "util.h"

#include <cuda_runtime_api.h>
#include <jansson.h>
#include <nccl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- talking to the parent ----------------------------------------------------- */

/* "kind|detail": the kind is an enum of phases.h, so only a phase the
 * parent has a budget for can be announced */
void phase(struct rank_env *E, enum phase_kind kind, const char *fmt, ...)
{
	char buf[256];
	int off = snprintf(buf, sizeof buf, "%s|", phase_kind_name(kind));
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf + off, sizeof buf - (size_t)off, fmt, ap);
	va_end(ap);
	if (!E->is_sol)   /* a solution process's phases are its judge's to announce */
		proto_send(E->fd, MSG_PHASE, buf, strlen(buf));
	snprintf(E->phase_now, sizeof E->phase_now, "%s", buf + off);
}

noreturn void rank_fail(struct rank_env *E, enum pkb_outcome cat, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	error("%s %d: %s: %s", E->is_sol ? "solution process of rank" : "rank", E->rank,
	      outcome_name(cat), msg);
	if (E->proc)
		solproc_kill(E->proc);
	json_t *j = json_pack("{s:s,s:s}", "category", outcome_name(cat), "message", msg);
	char *txt = json_dumps(j, JSON_COMPACT);
	proto_send(E->fd, MSG_FAIL, txt, strlen(txt));
	free(txt);
	json_decref(j);
	fflush(NULL);
	_exit(1);
}

void send_result(struct rank_env *E, json_t *rec)
{
	char *txt = json_dumps(rec, JSON_COMPACT);
	proto_send(E->fd, MSG_RESULT, txt, strlen(txt));
	free(txt);
	json_decref(rec);
}

int coll_allgather(struct rank_env *E, const void *send, void *recv, size_t bytes)
{
	if (proto_send(E->fd, MSG_COLL, send, bytes) < 0)
		return -1;
	enum msg_type t;
	char *buf;
	size_t len;
	if (proto_recv(E->fd, &t, &buf, &len) < 0 || t != MSG_COLL ||
	    len != bytes * (size_t)E->world) {
		free(len ? buf : NULL);
		return -1;
	}
	if (recv)
		memcpy(recv, buf, len);
	free(buf);
	return 0;
}

void host_barrier(struct rank_env *E)
{
	if (coll_allgather(E, NULL, NULL, 0) < 0)
		rank_fail(E, OUT_INTERNAL, "lost the parent during a barrier");
}

/* Wait for the stream, turning asynchronous CUDA and NCCL errors into a
 * runtime_error of `who`. A hang is the parent's to end (its deadline). */
void wait_stream(struct rank_env *E, const char *who)
{
	for (unsigned spins = 0;; spins++) {
		cudaError_t e = cudaStreamQuery(E->stream);
		if (e == cudaSuccess)
			break;
		if (e != cudaErrorNotReady)
			rank_fail(E, OUT_RUNTIME_ERROR, "%s: %s", who, cudaGetErrorString(e));
		if (E->nccl && (spins & 255) == 0) {
			ncclResult_t ae;
			if (E->nccl_api->CommGetAsyncError(E->nccl, &ae) == ncclSuccess &&
			    ae != ncclSuccess && ae != ncclInProgress)
				rank_fail(E, OUT_RUNTIME_ERROR, "%s: NCCL: %s", who,
					  E->nccl_api->GetErrorString(ae));
		}
		if (spins > 1000)
			usleep(50);
	}
	cudaError_t e = cudaDeviceSynchronize();   /* errors of side streams too */
	if (e != cudaSuccess)
		rank_fail(E, OUT_RUNTIME_ERROR, "%s: %s", who, cudaGetErrorString(e));
}

/* ---- the solution process ------------------------------------------------------ */

json_t *ipc_handles(struct rank_env *E, void *const *bufs, int n)
{
	json_t *a = json_array();
	for (int i = 0; i < n; i++) {
		cudaIpcMemHandle_t h;
		CUDA_OR(E, OUT_RUNTIME_ERROR, cudaIpcGetMemHandle(&h, bufs[i]));
		char hex[2 * sizeof h + 1];
		for (size_t k = 0; k < sizeof h; k++)
			snprintf(hex + 2 * k, 3, "%02x", ((unsigned char *)&h)[k]);
		json_array_append_new(a, json_string(hex));
	}
	return a;
}

/* an all-gather the solution process asked for, made among the judges */
static int relay_coll(void *ctx, const void *send, size_t len, void **out, size_t *out_len)
{
	struct rank_env *E = ctx;
	*out_len = len * (size_t)E->world;
	*out = xmalloc(*out_len + 1);
	return coll_allgather(E, send, *out, len);
}

json_t *sol_wait(struct rank_env *E, json_t *cmd, const char *op)
{
	if (cmd && solproc_send(E->proc, MSG_SOL_CMD, cmd) < 0) {
		char msg[400];
		enum pkb_outcome cat = solproc_describe_end(E->proc, msg, sizeof msg);
		rank_fail(E, cat, "%s", msg);
	}
	json_t *reply = NULL;
	enum pkb_outcome cat;
	char msg[1200];
	if (solproc_wait(E->proc, op, -1, &reply, relay_coll, E, &cat, msg, sizeof msg) < 0)
		rank_fail(E, cat, "%s", msg);
	return reply;
}

void sol_command(struct rank_env *E, json_t *cmd, const char *op)
{
	json_decref(sol_wait(E, cmd, op));
}

/* ---- the communicator ---------------------------------------------------------- */

void nccl_setup(struct rank_env *E)
{
	phase(E, PH_NCCL_INIT, "creating the NCCL communicator");
	char err[300];
	if (!(E->nccl_api = nccl_api(err, sizeof err)))
		rank_fail(E, OUT_ENV_ERROR, "%s", err);
	ncclUniqueId id, *all = xcalloc((size_t)E->world, sizeof id);
	memset(&id, 0, sizeof id);
	if (E->rank == 0)
		NCCL_OR(E, E->nccl_api->GetUniqueId(&id));
	if (coll_allgather(E, &id, all, sizeof id) < 0)
		rank_fail(E, OUT_INTERNAL, "lost the parent");
	NCCL_OR(E, E->nccl_api->CommInitRank(&E->nccl, E->world, all[0], E->rank));
	free(all);
}
