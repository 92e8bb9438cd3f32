#define _GNU_SOURCE
/*
 * test_loader.c -- the symbol scan of compiled solutions, on tiny shared
 * objects built here with gcc (the scan reads ELF, so no CUDA is needed):
 * NCCL calls, dlopen/dlsym, a linked libnccl and a missing PKB_SOLUTION are
 * refused under the cuda backend; a clean solution passes; the nccl-device
 * backend takes NCCL's window and device-API setup but no collective.
 */
#include "t.h"
#include "loader.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

static char dir[] = "/tmp/pkb-test-loader.XXXXXX";

static char *so(const char *name, const char *body, const char *libs)
{
	char *src = xstrfmt("%s/%s.c", dir, name), *out = xstrfmt("%s/%s.so", dir, name);
	char *text = xstrfmt("const int pkb_abi_version = 1;\n"
			     "struct pkb_ctx;\nint pkb_init(struct pkb_ctx *c) { (void)c; return 0; }\n"
			     "int pkb_fini(struct pkb_ctx *c) { (void)c; return 0; }\n%s\n", body);
	write_file_atomic(src, text, strlen(text));
	char *cmd = xstrfmt("cc -shared -fPIC -o %s %s %s", out, src, libs);
	CHECKF(system(cmd) == 0, "%s", cmd);
	free(cmd);
	free(text);
	free(src);
	return out;
}

int main(void)
{
	mkdtemp(dir);
	char why[256];
	char *clean = so("clean", "int pkb_run(struct pkb_ctx *c) { (void)c; return 0; }", "");
	CHECKF(loader_scan(clean, "cuda", why, sizeof why) == 0, "%s", why);

	char *nccl = so("nccl", "int ncclAllReduce(void); int pkb_run(struct pkb_ctx *c) "
			"{ (void)c; return ncclAllReduce(); }", "");
	CHECK(loader_scan(nccl, "cuda", why, sizeof why) == 1 && strstr(why, "ncclAllReduce"));
	CHECK(loader_scan(nccl, "reference", why, sizeof why) == 0);

	char *dl = so("dl", "#include <dlfcn.h>\nint pkb_run(struct pkb_ctx *c) "
		      "{ (void)c; return dlsym(RTLD_DEFAULT, \"x\") != 0; }", "-ldl");
	CHECK(loader_scan(dl, "cuda", why, sizeof why) == 1 && strstr(why, "dlsym"));

	/* the other ways to a library or a driver function by name (issue 30):
	 * each declared as the C library / CUDA declare it, called once */
	static const char *const lookups[][2] = {
		{ "__libc_dlopen_mode", "void *__libc_dlopen_mode(const char *, int); "
		  "int pkb_run(struct pkb_ctx *c) { (void)c; return __libc_dlopen_mode(\"x\", 2) != 0; }" },
		{ "dl_iterate_phdr", "#define _GNU_SOURCE\n#include <link.h>\n"
		  "static int cb(struct dl_phdr_info *i, size_t n, void *d) { (void)i; (void)n; (void)d; return 0; }\n"
		  "int pkb_run(struct pkb_ctx *c) { (void)c; return dl_iterate_phdr(cb, 0); }" },
		{ "dladdr", "#define _GNU_SOURCE\n#include <dlfcn.h>\n"
		  "int pkb_run(struct pkb_ctx *c) { Dl_info i; return dladdr((void *)c, &i); }" },
		{ "cuGetProcAddress", "int cuGetProcAddress_v2(const char *, void **, int, unsigned long long, void *);\n"
		  "int pkb_run(struct pkb_ctx *c) { void *f; (void)c; return cuGetProcAddress_v2(\"cuMulticastCreate\", &f, 12000, 0, 0); }" },
		{ "cudaGetDriverEntryPoint", "int cudaGetDriverEntryPointByVersion(const char *, void **, unsigned, unsigned long long, void *);\n"
		  "int pkb_run(struct pkb_ctx *c) { void *f; (void)c; return cudaGetDriverEntryPointByVersion(\"cuMulticastCreate\", &f, 12000, 0, 0); }" },
		/* issue 44: an L2 set-aside for persisting accesses (0x06:
		 * cudaLimitPersistingL2CacheSize) keeps lines through the flush */
		{ "cudaDeviceSetLimit", "int cudaDeviceSetLimit(int, unsigned long);\n"
		  "int pkb_run(struct pkb_ctx *c) { (void)c; return cudaDeviceSetLimit(6, 1 << 20); }" },
		{ "cuCtxSetLimit", "int cuCtxSetLimit(int, unsigned long);\n"
		  "int pkb_run(struct pkb_ctx *c) { (void)c; return cuCtxSetLimit(6, 1 << 20); }" },
	};
	for (size_t i = 0; i < sizeof lookups / sizeof *lookups; i++) {
		char *lk = so(lookups[i][0], lookups[i][1], "-ldl");
		CHECKF(lk && loader_scan(lk, "cuda", why, sizeof why) == 1 && strstr(why, lookups[i][0]),
		       "%s: %s", lookups[i][0], why);
		CHECKF(lk && loader_scan(lk, "nccl-device", why, sizeof why) == 1,
		       "%s under nccl-device: %s", lookups[i][0], why);
		CHECKF(lk && loader_scan(lk, "parallelkittens", why, sizeof why) == 1 &&
		       strstr(why, lookups[i][0]), "%s under parallelkittens: %s", lookups[i][0], why);
		CHECK(lk && loader_scan(lk, "reference", why, sizeof why) == 0);
		free(lk);
	}

	char *nolib = so("nolib", "int pkb_run(struct pkb_ctx *c) { (void)c; return 0; }",
			 "-Wl,--no-as-needed -L/usr/local/cuda/lib64 -L/usr/lib/x86_64-linux-gnu -lnccl");
	int r = loader_scan(nolib, "cuda", why, sizeof why);
	CHECKF(r == 1 && strstr(why, "libnccl"), "linked libnccl: %d %s", r, why);
	/* parallelkittens: cuda's rule (TK is headers only), its own name in
	 * the message; no communicator, ThunderKittens' headers */
	r = loader_scan(nolib, "parallelkittens", why, sizeof why);
	CHECKF(r == 1 && strstr(why, "libnccl") && strstr(why, "parallelkittens backend"),
	       "parallelkittens linked libnccl: %d %s", r, why);
	CHECK(loader_scan(nccl, "parallelkittens", why, sizeof why) == 1 &&
	      strstr(why, "'ncclAllReduce', which the parallelkittens backend forbids"));
	CHECK(loader_scan(clean, "parallelkittens", why, sizeof why) == 0);
	CHECK(loader_backend_valid("parallelkittens") && !loader_backend_uses_nccl("parallelkittens") &&
	      loader_backend_uses_tk("parallelkittens") && !loader_backend_uses_tk("cuda") &&
	      strstr(loader_backend_rule("parallelkittens"), "ThunderKittens") &&
	      strstr(loader_backend_names(), "parallelkittens"));
	/* triton: a Python file, nothing to scan, no NCCL */
	CHECK(loader_backend_valid("triton") && loader_backend_uses_python("triton") &&
	      !loader_backend_uses_nccl("triton") && !loader_backend_uses_tk("triton") &&
	      !loader_backend_uses_python("cuda") && strstr(loader_backend_rule("triton"), "Python"));

	/* nccl-device: windows and device communicators yes, collectives and
	 * communicators of its own no; libnccl may be linked */
	char *devapi = so("devapi", "int ncclMemAlloc(void **, unsigned long); "
			  "int ncclCommWindowRegister(void); int ncclDevCommCreate(void);\n"
			  "int pkb_run(struct pkb_ctx *c) { (void)c; void *p; "
			  "return ncclMemAlloc(&p, 1) + ncclCommWindowRegister() + ncclDevCommCreate(); }",
			  "");
	CHECKF(loader_scan(devapi, "nccl-device", why, sizeof why) == 0, "%s", why);
	CHECK(loader_scan(devapi, "cuda", why, sizeof why) == 1 && strstr(why, "cuda backend"));
	CHECK(loader_scan(nccl, "nccl-device", why, sizeof why) == 1 &&
	      strstr(why, "'ncclAllReduce', which the nccl-device backend forbids"));
	char *split = so("split", "int ncclCommSplit(void); int pkb_run(struct pkb_ctx *c) "
			 "{ (void)c; return ncclCommSplit(); }", "");
	CHECK(loader_scan(split, "nccl-device", why, sizeof why) == 1 && strstr(why, "ncclCommSplit"));
	CHECK(loader_scan(dl, "nccl-device", why, sizeof why) == 1 && strstr(why, "dlsym"));
	r = loader_scan(nolib, "nccl-device", why, sizeof why);
	CHECKF(r == 0, "nccl-device with libnccl: %d %s", r, why);
	CHECK(loader_backend_valid("nccl-device") && loader_backend_uses_nccl("nccl-device") &&
	      loader_backend_uses_nccl("reference") && !loader_backend_uses_nccl("cuda"));

	char *norun = so("norun", "int other(void) { return 1; }", "");
	CHECK(loader_scan(norun, "cuda", why, sizeof why) == 1 && strstr(why, "pkb_run"));

	char *txt = xstrfmt("%s/not_elf.so", dir);
	write_file_atomic(txt, "hello", 5);
	CHECK(loader_scan(txt, "cuda", why, sizeof why) == 1);
	CHECK(loader_scan("/nonexistent.so", "cuda", why, sizeof why) == -1);
	CHECK(loader_backend_valid("cuda") && !loader_backend_valid("mpi"));
	rm_rf(dir);
	free(clean); free(nccl); free(dl); free(nolib); free(norun); free(txt);
	free(devapi); free(split);
	return t_done("test_loader");
}
