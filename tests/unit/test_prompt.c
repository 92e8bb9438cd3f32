/*
 * test_prompt.c -- templates and prompts (src/prompt.c): slot filling and
 * its errors, and a prompt assembled from the real repository.
 */
#include "prompt.h"
#include "problem.h"
#include "t.h"

#include <stdlib.h>
#include <string.h>

static const char *const names[] = { "a", "b", "task" };
static const char *const values[] = { "AA", "", "T{{x}}" };

static int fill(const char *tmpl, const char *req, char **sys, char **usr, char *err)
{
	const char *r[] = { req };
	return prompt_fill(tmpl, names, values, 3, r, req ? 1 : 0, sys, usr, err, 200);
}

int main(void)
{
	char *s = NULL, *u = NULL, err[200];
	CHECK(fill("# comment {{nope}}\n=== system ===\nS {{a}}\n=== user ===\n{{a}}{{b}}|{{task}}\n", "task",
		   &s, &u, err) == 0);
	/* the comment above the sections is not sent, its slot not checked; a
	 * value's own braces are not slots */
	CHECK(s && !strcmp(s, "S AA\n") && u && !strcmp(u, "AA|T{{x}}\n"));
	free(s);
	free(u);
	CHECK(fill("=== system ===\n=== user ===\n{{zzz}}\n", NULL, &s, &u, err) < 0);
	CHECK(strstr(err, "unknown slot '{{zzz}}'") && !s && !u);
	CHECK(fill("=== system ===\n=== user ===\n{{a}\n", NULL, &s, &u, err) < 0);
	CHECK(strstr(err, "never closed"));
	CHECK(fill("=== system ===\nx\n=== user ===\n{{a}}\n", "task", &s, &u, err) < 0);
	CHECK(strstr(err, "never uses the slot '{{task}}'"));
	CHECK(fill("=== user ===\n{{a}}\n=== system ===\n", NULL, &s, &u, err) < 0);
	CHECK(strstr(err, "=== system ==="));
	CHECK(fill("{{a}}", NULL, &s, &u, err) < 0);

	struct prompt_opts o = { .p = problem_find("3"), .backend = "cuda", .world = 4, .m = 64,
				 .n = 32, .dtype = PKB_FP16, .hw = "h200_8" };
	struct prompt pr, pr2;
	CHECK(prompt_build(&o, &pr, err, sizeof err) == 0);
	CHECK(pr.user && strstr(pr.user, "003_broadcast") && strstr(pr.user, "fp16 (64, 32)"));
	CHECK(strstr(pr.user, "H200") && strstr(pr.user, "pkb_init") && !strstr(pr.user, "{{"));
	CHECK(pr.example && strstr(pr.example, "001_allreduce/solutions/ok_"));
	CHECK(strlen(pr.sha256) == 64 && strlen(pr.template_sha256) == 64);
	CHECK(prompt_build(&o, &pr2, err, sizeof err) == 0);
	CHECK(!strcmp(pr.sha256, pr2.sha256));
	prompt_free(&pr2);
	o.m = 128;   /* another instance, another prompt, the same template */
	CHECK(prompt_build(&o, &pr2, err, sizeof err) == 0);
	CHECK(strcmp(pr.sha256, pr2.sha256) && !strcmp(pr.template_sha256, pr2.template_sha256));
	prompt_free(&pr2);
	prompt_free(&pr);
	o.backend = "nvshmem";
	CHECK(prompt_build(&o, &pr, err, sizeof err) < 0 && strstr(err, "nvshmem") &&
	      strstr(err, "parallelkittens, triton"));
	/* parallelkittens: TK's part of the prompt and a TK example, whose
	 * "kittens.cuh" does not keep it from being shown whole */
	o.backend = "parallelkittens";
	CHECK(prompt_build(&o, &pr, err, sizeof err) == 0);
	CHECK(strstr(pr.user, "backend parallelkittens") && strstr(pr.user, "pgl<gl<T") &&
	      strstr(pr.user, "pkb_init") && strstr(pr.system, "ThunderKittens"));
	CHECK(pr.example && strstr(pr.example, "001_allreduce/solutions/ok_tk_") &&
	      strstr(pr.user, "#include \"kittens.cuh\""));
	prompt_free(&pr);
	/* for 001 itself the example is another problem's TK candidate */
	o.p = problem_find("1");
	CHECK(prompt_build(&o, &pr, err, sizeof err) == 0);
	CHECK(pr.example && !strstr(pr.example, "001_allreduce") && strstr(pr.example, "ok_tk_"));
	prompt_free(&pr);
	o.p = problem_find("3");
	/* triton: the original's Python solution format, no C ABI */
	o.backend = "triton";
	CHECK(prompt_build(&o, &pr, err, sizeof err) == 0);
	CHECK(strstr(pr.user, "def solution(") && strstr(pr.user, "symm_mem.rendezvous") &&
	      strstr(pr.user, "```python") && !strstr(pr.user, "PKB_ABI_VERSION") &&
	      !strstr(pr.user, "{{"));
	CHECK(pr.example && strstr(pr.example, "001_allreduce/solutions/ok_triton_") &&
	      strstr(pr.user, "def _sum_ranks"));
	CHECK(prompt_backend_valid("triton") && !strcmp(prompt_backend_ext("triton"), "py") &&
	      !strcmp(prompt_backend_ext("parallelkittens"), "cu") && !prompt_backend_valid("mpi"));
	prompt_free(&pr);
	o.backend = "cuda";
	/* -d is parsed once, where it is read: an unknown name never reaches a build */
	CHECK(prompt_opt(&o, 'd', "fp64x") < 0 && o.dtype == PKB_FP16);
	CHECK(prompt_opt(&o, 'd', "int32") < 0 && o.dtype == PKB_FP16);
	CHECK(prompt_opt(&o, 'd', "bf16") == 1 && o.dtype == PKB_BF16);
	o.world = 3;   /* 003 takes any W >= 2; an odd one is fine */
	o.hw = "nosuch";
	CHECK(prompt_build(&o, &pr, err, sizeof err) < 0);

	/* the machine of this GPU for W GPUs (issue 38): what eval's roofline
	 * picks on it, so that the prompt and the feedback agree */
	char hw[32], why[300];
	CHECK(prompt_hw_pick("NVIDIA H200", 4, hw, sizeof hw, why, sizeof why) == 0 &&
	      !strcmp(hw, "h200_4"));
	CHECK(prompt_hw_pick("NVIDIA H200", 8, hw, sizeof hw, why, sizeof why) == 0 &&
	      !strcmp(hw, "h200_8"));
	CHECK(prompt_hw_pick("NVIDIA H100 80GB HBM3", 2, hw, sizeof hw, why, sizeof why) == 0 &&
	      !strcmp(hw, "h100_8"));
	CHECK(prompt_hw_pick("NVIDIA B200", 8, hw, sizeof hw, why, sizeof why) == 0 &&
	      !strcmp(hw, "b200_8"));
	CHECK(prompt_hw_pick("NVIDIA A100-SXM4-80GB", 4, hw, sizeof hw, why, sizeof why) < 0 &&
	      strstr(why, "A100"));
	CHECK(prompt_hw_pick(NULL, 4, hw, sizeof hw, why, sizeof why) < 0);
	/* another machine, another prompt */
	o.hw = "h100_8";
	CHECK(prompt_build(&o, &pr, err, sizeof err) == 0);
	o.hw = "h200_4";
	CHECK(prompt_build(&o, &pr2, err, sizeof err) == 0);
	CHECK(strcmp(pr.sha256, pr2.sha256) && strstr(pr2.user, "hw/h200_4.json") &&
	      !strstr(pr2.user, "hw/h100_8.json"));
	prompt_free(&pr);
	prompt_free(&pr2);
	return t_done("test_prompt");
}
