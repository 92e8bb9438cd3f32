/*
 * prompt.h -- the prompt of one problem instance for one backend: a
 * template from prompts/ (plain text, a system and a user section, named
 * slots {{task}} ...) filled with the problem's task, reference, the ABI
 * headers, a known-good example of another problem, shapes, tolerance,
 * machine numbers and roofline bound (docs/GENERATE.md).
 */
#ifndef PKB_PROMPT_H
#define PKB_PROMPT_H

#include "opts.h"      /* defines: struct opt */

#include <stddef.h>
#include "pkb_problem.h"   /* defines: struct pkb_problem */

struct prompt_opts {
	const struct pkb_problem *p;
	const char *backend;        /* PROMPT_BACKENDS */
	int world;
	long long m, n;
	pkb_dtype dtype;            /* -d, parsed once (prompt_opt) */
	const char *hw;             /* hw/NAME.json; NULL: prompt_hw_resolve's */
	const char *hw_source;      /* how hw was chosen: --hw, run.json, detected, default */
	char hw_buf[32];
	const char *template_path;  /* NULL: prompts/<backend>.txt */
};

/* The options of the instance a prompt is for (opts.h): --backend, -d,
 * -g, --m, --n, --hw, --template; shared by prompt, generate and agent.
 * prompt_opt handles one of them: 1, 0 when not one, -1 bad (after
 * error()). */
enum { PROMPT_OPT_BACKEND = 1100, PROMPT_OPT_M, PROMPT_OPT_N, PROMPT_OPT_HW, PROMPT_OPT_TEMPLATE };
extern const struct opt prompt_opts_table[];
/* the backends with a prompt (prompts/<backend>.txt; docs/BACKENDS.md) */
#define PROMPT_BACKENDS "cuda, nccl-device, parallelkittens, triton"
int prompt_backend_valid(const char *backend);
/* the extension of the backend's candidate file: "cu", or "py" (triton) */
const char *prompt_backend_ext(const char *backend);
int prompt_opt(struct prompt_opts *o, int c, const char *arg);
#define PROMPT_OPTS_DEFAULTS { .backend = "cuda", .world = 4, .m = 1024, .n = 1024, \
			       .dtype = PKB_BF16 }

/* The machine a prompt describes when none can be told (docs/GENERATE.md). */
#define PROMPT_HW_DEFAULT "h100_8"
/* The nominal machine of a GPU named `device` ("NVIDIA H200") for W GPUs,
 * as eval's roofline picks it (hw_for_device): 0 with its name, or -1 when
 * pkb has no description of that GPU, with the reason in why. */
int prompt_hw_pick(const char *device, int world, char *name, size_t n, char *why, size_t wn);
/* Which machine the prompt describes (issue 38: always h100_8 before):
 * --hw when given (o->hw set), else `from_run` (the hw of the run being
 * resumed, or NULL), else this machine as `pkb doctor` sees it (its GPU
 * count, then the first GPU's name from `pkb __probe`, then
 * prompt_hw_pick), else PROMPT_HW_DEFAULT with a one-line warning on
 * stderr saying why. Sets o->hw and o->hw_source (src/prompt_hw.c: pkb
 * only, it runs the probe). */
void prompt_hw_resolve(struct prompt_opts *o, const char *from_run);
/* For generate and agent, which go on in a run: prompt_hw_resolve with the
 * run's own machine (RUN/run.json's args.hw) as from_run, and into
 * hw_source how the run's machine was first chosen: run.json's hw_source
 * when the machine is the run's, else o->hw_source. Returns the run.json
 * read (NULL: none), for what else the caller keeps of it. */
struct json_t;
struct json_t *prompt_hw_resume(struct prompt_opts *o, const char *run_dir, char *hw_source,
				size_t n);

struct prompt {
	char *system, *user;
	char *template_path;
	char template_sha256[65];   /* of the template file's bytes */
	char sha256[65];            /* of system, a NUL byte, then user */
	char *example;              /* the example's path, or NULL when none */
};

/* 0, or -1 with a one-line reason in err */
int prompt_build(const struct prompt_opts *o, struct prompt *out, char *err, size_t n);
void prompt_free(struct prompt *pr);

/* Fill the slots of a template text: {{name}} becomes values[i] where
 * names[i] is name. An unknown slot, or a name in `required` that the
 * template never uses, is an error. The system section is what follows a
 * line "=== system ===", the user section what follows "=== user ==="
 * (lines before the first are the template's own comment). 0 or -1. */
int prompt_fill(const char *tmpl, const char *const *names, const char *const *values,
		int n_slots, const char *const *required, int n_required, char **system,
		char **user, char *err, size_t n);

#endif
