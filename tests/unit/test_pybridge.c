/*
 * test_pybridge.c -- the triton backend's Python host without a GPU: this
 * machine's python3 embedded through its shared libpython (pybridge.c),
 * pkb's own python/pkb_triton.py, and a stand-in torch
 * (tests/unit/data/pystub) whose tensors are host memory at raw addresses.
 * A candidate in the original's format is loaded and called on "device"
 * buffers that are host arrays here: its arguments bound by name, its
 * symmetric memory served by the callbacks below (as solhost.c serves
 * them), its result copied into the output, its errors returned as
 * messages, collectives refused. Skips (saying so) where python3 has no
 * shared libpython.
 */
#define _GNU_SOURCE
#include "t.h"
#include "pybridge.h"
#include "util.h"

#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define W 2
static int n_alloc, n_host_barrier, n_dev_barrier;
static uint64_t last_stream;
static void *blocks[32];

static int cb_symm(uint64_t bytes, uint64_t *local, uint64_t *peers, uint64_t *dev)
{
	if (n_alloc + W > 32)
		return -1;
	static uint64_t tables[16][W];
	for (int r = 0; r < W; r++) {
		blocks[n_alloc + r] = calloc(1, bytes);
		tables[n_alloc / W][r] = (uint64_t)(uintptr_t)blocks[n_alloc + r];
		peers[r] = tables[n_alloc / W][r];
	}
	*local = peers[0];
	*dev = (uint64_t)(uintptr_t)tables[n_alloc / W];
	n_alloc += W;
	return 0;
}

static int cb_host_barrier(void)
{
	n_host_barrier++;
	return 0;
}

static int cb_dev_barrier(uint64_t stream)
{
	n_dev_barrier++;
	last_stream = stream;
	return 0;
}

static const char cand[] =
	"import torch\n"
	"import torch.distributed as dist\n"
	"import torch.distributed._symmetric_memory as symm_mem\n"
	"_buf = None\n"
	"def solution(tensor, scale):\n"
	"    global _buf, _hdl\n"
	"    assert dist.is_initialized() and dist.get_rank() == 0 and dist.get_world_size() == 2\n"
	"    if _buf is None:\n"
	"        _buf = symm_mem.empty(tensor.shape, dtype=tensor.dtype, device=tensor.device)\n"
	"        _hdl = symm_mem.rendezvous(_buf, dist.group.WORLD)\n"
	"        assert _hdl.multicast_ptr == 0 and len(_hdl.buffer_ptrs) == 2\n"
	"    _hdl.barrier(channel=0)\n"
	"    dist.barrier()\n"
	"    peer = _hdl.get_buffer(1, tensor.shape, tensor.dtype)\n"
	"    if scale == 7:\n"
	"        dist.all_reduce(tensor)\n"
	"    if scale == 8:\n"
	"        return tensor\n"
	"    if scale == 9:\n"
	"        return (tensor, tensor)\n"
	"    return tensor * scale + peer\n";

static char *call_json(float *in, float *out, int n, int scale)
{
	json_t *j = json_pack("{s:[{s:s,s:I,s:[i],s:s}],s:[{s:s,s:I,s:[i],s:s}],s:[{s:s,s:f}],s:I}",
			      "in", "name", "tensor", "ptr", (json_int_t)(uintptr_t)in, "shape", n,
			      "dtype", "fp32",
			      "out", "name", "out", "ptr", (json_int_t)(uintptr_t)out, "shape", n,
			      "dtype", "fp32",
			      "params", "name", "scale", "value", (double)scale,
			      "stream", (json_int_t)0x5eed);
	char *s = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	return s;
}

int main(void)
{
	char err[1024];
	struct pybridge_probe pr;
	const char *python = getenv("PKB_PYTHON") ? getenv("PKB_PYTHON") : "python3";
	if (pybridge_probe(python, &pr, err, sizeof err) < 0) {
		printf("test_pybridge: SKIP: %s\n", err);
		CHECK(strstr(err, "python") || strstr(err, "Python"));
		return t_done("test_pybridge");
	}
	CHECKF(pr.lib[0] == '/' && pr.n_dirs > 0 && pr.home[0] == '/', "%s %d %s", pr.lib, pr.n_dirs,
	       pr.home);
	/* the stand-in torch first on the path */
	json_error_t je;
	json_t *path = json_loads(pr.path_json, 0, &je);
	char *stub = xstrfmt("%s/tests/unit/data/pystub", pkb_root());
	json_array_insert_new(path, 0, json_string(stub));
	free(pr.path_json);
	pr.path_json = json_dumps(path, JSON_COMPACT);
	json_decref(path);

	char tmpl[] = "/tmp/pkb-pytest.XXXXXX";
	char *dir = mkdtemp(tmpl);
	json_t *setup = json_pack("{s:s,s:i,s:i,s:i,s:b,s:{s:I,s:I,s:I}}", "scratch", dir, "rank", 0,
				  "world", W, "device", 0, "triton", 0, "cb",
				  "symm_alloc", (json_int_t)(uintptr_t)cb_symm,
				  "host_barrier", (json_int_t)(uintptr_t)cb_host_barrier,
				  "dev_barrier", (json_int_t)(uintptr_t)cb_dev_barrier);
	char *sj = json_dumps(setup, JSON_COMPACT);
	json_decref(setup);
	char *shim = xstrfmt("%s/python", pkb_root());
	CHECK(pybridge_call("load", "{}", err, sizeof err) < 0 && strstr(err, "not started"));
	int started = pybridge_start(&pr, shim, sj, err, sizeof err) == 0;
	CHECKF(started, "start: %s", err);
	if (!started) {
		rm_rf(dir);
		return t_done("test_pybridge");
	}
	CHECK(pybridge_start(&pr, shim, sj, err, sizeof err) < 0 && strstr(err, "already"));

	/* a file without solution() */
	char *bad = xstrfmt("%s/none.py", dir), *good = xstrfmt("%s/cand.py", dir);
	write_file_atomic(bad, "x = 1\n", 6);
	write_file_atomic(good, cand, strlen(cand));
	char *lj = xstrfmt("{\"path\": \"%s\"}", bad);
	CHECK(pybridge_call("load", lj, err, sizeof err) < 0 && strstr(err, "no solution()"));
	free(lj);
	lj = xstrfmt("{\"path\": \"%s\"}", good);
	CHECKF(pybridge_call("load", lj, err, sizeof err) == 0, "load: %s", err);
	CHECK(pybridge_call("init", "{}", err, sizeof err) == 0);

	/* the call: out = in * 3 + the peer's symmetric buffer (the test's
	 * second block, filled after the first call allocated it) */
	float in[4] = { 1, 2, 3, 4 }, out[4] = { -1, -1, -1, -1 };
	char *cj = call_json(in, out, 4, 3);
	CHECKF(pybridge_call("call", cj, err, sizeof err) == 0, "call: %s", err);
	CHECK(out[0] == 3 && out[3] == 12);
	/* the buffer and its signal pads: 2 allocations of W blocks */
	CHECKF(n_alloc == 2 * W && n_dev_barrier == 1 && last_stream == 0x5eed,
	       "%d %d %llx", n_alloc, n_dev_barrier, (unsigned long long)last_stream);
	CHECK(n_host_barrier == 2);   /* the pads' zeroing, then the candidate's dist.barrier() */
	float *peer = blocks[1];
	for (int i = 0; i < 4; i++)
		peer[i] = 100.f * (i + 1);
	CHECK(pybridge_call("call", cj, err, sizeof err) == 0);
	CHECKF(out[0] == 103 && out[3] == 412 && n_alloc == 2 * W, "%g %g", out[0], out[3]);
	CHECK(in[0] == 1 && in[3] == 4);
	free(cj);
	/* a collective: refused, named */
	cj = call_json(in, out, 4, 7);
	CHECKF(pybridge_call("call", cj, err, sizeof err) < 0 && strstr(err, "all_reduce") &&
	       strstr(err, "no NCCL"), "%s", err);
	free(cj);
	/* the wrong number of outputs, and an input returned as is (copied) */
	cj = call_json(in, out, 4, 9);
	CHECKF(pybridge_call("call", cj, err, sizeof err) < 0 && strstr(err, "returned 2 tensors"),
	       "%s", err);
	free(cj);
	cj = call_json(in, out, 4, 8);
	CHECK(pybridge_call("call", cj, err, sizeof err) == 0 && out[2] == 3);
	free(cj);
	/* a shape the problem does not have */
	cj = call_json(in, out, 3, 8);
	char *cj4 = call_json(in, out, 4, 8);
	json_t *j = json_loads(cj4, 0, &je);
	json_array_set_new(json_object_get(json_array_get(json_object_get(j, "out"), 0), "shape"), 0,
			   json_integer(2));
	free(cj4);
	cj4 = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	CHECKF(pybridge_call("call", cj4, err, sizeof err) < 0 && strstr(err, "output 0 is float32 (4,)"),
	       "%s", err);
	free(cj);
	free(cj4);
	CHECK(pybridge_call("fini", "{}", err, sizeof err) == 0);
	CHECK(pybridge_call("nosuch", "{}", err, sizeof err) < 0 && strstr(err, "nosuch"));

	rm_rf(dir);
	free(bad);
	free(good);
	free(lj);
	free(sj);
	free(shim);
	free(stub);
	pybridge_probe_free(&pr);
	return t_done("test_pybridge");
}
