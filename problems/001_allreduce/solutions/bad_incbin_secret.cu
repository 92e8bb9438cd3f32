/*
 * 001_allreduce, known-bad (issue 36, a file read at compile time): an
 * assembler .incbin puts /etc/passwd (it could be ~/.ssh/id_rsa or a key
 * file) into the object, where pkb_run could print it and the compile log
 * or the rank's log could carry it back. nvcc runs under Landlock, reading
 * only the source's folder, pkb's headers, the toolkit and the compiler's
 * system folders: compile_error. Computes nothing.
 * pkb-expect: compile_error
 */
#include "pkb.h"

PKB_SOLUTION;

__asm__(".section .rodata\n.global pkb_leaked\npkb_leaked:\n.incbin \"/etc/passwd\"\n"
	".byte 0\n.text\n");

extern "C" int pkb_init(pkb_ctx *ctx) { (void)ctx; return 0; }
extern "C" int pkb_run(pkb_ctx *ctx) { (void)ctx; return 0; }
extern "C" int pkb_fini(pkb_ctx *ctx) { (void)ctx; return 0; }
