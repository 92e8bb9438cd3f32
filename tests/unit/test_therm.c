/*
 * test_therm.c -- the judge's wait for a hot GPU to cool (src/therm.c):
 * at or below the target it does not wait; above, it polls until the
 * target or the limit, whichever comes first; a failed read ends it at
 * once; and where NVML cannot be had, opening a GPU says why.
 */
#include "../../src/therm.h"
#include "t.h"

#include <string.h>

/* a GPU that cools one degree per reading, or fails from a reading on */
struct fake { int temp, reads, fail_at; };

static int fake_read(void *arg)
{
	struct fake *f = arg;
	f->reads++;
	if (f->fail_at && f->reads >= f->fail_at)
		return -1;
	return f->temp--;
}

int main(void)
{
	int now;
	/* within the target: one reading, no wait */
	struct fake a = { .temp = 40 };
	double w = therm_wait(fake_read, &a, 43, 5.0, 0.001, &now);
	CHECK(w == 0 && now == 40 && a.reads == 1);
	/* above: polls until it reads the target */
	struct fake b = { .temp = 50 };
	w = therm_wait(fake_read, &b, 43, 5.0, 0.001, &now);
	CHECKF(now == 43 && b.reads == 8 && w > 0 && w < 5.0, "now %d reads %d w %f", now, b.reads, w);
	/* never cool enough: gives up after the limit, still above */
	struct fake c = { .temp = 1000 };
	w = therm_wait(fake_read, &c, 43, 0.05, 0.005, &now);
	CHECKF(now > 43 && w >= 0.05 && w < 1.0, "now %d w %f", now, w);
	/* a read that fails: ends at once, -1 */
	struct fake d = { .temp = 60, .fail_at = 3 };
	w = therm_wait(fake_read, &d, 43, 5.0, 0.001, &now);
	CHECK(now == -1 && d.reads == 3 && w < 1.0);

	/* a bus id no GPU has (or no NVML here): no handle, and a reason */
	char err[300] = "";
	struct therm *t = therm_open("ffff:ff:1f.7", err, sizeof err);
	CHECKF(!t && *err, "%s", err);
	int tc, mhz;
	CHECK(therm_read(NULL, &tc, &mhz) < 0);
	therm_close(NULL);
	return t_done("test_therm");
}
