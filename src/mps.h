/*
 * mps.h -- an NVIDIA MPS control daemon for the judge/candidate split
 * (docs/MPS.md). Two processes on one GPU without MPS time-slice their
 * contexts and every timed call pays ~275 us; under MPS they share one
 * server-side context and the cross-process protocol costs ~2 us. So a
 * timed evaluation makes sure a daemon serves its GPUs: the user's when
 * one answers, else a private one that pkb starts and stops. Plain C, no
 * CUDA: the daemon is nvidia-cuda-mps-control, driven as its docs say.
 */
#ifndef PKB_MPS_H
#define PKB_MPS_H

#include <stddef.h>

struct mps {
	char pipe_dir[512], log_dir[512];
	int ours;          /* 1: started by mps_start, stopped by mps_stop */
	int active;        /* 1: a daemon serves this process's children */
	double wait_s;     /* each wait's bound (set before mps_start; 0: 5 s) */
	/* mps.c's own: the private folder (pipe/, log/, owner), the program
	 * that started the daemon, mps_describe's line, and the variables as
	 * they were before mps_start changed them (had: was set) */
	char dir[512], bin[512], desc[640];
	char saved[3][512];
	int had[3];
};

/* Make sure an MPS control daemon serves the GPUs this process's children
 * will use (CUDA_VISIBLE_DEVICES as it is now).
 *  - A daemon answers at $CUDA_MPS_PIPE_DIRECTORY (unset: NVIDIA's default
 *    /tmp/nvidia-mps): a connect to its `control` socket succeeds (the file
 *    outlives the daemon) and its pid file, if any, names a live process.
 *    It is used as it is (ours = 0), nothing is changed.
 *  - Else PKB_MPS=off: nothing is done, 1.
 *  - Else (PKB_MPS unset, empty or "on") `nvidia-cuda-mps-control -d`, found
 *    on PATH (absent: 1), starts with a private pipe and log folder under
 *    $TMPDIR/pkb-mps-XXXXXX (or /tmp; mode 0700), and mps_start waits at
 *    most wait_s for its `control` to answer. Then this process gets
 *    CUDA_MPS_PIPE_DIRECTORY and CUDA_MPS_LOG_DIRECTORY, so that every child
 *    inherits them, and, when CUDA_VISIBLE_DEVICES named K devices, "0,..,K-1"
 *    in its place: the daemon renumbers the devices it was started with, and
 *    a client's indices count among those (NVIDIA's MPS docs). Before that,
 *    folders of earlier pkb-mps daemons whose pkb died are cleaned
 *    (docs/MPS.md).
 * 0: active; 1: no MPS (err says why: off, not found); -1: failed (err; a
 * bad PKB_MPS, a folder, the daemon's exit status, or no control pipe in
 * time), with nothing left behind. A struct already active: 0 at once. */
int mps_start(struct mps *m, char *err, size_t n);

/* For a daemon mps_start started: `quit` on the control program's stdin,
 * at most wait_s for the daemon to go (a daemon already dead is not asked;
 * one still there after that is killed), the folder removed and the three
 * variables as they were before mps_start. For any other: active = 0 and
 * nothing else. Safe to call twice and after a failed start. */
void mps_stop(struct mps *m);

/* What mps_start would find, without starting anything (`pkb doctor`):
 * 0 with `line` saying where a daemon answers or which program pkb would
 * start; 1 when a timed launch could not have MPS here (off, not found). */
int mps_probe(char *line, size_t n);

/* One line for `pkb doctor`: "running: ...", "off: ...", "not found: ...",
 * "failed: ..." or "not started", with the pipe folder when running */
const char *mps_describe(const struct mps *m);

#endif
