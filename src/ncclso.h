/*
 * ncclso.h -- NCCL, loaded only where it is used (issue 36). pkb does not
 * link libnccl: a solution process whose solution gets no communicator
 * (the cuda backend) must not have NCCL mapped, where a candidate could
 * find it through the loader's list of objects and make a communicator of
 * its own. The reference and nccl-device candidates link it themselves;
 * the solution process that makes their communicator, and the parent's
 * version probes, load it here.
 */
#ifndef PKB_NCCLSO_H
#define PKB_NCCLSO_H

#include <nccl.h>
#include <stddef.h>

struct nccl_api {
	ncclResult_t (*GetVersion)(int *version);
	ncclResult_t (*GetUniqueId)(ncclUniqueId *id);
	ncclResult_t (*CommInitRank)(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank);
	ncclResult_t (*CommDestroy)(ncclComm_t comm);
	ncclResult_t (*CommGetAsyncError)(ncclComm_t comm, ncclResult_t *err);
	const char *(*GetErrorString)(ncclResult_t r);
	const char *(*GetLastError)(ncclComm_t comm);
};

/* libnccl.so.2, loaded once; NULL with err when it cannot be */
const struct nccl_api *nccl_api(char *err, size_t n);
/* the loaded library's version (e.g. 22807), 0 when there is none */
int nccl_version(void);

#endif
