/*
 * therm.c -- see therm.h.
 */
#define _GNU_SOURCE
#include "therm.h"
#include "util.h"   /* defines: xcalloc, now_ns */

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* the few NVML entry points used, declared from NVIDIA's NVML API
 * reference (the toolkit here ships no nvml.h): every call returns an
 * nvmlReturn_t, 0 for success; a device is an opaque handle */
typedef int nvml_ret;
typedef struct nvml_device *nvml_device;
enum { NVML_TEMPERATURE_GPU = 0, NVML_CLOCK_SM = 1 };

struct therm {
	nvml_device dev;
	nvml_ret (*temperature)(nvml_device, int sensor, unsigned *temp);
	nvml_ret (*clock)(nvml_device, int type, unsigned *mhz);
};

struct therm *therm_open(const char *bus, char *err, size_t n)
{
	static void *dl;
	static nvml_ret (*init)(void), (*by_bus)(const char *, nvml_device *);
	static const char *(*error_string)(nvml_ret);
	if (!dl) {
		if (!(dl = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL))) {
			snprintf(err, n, "cannot load NVML: %s", dlerror());
			return NULL;
		}
		*(void **)&init = dlsym(dl, "nvmlInit_v2");
		*(void **)&by_bus = dlsym(dl, "nvmlDeviceGetHandleByPciBusId_v2");
		*(void **)&error_string = dlsym(dl, "nvmlErrorString");
	}
	struct therm *t = xcalloc(1, sizeof *t);
	*(void **)&t->temperature = dlsym(dl, "nvmlDeviceGetTemperature");
	*(void **)&t->clock = dlsym(dl, "nvmlDeviceGetClockInfo");
	if (!init || !by_bus || !error_string || !t->temperature || !t->clock) {
		snprintf(err, n, "NVML lacks an entry point pkb reads");
		free(t);
		return NULL;
	}
	nvml_ret r = init();
	if (r == 0)
		r = by_bus(bus, &t->dev);
	if (r != 0) {
		snprintf(err, n, "NVML: %s (device %s)", error_string(r), bus);
		free(t);
		return NULL;
	}
	return t;
}

int therm_read(struct therm *t, int *temp_c, int *sm_mhz)
{
	unsigned c = 0, mhz = 0;
	if (!t || t->temperature(t->dev, NVML_TEMPERATURE_GPU, &c) != 0 ||
	    t->clock(t->dev, NVML_CLOCK_SM, &mhz) != 0)
		return -1;
	*temp_c = (int)c;
	*sm_mhz = (int)mhz;
	return 0;
}

void therm_close(struct therm *t)
{
	free(t);   /* NVML stays loaded and initialised for the process */
}

double therm_wait(int (*read)(void *arg), void *arg, int target, double limit_s,
		  double poll_s, int *now)
{
	uint64_t t0 = now_ns();
	double waited = 0;
	for (;;) {
		*now = read(arg);
		if (*now < 0 || *now <= target || waited >= limit_s)
			return waited;
		struct timespec ts = { (time_t)poll_s, (long)((poll_s - (time_t)poll_s) * 1e9) };
		nanosleep(&ts, NULL);
		waited = (double)(now_ns() - t0) / 1e9;
	}
}
