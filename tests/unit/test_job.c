/*
 * test_job.c -- eval's command line as one table reads it and one function
 * writes it (job.c: job_opt, job_opts_argv): every option eval takes,
 * parsed, written back and parsed again, gives the same job; defaults are
 * left out; what eval refuses is refused (issue 39: sweep and agent had
 * copies that drifted, --gpus 64 and any dtype passed on).
 */
#define _GNU_SOURCE
#include "job.h"
#include "opts.h"
#include "t.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const struct opt *const tables[] = { job_opts_eval, job_opts_dims, job_opts_json,
					    job_opts_launch, NULL };

/* eval's parse of argv (after "eval ID FILE"): 0, or -1 when refused */
static int parse(struct job_opts *o, char **argv)
{
	int argc = 0;
	while (argv[argc])
		argc++;
	job_opts_init(o);
	o->trials = 5;
	struct opts_parser P;
	opts_init(&P, tables);
	opterr = 0;
	int c;
	while ((c = opts_next(&P, argc, argv)) != -1)
		if (job_opt(o, c, optarg) != 1)
			return -1;
	return 0;
}

static int same_str(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

static int same(const struct job_opts *a, const struct job_opts *b)
{
	return same_str(a->backend, b->backend) && a->world == b->world && a->m == b->m &&
	       a->n == b->n && a->dtype == b->dtype && a->seed == b->seed &&
	       a->trials == b->trials && a->atol == b->atol && a->rtol == b->rtol &&
	       a->measure_perf == b->measure_perf && a->warmup == b->warmup &&
	       a->iters == b->iters && a->timing == b->timing && a->timing_given == b->timing_given &&
	       same_str(a->trace_path, b->trace_path) && same_str(a->hw, b->hw) &&
	       same_str(a->json_path, b->json_path) && same_str(a->log_dir, b->log_dir) &&
	       a->keep_logs == b->keep_logs && a->no_sandbox == b->no_sandbox &&
	       same_str(a->arch, b->arch) &&
	       !memcmp(a->deadline_s, b->deadline_s, sizeof a->deadline_s) &&
	       a->compile_s == b->compile_s && a->device_timeout_ms == b->device_timeout_ms &&
	       a->quiet == b->quiet && same_str(a->launcher, b->launcher) &&
	       a->rendezvous_s == b->rendezvous_s && same_str(a->seed_file, b->seed_file) &&
	       same_str(a->ref_cache, b->ref_cache);
}

/* argv -> job -> argv -> job: the same job; the words written into *out */
static int round_trip(char **argv, struct strvec *out)
{
	struct job_opts a, b;
	if (parse(&a, argv) < 0)
		return 0;
	struct strvec w = STRVEC_INIT;
	strvec_push(&w, "eval");
	job_opts_argv(&a, &w);
	int ok = parse(&b, w.v) == 0 && same(&a, &b);
	strvec_free(out);
	*out = w;
	return ok;
}

static char *joined(const struct strvec *w)
{
	struct strbuf b = STRBUF_INIT;
	for (size_t i = 1; i < w->n; i++)
		strbuf_addf(&b, "%s%s", i > 1 ? " " : "", w->v[i]);
	return strbuf_take(&b);
}

#define ARGV(...) ((char *[]){ "eval", __VA_ARGS__, NULL })

int main(void)
{
	setenv("PKB_ROOT", ".", 0);
	struct strvec w = STRVEC_INIT;
	char *j;

	/* --seed-file is passed on as the file, never as the seed it holds;
	 * --ref-cache as an absolute path */
	char seed_path[] = "/tmp/pkb-test-job-seed-XXXXXX";
	int sfd = mkstemp(seed_path);
	CHECK(sfd >= 0 && write(sfd, "99\n", 3) == 3 && close(sfd) == 0);
	CHECK(round_trip(ARGV("--seed-file", seed_path, "--ref-cache", "/var/tmp/rc"), &w));
	j = joined(&w);
	CHECKF(strstr(j, "--seed-file /tmp/pkb-test-job-seed-") && !strstr(j, "99") &&
	       strstr(j, "--ref-cache /var/tmp/rc"), "%s", j);
	free(j);
	struct job_opts so;
	CHECK(parse(&so, ARGV("--seed-file", seed_path)) == 0 && so.seed == 99 && !so.seed_drawn);
	CHECK(parse(&so, ARGV("--ref-cache", "rel/rc")) == 0 && so.ref_cache[0] == '/' &&
	      strstr(so.ref_cache, "/rel/rc"));
	unlink(seed_path);

	/* nothing given: --trials alone (eval's 5, not job_opts_init's 1) */
	CHECK(round_trip((char *[]){ "eval", NULL }, &w));
	CHECKF(!strcmp(j = joined(&w), "--trials 5"), "%s", j);
	free(j);

	/* defaults said explicitly are left out, as eval would take them */
	CHECK(round_trip(ARGV("-g", "4", "--m", "1024", "-d", "bf16", "-b", "cuda", "--warmup", "500",
			      "--iters", "100", "--deadline", "trial=60"), &w));
	CHECKF(!strcmp(j = joined(&w), "--gpus 4 --trials 5 --measure-perf"), "%s", j);
	free(j);

	/* every option eval takes */
	CHECK(round_trip(ARGV("-b", "nccl-device", "-t", "3", "--atol", "0.1", "--rtol", "1e-3",
			      "-g", "8", "--m", "512", "--n", "2048", "-d", "fp16", "-j", "r.json",
			      "--seed", "7", "--warmup", "0", "--iters", "20", "--timing", "graph",
			      "--trace", "t.json", "--hw", "h200_8", "--deadline", "trial=1.5",
			      "--deadline", "init=0.001", "--deadline", "compile=30",
			      "--deadline", "rendezvous=9", "--device-timeout", "250",
			      "--log-dir", "L", "--keep-logs", "--arch", "sm_100a", "--no-sandbox",
			      "--launcher", "slurm", "-q"), &w));
	CHECKF(!strcmp(j = joined(&w),
		       "--backend nccl-device --gpus 8 --m 512 --n 2048 --dtype fp16 --trials 3 "
		       "--atol 0.1 --rtol 0.001 --seed 7 --measure-perf --warmup 0 --iters 20 "
		       "--timing graph --trace t.json --hw h200_8 --deadline init=0.001 "
		       "--deadline trial=1.5 --deadline compile=30 --deadline rendezvous=9 "
		       "--device-timeout 250 --log-dir L --arch sm_100a --launcher slurm "
		       "--keep-logs --no-sandbox -q --json r.json"), "%s", j);
	free(j);
	/* a tolerance that %.15g would round keeps every digit */
	CHECK(round_trip(ARGV("--atol", "0.30000000000000004"), &w));
	CHECKF(strstr(j = joined(&w), "--atol 0.30000000000000004"), "%s", j);
	free(j);

	/* typed once (issue 39): --dtype by any name dtype.h knows comes back
	 * as ours; --timing warm, the default, is said again when given (the
	 * agent's run.json records a given timing) */
	CHECK(round_trip(ARGV("-d", "half", "--timing", "warm"), &w));
	CHECKF(!strcmp(j = joined(&w), "--dtype fp16 --trials 5 --measure-perf --timing warm"),
	       "%s", j);
	free(j);

	/* what eval refuses, the one table refuses wherever it is given */
	struct job_opts o;
	CHECK(parse(&o, ARGV("-g", "64")) < 0);
	CHECK(parse(&o, ARGV("-g", "63")) == 0 && o.world == 63);
	CHECK(parse(&o, ARGV("-d", "int32")) < 0);
	CHECK(parse(&o, ARGV("-b", "nosuch")) < 0);
	CHECK(parse(&o, ARGV("-t", "3x")) < 0);
	CHECK(parse(&o, ARGV("--timing", "hot")) < 0);
	CHECK(parse(&o, ARGV("--deadline", "nophase=3")) < 0);
	CHECK(parse(&o, ARGV("--hw", "nosuch_machine")) < 0);
	strvec_free(&w);
	return t_done("test_job");
}
