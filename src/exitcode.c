/*
 * exitcode.c -- outcome names and their exit codes (docs/EXIT_CODES.md).
 */
#include "exitcode.h"

#include <string.h>

static const struct {
	const char *name;
	int code;
} table[OUT_COUNT] = {
	[OUT_PASS] = { "pass", PKB_EXIT_OK },
	[OUT_MISMATCH] = { "mismatch", PKB_EXIT_MISMATCH },
	[OUT_COMPILE_ERROR] = { "compile_error", PKB_EXIT_COMPILE },
	[OUT_LOAD_REFUSED] = { "load_refused", PKB_EXIT_REFUSED },
	[OUT_RUNTIME_ERROR] = { "runtime_error", PKB_EXIT_RUNTIME },
	[OUT_TIMEOUT] = { "timeout", PKB_EXIT_TIMEOUT },
	[OUT_FLAGGED] = { "flagged", PKB_EXIT_FLAGGED },
	[OUT_ENV_ERROR] = { "env_error", PKB_EXIT_ENV },
	[OUT_INTERNAL] = { "internal_error", PKB_EXIT_INTERNAL },
};

const char *outcome_name(enum pkb_outcome o)
{
	return (unsigned)o < OUT_COUNT ? table[o].name : "?";
}

int outcome_parse(const char *s)
{
	for (int o = 0; o < OUT_COUNT; o++)
		if (!strcmp(s, table[o].name))
			return o;
	return -1;
}

int outcome_exit_code(enum pkb_outcome o)
{
	return (unsigned)o < OUT_COUNT ? table[o].code : PKB_EXIT_INTERNAL;
}
