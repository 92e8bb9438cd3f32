/*
 * loader.c -- see loader.h. The `cuda` backend refuses NCCL (its symbols or
 * its library) and the dynamic loader's lookup functions, which are the
 * plain way to reach a forbidden library without naming it at link time;
 * `nccl-device` allows NCCL's symmetric-memory and device-API setup only;
 * `parallelkittens` is `cuda` compiled against ThunderKittens' headers
 * (build.c adds them and their flags), under the same rule.
 */
#include "loader.h"

#include <fcntl.h>
#include <fnmatch.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/*
 * What each backend may link against. `cuda`: no NCCL at all. `nccl-device`:
 * NCCL's symmetric memory and device API (windows, device communicators;
 * the device side is header-only), but no host collective, no point-to-point
 * call and no communicator of its own. `reference`: anything.
 */
struct backend {
	const char *name;
	const char *const *allow_sym;    /* checked first */
	const char *const *forbid_sym;
	const char *const *forbid_lib;
	const char *rule;
	int nccl;                        /* its solutions get ctx->nccl_comm */
	int tk;                          /* compiled against ThunderKittens */
	int python;                      /* a .py file: no object, no symbols to scan */
};
/* NCCL, NVSHMEM, and every way to reach a library or a driver entry point
 * without naming it at link time: the dynamic loader's lookups (glibc's
 * internal __libc_dl* too), the walks that find where a library is mapped
 * (dl_iterate_phdr, dladdr: from there its symbol table), and the CUDA
 * driver's and runtime's lookups of driver functions by name */
static const char *const forbid_loader[] = {
	"nccl*", "pnccl*", "nvshmem*",
	"dlopen", "dlmopen", "dlsym", "dlvsym", "dlinfo", "dladdr", "dladdr1",
	"dl_iterate_phdr", "__libc_dl*", "_dl_*",
	"cuGetProcAddress*", "cudaGetDriverEntryPoint*",
	/* the context's limits are the harness's: an L2 set-aside for
	 * persisting accesses keeps lines through the cold timing's flush */
	"cudaDeviceSetLimit", "cuCtxSetLimit", NULL,
};
static const char *const allow_nccl_device[] = {
	"ncclMemAlloc", "ncclMemFree", "ncclCommWindowRegister", "ncclCommWindowDeregister",
	"ncclDevCommCreate", "ncclDevCommDestroy", "ncclCommQueryProperties",
	"ncclLsaBarrierCreateRequirement", "ncclGetErrorString", "ncclGetLastError",
	"ncclGetVersion", "ncclCommCount", "ncclCommUserRank", "ncclCommCuDevice", NULL,
};
static const char *const forbid_lib_cuda[] = { "libnccl*", "libnvshmem*", NULL };
static const char *const forbid_lib_nccl_device[] = { "libnvshmem*", NULL };
static const char *const none[] = { NULL };
static const struct backend backends[] = {
	{ .name = "cuda", .allow_sym = none, .forbid_sym = forbid_loader,
	  .forbid_lib = forbid_lib_cuda,
	  .rule = "no NCCL or NVSHMEM symbol or library at all, and no dynamic lookup (dlopen, "
		  "dlsym, cuGetProcAddress ...), no change of the context's limits "
		  "(cudaDeviceSetLimit: an L2 set-aside for persisting accesses); ranks talk "
		  "through the harness's symmetric memory (pkb_symm_alloc, peer pointers, the "
		  "barriers of pkb_device.cuh)" },
	{ .name = "nccl-device", .allow_sym = allow_nccl_device, .forbid_sym = forbid_loader,
	  .forbid_lib = forbid_lib_nccl_device, .nccl = 1,
	  .rule = "NCCL's symmetric windows and device API only (ncclMemAlloc, "
		  "ncclCommWindowRegister, ncclDevCommCreate and device-side calls); no host "
		  "collective or point-to-point call (ncclAllReduce, ncclSend ...), no NVSHMEM, "
		  "no dynamic lookup, no change of the context's limits" },
	/* ThunderKittens is headers only: what they compile to is checked as
	 * any cuda candidate's code (its host side calls the driver API, which
	 * cuda candidates may too) */
	{ .name = "parallelkittens", .allow_sym = none, .forbid_sym = forbid_loader,
	  .forbid_lib = forbid_lib_cuda, .tk = 1,
	  .rule = "the cuda backend's rule (no NCCL or NVSHMEM, no dynamic lookup, no change "
		  "of the context's limits), compiled against ThunderKittens' headers "
		  "($THUNDERKITTENS_ROOT); ranks talk through the harness's symmetric memory, "
		  "which TK's pgl<..., W, false> wraps (no multicast)" },
	/* a Python file, hosted by pkb's own code (src/pybridge.c,
	 * python/pkb_triton.py): nothing to scan, the sandbox is the rule */
	{ .name = "triton", .allow_sym = none, .forbid_sym = none, .forbid_lib = none, .python = 1,
	  .rule = "a Python file in the original's solution format: Triton kernels and torch "
		  "on this rank's GPU, peers through symmetric memory (symm_mem.empty and "
		  "rendezvous, served by pkb); no torch.distributed collective (no NCCL), no "
		  "subprocess, files or network (the solution process's sandbox)" },
	{ .name = "reference", .allow_sym = none, .forbid_sym = none, .forbid_lib = none,
	  .rule = "anything", .nccl = 1 },
};
static const char *const required_sym[] = {
	"pkb_abi_version", "pkb_init", "pkb_run", "pkb_fini", NULL,
};

static const struct backend *backend_of(const char *name)
{
	for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++)
		if (!strcmp(backends[i].name, name))
			return &backends[i];
	return NULL;
}

int loader_backend_valid(const char *backend)
{
	return backend_of(backend) != NULL;
}

const char *loader_backend_rule(const char *backend)
{
	const struct backend *b = backend_of(backend);
	return b ? b->rule : "";
}

int loader_backend_uses_nccl(const char *backend)
{
	const struct backend *b = backend_of(backend);
	return b && b->nccl;
}

int loader_backend_uses_tk(const char *backend)
{
	const struct backend *b = backend_of(backend);
	return b && b->tk;
}

int loader_backend_uses_python(const char *backend)
{
	const struct backend *b = backend_of(backend);
	return b && b->python;
}

const char *loader_backend_names(void)
{
	return "cuda, nccl-device, parallelkittens, triton";
}

static int matches(const char *const *globs, const char *name)
{
	for (int i = 0; globs[i]; i++)
		if (fnmatch(globs[i], name, 0) == 0)
			return 1;
	return 0;
}

int loader_scan(const char *so_path, const char *backend, char *why, size_t n)
{
	int fd = open(so_path, O_RDONLY);
	if (fd < 0) {
		snprintf(why, n, "cannot open '%s'", so_path);
		return -1;
	}
	elf_version(EV_CURRENT);
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF) {
		snprintf(why, n, "'%s' is not an ELF shared object", so_path);
		if (e)
			elf_end(e);
		close(fd);
		return 1;
	}
	const struct backend *be = backend_of(backend);
	if (!be) {
		snprintf(why, n, "unknown backend '%s'", backend);
		elf_end(e);
		close(fd);
		return -1;
	}
	int found[8] = { 0 };
	int verdict = 0;
	Elf_Scn *scn = NULL;
	while (!verdict && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh))
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		if (!d)
			continue;
		if (sh.sh_type == SHT_DYNSYM) {
			size_t count = sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
			for (size_t i = 0; i < count; i++) {
				GElf_Sym sym;
				if (!gelf_getsym(d, (int)i, &sym))
					continue;
				const char *name = elf_strptr(e, sh.sh_link, sym.st_name);
				if (!name || !*name)
					continue;
				if (sym.st_shndx == SHN_UNDEF) {
					if (!matches(be->allow_sym, name) &&
					    matches(be->forbid_sym, name)) {
						snprintf(why, n, "uses '%s', which the %s backend "
							 "forbids", name, be->name);
						verdict = 1;
						break;
					}
				} else {
					for (int k = 0; required_sym[k]; k++)
						if (!strcmp(name, required_sym[k]))
							found[k] = 1;
				}
			}
		} else if (sh.sh_type == SHT_DYNAMIC) {
			size_t count = sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
			for (size_t i = 0; i < count; i++) {
				GElf_Dyn dyn;
				if (!gelf_getdyn(d, (int)i, &dyn) || dyn.d_tag != DT_NEEDED)
					continue;
				const char *lib = elf_strptr(e, sh.sh_link, dyn.d_un.d_val);
				if (lib && matches(be->forbid_lib, lib)) {
					snprintf(why, n, "links '%s', which the %s backend forbids",
						 lib, be->name);
					verdict = 1;
					break;
				}
			}
		}
	}
	elf_end(e);
	close(fd);
	if (verdict)
		return 1;
	for (int k = 0; required_sym[k]; k++)
		if (!found[k]) {
			snprintf(why, n, "does not define '%s'%s", required_sym[k],
				 k == 0 ? " (missing PKB_SOLUTION;)" : "");
			return 1;
		}
	return 0;
}
