/*
 * exitcode.h -- the exit codes of pkb (docs/EXIT_CODES.md is the table users
 * read; keep the two in step). Also the outcome categories of an eval, which
 * map one to one onto exit codes.
 */
#ifndef PKB_EXITCODE_H
#define PKB_EXITCODE_H

enum pkb_exit {
	PKB_EXIT_OK = 0,
	PKB_EXIT_INPUT = 1,        /* bad input: unknown problem, unreadable file */
	PKB_EXIT_USAGE = 2,        /* bad command line */
	PKB_EXIT_MISMATCH = 3,     /* the candidate's output is wrong */
	PKB_EXIT_COMPILE = 4,      /* the candidate does not compile */
	PKB_EXIT_REFUSED = 5,      /* wrong ABI, or a symbol its backend forbids */
	PKB_EXIT_RUNTIME = 6,      /* CUDA/NCCL error, crash, OOM */
	PKB_EXIT_TIMEOUT = 7,      /* a phase passed its deadline; a node was lost */
	PKB_EXIT_FLAGGED = 8,      /* timing not trustworthy (escaped work ...) */
	PKB_EXIT_ENV = 9,          /* this machine cannot run it (no GPU ...), nodes could not meet */
	PKB_EXIT_PROVIDER = 10,    /* generate: the model's API refused (401/403/404/400) */
	PKB_EXIT_INCOMPLETE = 11,  /* generate: samples still missing after the retries */
	PKB_EXIT_NO_PASS = 12,     /* agent: the budget ran out without a correct candidate */
	PKB_EXIT_INTERNAL = 70,    /* a harness bug */
};

/* Outcome of one solution run or eval, in order of precedence. */
enum pkb_outcome {
	OUT_PASS = 0,
	OUT_MISMATCH,
	OUT_COMPILE_ERROR,
	OUT_LOAD_REFUSED,
	OUT_RUNTIME_ERROR,
	OUT_TIMEOUT,
	OUT_FLAGGED,
	OUT_ENV_ERROR,
	OUT_INTERNAL,
	OUT_COUNT
};

const char *outcome_name(enum pkb_outcome o);
int outcome_parse(const char *s);   /* -1 if unknown */
int outcome_exit_code(enum pkb_outcome o);

#endif
