/*
 * rendezvous.h -- one evaluation across several nodes (docs/MULTINODE.md).
 *
 * The launcher (srun, mpirun, torchrun --no-python) starts one pkb per task;
 * each reads its place from the launcher's variables (rdv_env_read) and runs
 * W / tasks ranks with the local machinery of launch.c. The tasks, "node
 * agents", meet over TCP at MASTER_ADDR:MASTER_PORT: node 0 listens (the
 * coordinator), the others connect, say who they are and which job they
 * hold (HELLO), and node 0 answers go or why not (GO). Afterwards node 0 is
 * the parent of all W ranks and every other agent relays its ranks'
 * messages to it (launch.c).
 *
 * A node link carries proto.h's frames. Everything read from the network is
 * bounded (a frame, a hello, a report), every wait has a deadline, and the
 * parsers of this file are fuzzed (tests/fuzz/fuzz_rendezvous.c).
 */
#ifndef PKB_RENDEZVOUS_H
#define PKB_RENDEZVOUS_H

#include "proto.h"   /* defines: enum msg_type, struct proto_reader */

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

struct launch_result;

/* This process's place, from the launcher's variables. One pkb per task:
 * task `node` of `nodes`, `local` among the tasks of its host. */
struct rdv_env {
	char launcher[8];          /* slurm, mpi, torch */
	int node, nodes, local;
	char addr[256];            /* MASTER_ADDR: node 0's host */
	int port;                  /* MASTER_PORT */
};

#define RDV_MAX_NODES 1024
/* a frame on a node link: a rank message (64 MiB) and its 8-byte prefix */
#define RDV_MAX_FRAME (PROTO_MAX_PAYLOAD + 64)
/* hellos and go: small JSON */
#define RDV_MAX_HELLO (1u << 20)
/* both sides of a link send a ping every second; a link silent this long
 * is lost (a SIGSTOPped or partitioned agent; a killed one closes at once) */
#define RDV_PING_S 1.0
#define RDV_SILENCE_S 15.0

/* slurm (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID), mpi (OMPI_COMM_WORLD_
 * RANK, SIZE, LOCAL_RANK), torch (RANK, WORLD_SIZE, LOCAL_RANK), or env:
 * the first of torch, mpi, slurm whose variables are set (the innermost
 * launcher: torchrun inside an sbatch script). MASTER_ADDR and MASTER_PORT
 * for all (PKB_MASTER_PORT before MASTER_PORT when set). 0, or -1 with `err` naming the variable. */
int rdv_env_read(const char *launcher, struct rdv_env *e, char *err, size_t n);

/* One agent's end of a link, as launch.c keeps it. */
struct rdv_link {
	int fd;                    /* -1 once lost */
	int node;
	int first, count;          /* its ranks */
	char host[64];
	struct proto_reader rd;
	uint64_t heard, pinged;    /* ns: last frame in, last ping out */
};

/* Where this agent's ranks sit among the ranks of its host: ranks of one
 * host map each other's memory (CUDA IPC), local_rank = rank - host_first. */
struct rdv_layout {
	int host_first, host_size;
};

/* Node 0: listen on MASTER_PORT, accept the other nodes - 1 agents within
 * timeout_s and check each one's hello against this world and `job`. On
 * success links[1 .. nodes-1] are connected and told go, and `lay` is node
 * 0's; on failure every agent that arrived is told why, and -1 with `err`. */
int rdv_coordinate(const struct rdv_env *e, int world, json_t *job, double timeout_s,
		   struct rdv_link *links, struct rdv_layout *lay, char *err, size_t n);
/* Node > 0: connect (retrying until timeout_s: node 0 may start later),
 * hello, wait for go. The coordinator's perf warmup (drawn at random on each
 * node) replaces the one in `job`. -1 with `err` on failure. */
int rdv_join(const struct rdv_env *e, int world, json_t *job, double timeout_s,
	     struct rdv_link *link, struct rdv_layout *lay, char *err, size_t n);

/* the link's heartbeat at time `now`: a ping when one is due; NULL, or why
 * the link is lost (silent past RDV_SILENCE_S, or the ping could not go) */
const char *rdv_link_tick(struct rdv_link *k, uint64_t now);
/* close links[lo .. hi-1] once what was sent has been read: shut down the
 * sending side, then read (and drop) until each peer closes, at most 2 s.
 * A plain close() with the peer's pings unread sends a reset, which can
 * discard the last frames (the report) before the peer reads them. */
void rdv_links_close(struct rdv_link *links, int lo, int hi);

/* ---- frames and their parsers: untrusted bytes ---- */

/* MSG_NODE_RANK / MSG_NODE_EXIT / MSG_NODE_RECORD: u32 rank, u32 value
 * (little-endian), then a payload; -1 on a broken link */
int rdv_send_rank(int fd, enum msg_type t, int rank, uint32_t value, const void *buf, size_t len);
/* 0 with the fields, -1 if shorter than the prefix or rank not in [lo, hi) */
int rdv_rank_frame(const char *buf, size_t len, int lo, int hi, int *rank, uint32_t *value,
		   const char **payload, size_t *plen);
/* a hello as node 0 sees it: 0 with *node, or -1 with `err`; *fatal is set
 * when the sender is a pkb of another world or job (everyone stops), clear
 * when it is just not a pkb hello (that connection is dropped) */
int rdv_hello_check(json_t *hello, const struct rdv_env *e, int world, json_t *job, int *node,
		    int *fatal, char *err, size_t n);
/* the final report node 0 sends every agent (MSG_NODE_END) */
json_t *rdv_report_pack(const struct launch_result *res);
/* into res (res->world ranks allocated, pids untouched); -1 with `err` */
int rdv_report_unpack(json_t *in, struct launch_result *res, char *err, size_t n);

#endif
