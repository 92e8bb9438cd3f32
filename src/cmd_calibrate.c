/*
 * cmd_calibrate.c -- `pkb calibrate`: measure this machine's achievable
 * peaks (src/calibrate.cu, in the child `pkb __calibrate` so that a hung or
 * crashed GPU ends as a message) and store them as the hardware `local`
 * that `pkb roofline --hw local` and `pkb eval --hw local` use.
 */
#include "cmds.h"
#include "exitcode.h"
#include "job.h"        /* defines: gpu_count */
#include "kernels.h"    /* defines: struct calib, calib_measure */
#include "roofline.h"   /* defines: hw_local_path, hw_for_device */
#include "opts.h"
#include "util.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char head[] =
"usage: pkb calibrate [--json FILE] [--timeout S]\n"
"\n"
"Measure this machine: HBM copy bandwidth; peer bandwidth one way (copy\n"
"engine, SM stores, SM loads) and both ways (copy engine, SM stores);\n"
"all-to-all; bf16 GEMM FLOP/s; the round trip of a device-side flag between\n"
"two GPUs; the timed loop's floor (an empty call). Stored as the hardware\n"
"'local' (docs/ROOFLINE.md) in the cache folder. Takes about a minute.\n"
"\n";

enum { OPT_TIMEOUT = 1000 };
static const struct opt calibrate_opts[] = {
	{ 'j', "json", "FILE", "also write the measurements here" },
	{ OPT_TIMEOUT, "timeout", "S", "give up after S seconds (default 300)" },
	OPTS_END,
};
static const struct opt *const tables[] = { calibrate_opts, NULL };

/* the child: measure, write {measured, hw} as JSON to argv[1] */
int cmd_calibrate_child(int argc, char **argv)
{
	if (argc != 2)
		return PKB_EXIT_USAGE;
	struct calib c;
	char err[300];
	if (calib_measure(&c, err, sizeof err) < 0) {
		error("calibrate: %s", err);
		return PKB_EXIT_RUNTIME;
	}
	json_t *m = json_pack("{s:s,s:i,s:i,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:i,s:f}", "device", c.name,
			      "gpus", c.gpus, "sm_count", c.sm_count, "l2_bytes", c.l2_bytes,
			      "hbm_bytes", c.hbm_bytes, "hbm_copy_bw", c.hbm_copy_bw, "p2p_ce_bw",
			      c.p2p_ce_bw, "p2p_sm_bw", c.p2p_sm_bw, "p2p_bidir_bw", c.p2p_bidir_bw,
			      "alltoall_rx_bw", c.alltoall_rx_bw, "alltoall_gpus", c.alltoall_gpus,
			      "gemm_bf16_flops", c.gemm_bf16_flops);
	json_object_set_new(m, "flag_round_trip_us", c.flag_round_trip_s > 0
				? json_real(c.flag_round_trip_s * 1e6) : json_null());
	json_object_set_new(m, "p2p_sm_load_bw", json_real(c.p2p_sm_load_bw));
	json_object_set_new(m, "p2p_bidir_sm_bw", json_real(c.p2p_bidir_sm_bw));
	/* on one GPU nothing crosses a link: null, not a measured 0.0 GB/s
	 * (issue 30: hw 'local' stored 0.0 peer bandwidth) */
	static const char *peer_keys[] = { "p2p_ce_bw", "p2p_sm_bw", "p2p_bidir_bw",
					   "alltoall_rx_bw", "p2p_sm_load_bw", "p2p_bidir_sm_bw" };
	for (size_t i = 0; c.gpus < 2 && i < sizeof peer_keys / sizeof *peer_keys; i++)
		json_object_set_new(m, peer_keys[i], json_null());
	json_object_set_new(m, "empty_call_us", c.empty_call_s > 0
				? json_real(c.empty_call_s * 1e6) : json_null());
	/* the flops not measured come from the nominal spec of this GPU family;
	 * without one they are set to the measured bf16 figure (said in the file) */
	struct hw_spec nom;
	char why[600];
	int have_nom = hw_for_device(NULL, c.name, 2, &nom, why, sizeof why) == 0;
	double net = c.p2p_ce_bw > c.p2p_sm_bw ? c.p2p_ce_bw : c.p2p_sm_bw;
	net = c.p2p_sm_load_bw > net ? c.p2p_sm_load_bw : net;
	json_t *hw = json_pack(
		"{s:s,s:s,s:i,s:i,s:f,s:f,s:f,s:f,s:{s:f,s:f,s:f,s:f,s:f},s:s,s:s}",
		"name", "local", "title", c.name, "gpus", c.gpus, "sm_count", c.sm_count,
		"l2_bytes", c.l2_bytes, "hbm_bytes", c.hbm_bytes, "hbm_bw", c.hbm_copy_bw,
		"net_bw", net > 0 ? net : (have_nom ? nom.net_bw : 0.0), "flops",
		"bf16", c.gemm_bf16_flops,
		"fp16", have_nom ? nom.flops_fp16 : c.gemm_bf16_flops,
		"fp8", have_nom ? nom.flops_fp8 : c.gemm_bf16_flops,
		"tf32", have_nom ? nom.flops_tf32 : c.gemm_bf16_flops,
		"fp32", have_nom ? nom.flops_fp32 : c.gemm_bf16_flops,
		"topology", "measured", "source",
		have_nom ? "pkb calibrate; fp16/fp8/tf32/fp32 from the nominal spec of this GPU"
			 : "pkb calibrate; no nominal spec for this GPU: unmeasured flops = bf16");
	/* net_bw not measured (one GPU): the nominal figure, said so, or none
	 * at all; roofline then refuses problems that cross the interconnect
	 * rather than dividing by a made-up 1 B/s */
	if (!(net > 0) && have_nom)
		json_object_set_new(hw, "net_bw_source", json_string("nominal: one GPU, not measured"));
	else if (!(net > 0))
		json_object_del(hw, "net_bw");
	json_object_set_new(hw, "measured", m);
	int rc = json_write_file(argv[1], hw);
	json_decref(hw);
	return rc < 0 ? PKB_EXIT_INPUT : 0;
}

int cmd_calibrate(int argc, char **argv)
{
	const char *json_path = NULL;
	double timeout = 300;
	int c;
	struct opts_parser P;
	opts_init(&P, tables);
	while ((c = opts_next(&P, argc, argv)) != -1) {
		switch (c) {
		case 'j': json_path = optarg; break;
		case OPT_TIMEOUT:
			if (opt_num("timeout", optarg, 1e-3, 86400, &timeout) < 0)
				return PKB_EXIT_USAGE;
			break;
		case 'h': opts_usage(stdout, head, tables, NULL); return 0;
		default: opts_usage(stderr, head, tables, NULL); return PKB_EXIT_USAGE;
		}
	}
	if (optind != argc || timeout <= 0) {
		opts_usage(stderr, head, tables, NULL);
		return PKB_EXIT_USAGE;
	}
	if (gpu_count() < 1) {
		error("calibrate needs an NVIDIA GPU; this machine has none");
		return PKB_EXIT_ENV;
	}
	char *tmp = xstrfmt("/tmp/pkb-calibrate.%d.json", (int)getpid());
	char *log = xstrfmt("/tmp/pkb-calibrate.%d.log", (int)getpid());
	char *cargv[] = { (char *)pkb_self_exe(), "__calibrate", tmp, NULL };
	printf("measuring (about a minute) ...\n");
	fflush(stdout);
	int rc = run_logged(cargv, log, timeout);
	json_t *hw = rc == 0 ? json_load_file(tmp, 0, NULL) : NULL;
	if (!hw) {
		char *txt = read_file(log, NULL);
		error("calibration failed (%s): %s", rc == -2 ? "timed out" : "the GPU work failed",
		      txt ? txt : "no output");
		free(txt);
		unlink(tmp);
		unlink(log);
		free(tmp);
		free(log);
		return rc == -2 ? PKB_EXIT_TIMEOUT : PKB_EXIT_RUNTIME;
	}
	unlink(log);
	unlink(tmp);
	free(tmp);
	free(log);
	json_t *m = json_object_get(hw, "measured");
#define G(k) (json_number_value(json_object_get(m, k)))
	/* a null figure was not measured (one GPU): say so, not 0.0 */
#define P(fmt, k, ...)                                                                    \
	do {                                                                              \
		if (json_is_number(json_object_get(m, k)))                               \
			printf(fmt, G(k) / 1e9, ##__VA_ARGS__);                            \
		else                                                                      \
			printf("%.12s not measured (one GPU)\n", fmt);                     \
	} while (0)
	printf("device      %s x %d\n", json_string_value(json_object_get(m, "device")),
	       (int)json_integer_value(json_object_get(m, "gpus")));
	printf("HBM copy    %8.1f GB/s (read + write)\n", G("hbm_copy_bw") / 1e9);
	P("peer, CE    %8.1f GB/s one way, GPU 0 -> 1\n", "p2p_ce_bw");
	P("peer, SM    %8.1f GB/s one way (SM stores)\n", "p2p_sm_bw");
	P("peer, SM ld %8.1f GB/s one way (SM loads: GPU 0 reads GPU 1)\n", "p2p_sm_load_bw");
	P("peer, both  %8.1f GB/s (both ways at once, copy engine)\n", "p2p_bidir_bw");
	P("both, SM    %8.1f GB/s (both ways at once, SM stores)\n", "p2p_bidir_sm_bw");
	P("all-to-all  %8.1f GB/s received per GPU (%d GPUs)\n", "alltoall_rx_bw",
	  (int)json_integer_value(json_object_get(m, "alltoall_gpus")));
	printf("bf16 GEMM   %8.1f TFLOP/s (8192^3)\n", G("gemm_bf16_flops") / 1e12);
	json_t *rt = json_object_get(m, "flag_round_trip_us");
	if (json_is_number(rt))
		printf("flag trip   %8.2f us (GPU 0 -> 1 -> 0, device-side)\n", json_number_value(rt));
	json_t *ec = json_object_get(m, "empty_call_us");
	if (json_is_number(ec))
		printf("empty call  %8.2f us (the timed loop's floor: events around an empty kernel)\n",
		       json_number_value(ec));
#undef G
#undef P
	char *path = hw_local_path();
	char *dir = xstrdup(path);
	*strrchr(dir, '/') = 0;
	int bad = mkdir_p(dir) < 0 || json_write_file(path, hw) < 0;
	if (!bad)
		printf("stored as hardware 'local': %s\n", path);
	if (json_path && json_write_file(json_path, hw) < 0)
		bad = 1;
	free(dir);
	free(path);
	json_decref(hw);
	return bad ? PKB_EXIT_INPUT : 0;
}
