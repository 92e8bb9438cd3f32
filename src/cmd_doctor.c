/*
 * cmd_doctor.c -- `pkb doctor`: what this machine has for pkb (compiler,
 * driver, GPUs, CUDA and NCCL versions, the peer-access / NVLink matrix),
 * what is missing and how to fix it. The GPU questions go to a child
 * (`pkb __probe`) so that the parent never touches CUDA.
 */
#define _GNU_SOURCE   /* mkstemp */
#include "build.h"
#include "cmds.h"
#include "exitcode.h"
#include "job.h"
#include "mps.h"       /* defines: mps_probe */
#include "ncclso.h"    /* defines: nccl_version */
#include "opts.h"
#include "pybridge.h"  /* defines: pybridge_probe */
#include "sandbox.h"   /* defines: sandbox_landlock_abi */
#include "therm.h"     /* defines: therm_open, therm_read */
#include "util.h"

#include <cuda_runtime_api.h>
#include <jansson.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* the child: print one JSON object describing the GPUs */
int cmd_probe(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	json_t *o = json_object();
	int n = 0, rt = 0, drv = 0, nccl = 0;
	cudaError_t e = cudaGetDeviceCount(&n);
	cudaRuntimeGetVersion(&rt);
	cudaDriverGetVersion(&drv);
	nccl = nccl_version();
	json_object_set_new(o, "cuda_runtime", json_integer(rt));
	json_object_set_new(o, "cuda_driver", json_integer(drv));
	json_object_set_new(o, "nccl", json_integer(nccl));
	if (e != cudaSuccess) {
		json_object_set_new(o, "error", json_string(cudaGetErrorString(e)));
		n = 0;
	}
	json_t *gpus = json_array(), *p2p = json_array();
	for (int i = 0; i < n; i++) {
		struct cudaDeviceProp p;
		cudaGetDeviceProperties(&p, i);
		json_array_append_new(gpus, json_pack("{s:i,s:s,s:s,s:I,s:i,s:i}", "index", i, "name",
						      p.name, "cc", "", "memory_bytes",
						      (json_int_t)p.totalGlobalMem, "sms",
						      p.multiProcessorCount, "l2_bytes", p.l2CacheSize));
		char cc[16];
		snprintf(cc, sizeof cc, "%d.%d", p.major, p.minor);
		json_object_set_new(json_array_get(gpus, (size_t)i), "cc", json_string(cc));
		json_t *row = json_array();
		for (int j = 0; j < n; j++) {
			int can = 0, rank = -1;
			if (i != j) {
				cudaDeviceCanAccessPeer(&can, i, j);
				cudaDeviceGetP2PAttribute(&rank, cudaDevP2PAttrPerformanceRank, i, j);
			}
			json_array_append_new(row, json_pack("{s:b,s:i}", "peer", can, "perf_rank",
							     rank));
		}
		json_array_append_new(p2p, row);
	}
	json_object_set_new(o, "gpus", gpus);
	json_object_set_new(o, "p2p", p2p);
	char *txt = json_dumps(o, JSON_COMPACT);
	puts(txt);
	free(txt);
	json_decref(o);
	return 0;
}

/* Whether the judge can read its GPUs' heat (therm.h; docs/TIMING.md,
 * "Heat"): through NVML, for the first GPU the driver lists by bus id. Not
 * a fault: without it timed evaluations run, and do not catch a candidate
 * that heats the GPU for the reference */
static void heat_line(json_t *rec, int gpus)
{
	char line[400], why[300] = "no GPU";
	DIR *d = gpus > 0 ? opendir("/proc/driver/nvidia/gpus") : NULL;
	struct dirent *e;
	struct therm *t = NULL;
	while (d && !t && (e = readdir(d)))
		if (e->d_name[0] != '.')
			t = therm_open(e->d_name, why, sizeof why);
	int c, mhz;
	if (t && therm_read(t, &c, &mhz) == 0)
		snprintf(line, sizeof line, "NVML: GPU %s at %d C, SM %d MHz (read before each "
			 "solution's timing)", e->d_name, c, mhz);
	else
		snprintf(line, sizeof line, "not read (%s): a candidate that heats the GPU for "
			 "the reference, timed after it, goes unseen", t ? "NVML read failed" : why);
	printf("heat      %s\n", line);
	json_object_set_new(rec, "heat", json_string(line));
	therm_close(t);
	if (d)
		closedir(d);
}

/* What the solution process's sandbox can use on this kernel (src/sandbox.h,
 * docs/ANTI_CHEAT.md): a line, "landlock_abi" in rec; 1 when Landlock is
 * missing (candidate code would read any file its user can), else 0 */
static int sandbox_line(json_t *rec)
{
	char why[300];
	int abi = sandbox_landlock_abi(why, sizeof why);
	json_object_set_new(rec, "landlock_abi", json_integer(abi));
	if (abi < 1)
		printf("sandbox   no Landlock (%s): a solution process could read any file its "
		       "user can\n", why);
	else if (abi < 6)
		printf("sandbox   Landlock ABI %d: files confined; no scopes below ABI 6 (Linux "
		       "6.12): a solution process can connect to other processes' abstract UNIX "
		       "sockets (docs/ANTI_CHEAT.md)\n", abi);
	else
		printf("sandbox   Landlock ABI %d: files confined, signals and abstract UNIX "
		       "sockets scoped\n", abi);
	if (geteuid() == 0)
		printf("  running as root: the rlimits bound runaways only (root may raise them)\n");
	return abi < 1;
}

/* The triton backend: a Python whose shared libpython pkb can embed, and
 * that imports torch and Triton (asked in a child, with a deadline) */
static json_t *triton_line(char *why, size_t n)
{
	char *python = build_python_path(why, n);
	struct pybridge_probe pr = { 0 };
	char tmp[] = "/tmp/pkb-doctor-py.XXXXXX";
	char *out = NULL;
	int ready = 0;
	if (python && pybridge_probe(python, &pr, why, n) == 0) {
		int fd = mkstemp(tmp);
		if (fd >= 0)
			close(fd);
		char *argv[] = { python, "-c", "import torch, triton; print('torch %s, triton %s, "
				 "%d GPU(s)' % (torch.__version__, triton.__version__, "
				 "torch.cuda.device_count()))", NULL };
		if (fd >= 0 && run_redirected(argv, "/dev/null", tmp, "/dev/null", 120) == 0 &&
		    (out = read_file(tmp, NULL)) != NULL) {
			out[strcspn(out, "\n")] = 0;
			ready = 1;
		} else {
			snprintf(why, n, "%s (Python %s) cannot import torch and triton", python,
				 pr.version);
		}
		if (fd >= 0)
			unlink(tmp);
	}
	json_t *j;
	if (ready) {
		printf("backend   triton: %s, Python %s (%s), %s\n", python, pr.version, pr.lib, out);
		j = json_pack("{s:b,s:s,s:s,s:s}", "ready", 1, "python", python, "libpython", pr.lib,
			      "versions", out);
	} else {
		printf("backend   triton: not here: %s\n", why);
		j = json_pack("{s:b,s:s}", "ready", 0, "why", why);
	}
	free(out);
	free(python);
	pybridge_probe_free(&pr);
	return j;
}

/* The optional candidate backends (docs/BACKENDS.md): whether this machine
 * can build and run each, a line apiece and "backends" in rec. Not faults:
 * cuda and nccl-device need nothing more. */
static void backends_lines(json_t *rec)
{
	json_t *b = json_object();
	char why[400];
	char *tk = build_tk_root(why, sizeof why);
	if (tk)
		printf("backend   parallelkittens: ThunderKittens at %s\n", tk);
	else
		printf("backend   parallelkittens: not here: %s\n", why);
	json_object_set_new(b, "parallelkittens", tk ? json_pack("{s:b,s:s}", "ready", 1, "root", tk)
				: json_pack("{s:b,s:s}", "ready", 0, "why", why));
	free(tk);
	json_object_set_new(b, "triton", triton_line(why, sizeof why));
	json_object_set_new(rec, "backends", b);
}

static const char head[] =
"usage: pkb doctor [--json FILE]\n"
"\n"
"Check this machine: compiler, driver, GPUs, CUDA and NCCL, peer access.\n"
"\n";
static const char tail[] =
"\n"
"exit status: 0 ready for multi-GPU runs, 9 something is missing\n";

static const struct opt doctor_opts[] = {
	{ 'j', "json", "FILE", "also write the checks as JSON" },
	OPTS_END,
};
static const struct opt *const tables[] = { doctor_opts, NULL };

int cmd_doctor(int argc, char **argv)
{
	const char *json_path = NULL;
	int c;
	struct opts_parser P;
	opts_init(&P, tables);
	while ((c = opts_next(&P, argc, argv)) != -1) {
		if (c == 'j')
			json_path = optarg;
		else if (c == 'h')
			return opts_usage(stdout, head, tables, tail), 0;
		else
			return opts_usage(stderr, head, tables, tail), PKB_EXIT_USAGE;
	}
	int problems = 0;
	json_t *rec = json_object();
	const char *nvcc = build_nvcc_version();
	printf("nvcc      %s\n", nvcc);
	json_object_set_new(rec, "nvcc", json_string(nvcc));
	if (!strcmp(nvcc, "unknown")) {
		problems++;
		printf("  missing: nvcc; install the CUDA toolkit and put its bin/ on PATH "
		       "(or set CUDA_HOME)\n");
	}
	printf("nccl.h    %d.%d.%d (compiled against)\n", NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH);
	char *drv = read_file("/proc/driver/nvidia/version", NULL);
	if (drv) {
		char *nl = strchr(drv, '\n');
		if (nl)
			*nl = 0;
		printf("driver    %s\n", drv);
		json_object_set_new(rec, "driver", json_string(drv));
		free(drv);
	} else {
		printf("driver    none (no /proc/driver/nvidia)\n");
	}
	int g = gpu_count();
	printf("gpus      %d visible\n", g);
	json_object_set_new(rec, "gpu_count", json_integer(g));
	if (g == 0) {
		problems++;
		printf("  missing: NVIDIA GPUs; pkb compiles and tests everything here, but run, "
		       "eval and test-gpu need a machine with GPUs and the NVIDIA driver\n");
	} else {
		int rc;
		json_t *pr = gpu_probe(&rc);
		if (!pr) {
			problems++;
			printf("  the GPU probe failed (status %d): CUDA cannot use the GPUs\n", rc);
		} else {
			int rt = (int)json_integer_value(json_object_get(pr, "cuda_runtime"));
			int dv = (int)json_integer_value(json_object_get(pr, "cuda_driver"));
			int nc = (int)json_integer_value(json_object_get(pr, "nccl"));
			printf("cuda      runtime %d.%d, driver supports %d.%d\n", rt / 1000,
			       rt % 1000 / 10, dv / 1000, dv % 1000 / 10);
			printf("nccl      %d.%d.%d (loaded)\n", nc / 10000, nc / 100 % 100, nc % 100);
			if (nc < 22800) {
				problems++;
				printf("  too old: NCCL >= 2.28 is needed (the device API)\n");
			}
			json_t *gpus = json_object_get(pr, "gpus"), *p2p = json_object_get(pr, "p2p");
			size_t i;
			json_t *gp;
			json_array_foreach(gpus, i, gp)
				printf("gpu %zu     %s, cc %s, %d SMs, %.0f GiB, L2 %.0f MiB\n", i,
				       json_string_value(json_object_get(gp, "name")),
				       json_string_value(json_object_get(gp, "cc")),
				       (int)json_integer_value(json_object_get(gp, "sms")),
				       (double)json_integer_value(json_object_get(gp, "memory_bytes")) / (1 << 30),
				       (double)json_integer_value(json_object_get(gp, "l2_bytes")) / (1 << 20));
			printf("peer access (P = peer, . = none; digit = NVLink performance rank):\n     ");
			for (i = 0; i < json_array_size(p2p); i++)
				printf("%3zu", i);
			printf("\n");
			int no_peer = 0;
			for (i = 0; i < json_array_size(p2p); i++) {
				printf("  %2zu ", i);
				json_t *row = json_array_get(p2p, i);
				for (size_t j = 0; j < json_array_size(row); j++) {
					json_t *cell = json_array_get(row, j);
					if (i == j)
						printf("  X");
					else if (json_is_true(json_object_get(cell, "peer")))
						printf("  P");
					else
						printf("  ."), no_peer = 1;
				}
				printf("\n");
			}
			if (no_peer) {
				problems++;
				printf("  some GPU pairs have no peer access: candidates that use "
				       "symmetric memory cannot run across them\n");
			}
			json_object_set_new(rec, "probe", pr);
		}
	}
	/* the judge times another process's calls: timed launches need MPS */
	char mline[600];
	int no_mps = mps_probe(mline, sizeof mline);
	printf("mps       %s\n", mline);
	json_object_set_new(rec, "mps", json_string(mline));
	if (no_mps && g > 0)
		problems++;
	problems += sandbox_line(rec);
	heat_line(rec, g);
	backends_lines(rec);
	const char *nvls = getenv("NCCL_NVLS_ENABLE");
	printf("multicast NCCL_NVLS_ENABLE=%s (pkb sets 0 for every rank)\n", nvls ? nvls : "unset");
	printf("%s\n", problems ? "not ready: see above" : "ready");
	json_object_set_new(rec, "ready", json_boolean(!problems));
	if (json_path) {
		json_write_file(json_path, rec);
	}
	json_decref(rec);
	return problems ? PKB_EXIT_ENV : 0;
}
