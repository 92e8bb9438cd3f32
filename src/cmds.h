/*
 * cmds.h -- one function per subcommand, each in cmd_<verb>.c; the table
 * that dispatches them is in main.c.
 */
#ifndef PKB_CMDS_H
#define PKB_CMDS_H

#include "opts.h"   /* defines: struct opt */

int cmd_list(int argc, char **argv);
int cmd_show(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_build(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_roofline(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);
int cmd_calibrate_child(int argc, char **argv);   /* internal: the measuring child */
int cmd_doctor(int argc, char **argv);
int cmd_rank(int argc, char **argv);    /* internal: one rank process, the judge of a GPU */
int cmd_sol(int argc, char **argv);     /* internal: one solution process (solhost.c) */
int cmd_probe(int argc, char **argv);   /* internal: the GPU probe of doctor */
int cmd_hold(int argc, char **argv);
int cmd_prompt(int argc, char **argv);
int cmd_generate(int argc, char **argv);
int cmd_agent(int argc, char **argv);
int cmd_sweep(int argc, char **argv);
int cmd_score(int argc, char **argv);
int cmd_report(int argc, char **argv);
int score_parse_p(const char *list, double *p, int *np);   /* cmd_score.c: 0,0.5,1,1.5,2 + LIST */
/* the options score and report share (opts.h): -p/--p LIST, -k/--k K;
 * score_opt handles one: 1 taken, 0 not one of them, -1 bad (after error()) */
extern const struct opt score_opts_pk[];
int score_opt(int c, const char *arg, const char **plist, int *nk);

#endif
