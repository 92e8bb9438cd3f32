/*
 * 001_allreduce, known-bad (issue 36, the solution process's sandbox): keeps
 * results across evaluations in POSIX shared memory (/dev/shm, a tmpfs that
 * outlives every process): pkb_init opens or creates a memo segment there
 * and returns 1 when it cannot. A solution process without NCCL may write
 * only the GPU's device nodes in /dev, so Landlock refuses the open and the
 * init's non-zero return is the verdict. (A rank whose job has NCCL keeps
 * /dev/shm for NCCL's segments: there the memo opens, nothing is computed,
 * and the candidate ends as a mismatch.) The input seed is fresh every
 * evaluation, so a memo of outputs could only pay off with its inputs'
 * checksums as keys; it is the channel itself that must be closed.
 * pkb-expect: runtime_error
 * pkb-caught-by: sandbox
 */
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
#include "pkb.h"

PKB_SOLUTION;

#define MEMO_BYTES (1 << 20)

extern "C" int pkb_init(pkb_ctx *ctx)
{
	(void)ctx;
	int fd = shm_open("/pkb-memo-001", O_RDWR | O_CREAT, 0600);
	if (fd < 0)
		return 1;
	int bad = ftruncate(fd, MEMO_BYTES) != 0;
	void *memo = bad ? MAP_FAILED : mmap(NULL, MEMO_BYTES, PROT_READ | PROT_WRITE,
					      MAP_SHARED, fd, 0);
	close(fd);
	if (memo == MAP_FAILED)
		return 1;
	/* a later evaluation would look its inputs up here */
	((char *)memo)[0] = 1;
	munmap(memo, MEMO_BYTES);
	return 0;
}
extern "C" int pkb_run(pkb_ctx *ctx)
{
	(void)ctx;
	return 0;
}
extern "C" int pkb_fini(pkb_ctx *ctx) { (void)ctx; return 0; }
