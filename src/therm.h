/*
 * therm.h -- the judge's look at its GPU's temperature and SM clock
 * (docs/TIMING.md, "Heat"). A candidate that runs a power virus in its
 * pkb_fini leaves the GPU hot for the reference, timed after it, whose
 * clocks then boost less: a slower reference, a larger speedup. The judge
 * reads the temperature as each solution's warmup begins, waits before the
 * reference's until the GPU is back near where the candidate's began, and
 * every perf record carries what it read.
 *
 * Read through the driver's NVML, loaded at run time: pkb links no NVML,
 * and without it (no driver library, a GPU it does not know) nothing is
 * read and the records say nothing of heat.
 */
#ifndef PKB_THERM_H
#define PKB_THERM_H

#include <stddef.h>

/* degrees above the candidate's starting temperature the reference may
 * start at, and how long the judge waits for that at most */
#define THERM_SLACK_C 3
#define THERM_WAIT_S 20.0
/* degrees a solution's pkb_fini and exit may raise the GPU's temperature:
 * an honest teardown frees memory in well under a second, so more is work
 * run after the last timed call to heat the GPU */
#define THERM_FINI_RISE_C 5

struct therm;   /* one GPU */

/* the GPU at PCI bus id `bus` (cudaDeviceGetPCIBusId's form): NULL with
 * err when NVML cannot be loaded or does not know it */
struct therm *therm_open(const char *bus, char *err, size_t n);
/* its temperature (C) and SM clock (MHz) now: 0, or -1 */
int therm_read(struct therm *t, int *temp_c, int *sm_mhz);
void therm_close(struct therm *t);

/* Wait until read(arg) gives at most `target` degrees, polling every
 * `poll_s`, for at most `limit_s`: the seconds waited, the last reading in
 * *now (-1 when a read failed: then it stops at once). `read` returns the
 * temperature, or -1. */
double therm_wait(int (*read)(void *arg), void *arg, int target, double limit_s,
		  double poll_s, int *now);

#endif
