/*
 * ncclso.c -- see ncclso.h.
 */
#define _GNU_SOURCE
#include "ncclso.h"

#include <dlfcn.h>
#include <stdio.h>

const struct nccl_api *nccl_api(char *err, size_t n)
{
	static struct nccl_api api;
	static int loaded;
	if (loaded)
		return &api;
	void *dl = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
	if (!dl) {
		snprintf(err, n, "cannot load NCCL: %s", dlerror());
		return NULL;
	}
	struct { void **fn; const char *name; } syms[] = {
		{ (void **)&api.GetVersion, "ncclGetVersion" },
		{ (void **)&api.GetUniqueId, "ncclGetUniqueId" },
		{ (void **)&api.CommInitRank, "ncclCommInitRank" },
		{ (void **)&api.CommDestroy, "ncclCommDestroy" },
		{ (void **)&api.CommGetAsyncError, "ncclCommGetAsyncError" },
		{ (void **)&api.GetErrorString, "ncclGetErrorString" },
		{ (void **)&api.GetLastError, "ncclGetLastError" },
	};
	for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++)
		if (!(*syms[i].fn = dlsym(dl, syms[i].name))) {
			snprintf(err, n, "NCCL lacks %s", syms[i].name);
			return NULL;
		}
	loaded = 1;
	return &api;
}

int nccl_version(void)
{
	char err[200];
	const struct nccl_api *a = nccl_api(err, sizeof err);
	int v = 0;
	if (!a || a->GetVersion(&v) != ncclSuccess)
		return 0;
	return v;
}
