/*
 * prompt_hw.c -- which machine a prompt describes, when --hw does not say:
 * the run's, else this machine's as `pkb doctor` sees it (prompt.h). Apart
 * from prompt.c because it runs the GPU probe (`pkb __probe`, a child: the
 * parent never touches CUDA), which only pkb itself can do; the choice
 * from a GPU name, prompt_hw_pick, is prompt.c's and unit-tested.
 */
#include "job.h"      /* defines: gpu_count, gpu_probe */
#include "prompt.h"
#include "util.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* the first GPU's name, as doctor's probe reports it; NULL if it failed */
static char *probe_gpu_name(void)
{
	int rc;
	json_t *pr = gpu_probe(&rc);
	const char *name = json_string_value(
		json_object_get(json_array_get(json_object_get(pr, "gpus"), 0), "name"));
	char *r = name ? xstrdup(name) : NULL;
	json_decref(pr);
	return r;
}

void prompt_hw_resolve(struct prompt_opts *o, const char *from_run)
{
	if (o->hw) {
		o->hw_source = "--hw";
		return;
	}
	if (from_run) {
		snprintf(o->hw_buf, sizeof o->hw_buf, "%s", from_run);
		o->hw = o->hw_buf;
		o->hw_source = "run.json";
		return;
	}
	char why[300] = "";
	int g = gpu_count();
	if (g > 0) {
		char *dev = probe_gpu_name();
		if (dev && prompt_hw_pick(dev, o->world, o->hw_buf, sizeof o->hw_buf, why,
					  sizeof why) == 0) {
			free(dev);
			o->hw = o->hw_buf;
			o->hw_source = "detected";
			return;
		}
		if (!dev)
			snprintf(why, sizeof why, "the GPU probe failed");
		free(dev);
	} else {
		snprintf(why, sizeof why, "no GPU on this machine");
	}
	snprintf(o->hw_buf, sizeof o->hw_buf, "%s", PROMPT_HW_DEFAULT);
	o->hw = o->hw_buf;
	o->hw_source = "default";
	warning("%s: the prompt describes %s, the default; --hw NAME names the machine that "
		"will score it", why, o->hw);
}

json_t *prompt_hw_resume(struct prompt_opts *o, const char *run_dir, char *hw_source, size_t n)
{
	char *rj = xstrfmt("%s/run.json", run_dir);
	json_t *old = access(rj, F_OK) == 0 ? json_load_file(rj, 0, NULL) : NULL;
	free(rj);
	prompt_hw_resolve(o, json_str(json_object_get(old, "args"), "hw", NULL));
	/* the way the run's machine was first chosen stays its record */
	const char *old_src = json_str(old, "hw_source", NULL);
	snprintf(hw_source, n, "%s", !strcmp(o->hw_source, "run.json") && old_src ? old_src
										 : o->hw_source);
	return old;
}
