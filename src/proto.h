/*
 * proto.h -- messages between the parent (pkb) and its rank processes, over
 * one unix socketpair per rank. A message is a 12-byte header (magic, type,
 * length) and a payload, usually JSON. The parent reads incrementally (a
 * rank that dies mid-message cannot block it); ranks read blocking.
 */
#ifndef PKB_PROTO_H
#define PKB_PROTO_H

#include <stddef.h>
#include <stdint.h>

enum msg_type {
	MSG_JOB = 1,    /* parent -> rank: the job (JSON) */
	MSG_PHASE,      /* rank -> parent: "kind|detail", a new phase began */
	MSG_COLL,       /* rank -> parent: allgather contribution (bytes);
			   parent -> rank: all W contributions concatenated */
	MSG_RESULT,     /* rank -> parent: a result record (JSON) */
	MSG_FAIL,       /* rank -> parent: {"category":..,"message":..} */
	MSG_DONE,       /* rank -> parent: finished cleanly */

	/* the judge and one solution process of its GPU (solproc.h): the
	 * judge commands, the solution process answers; MSG_COLL and MSG_FAIL
	 * also travel this link, as requests the judge checks */
	MSG_SOL_SETUP = 8, /* judge -> sol: who it is, its buffers (JSON) */
	MSG_SOL_CMD,       /* judge -> sol: {"op": init|call|perf|block|fini, ...} */
	MSG_SOL_REPLY,     /* sol -> judge: {"op": ready|ok|enqueued|synced, ...} */

	/* node links (rendezvous.h): agent = a node's pkb, node 0 the coordinator */
	MSG_NODE_HELLO = 16,  /* agent -> node 0: {"v","node","nodes","world","host","job"} */
	MSG_NODE_GO,          /* node 0 -> agent: {"job","host_first","host_size"} or {"error"} */
	MSG_NODE_RANK,        /* either way: u32 rank, u32 type, that rank's message */
	MSG_NODE_EXIT,        /* agent -> node 0: u32 rank, u32 wait status */
	MSG_NODE_COLL,        /* node 0 -> agent: a collective's W contributions */
	MSG_NODE_RECORD,      /* node 0 -> agent: u32 rank, u32 0, a checked result */
	MSG_NODE_KILL,        /* node 0 -> agent: kill your ranks now */
	MSG_NODE_END,         /* node 0 -> agent: the launch's report (JSON) */
	MSG_NODE_PING,        /* either way, every second: still here */
};

#define PROTO_MAX_PAYLOAD (64u << 20)

int proto_send(int fd, enum msg_type type, const void *buf, size_t len);
/* one frame of `pre` then `buf` (node links: a rank's message behind its
 * prefix), at most `max` bytes of payload in all */
int proto_send_pre(int fd, enum msg_type type, const void *pre, size_t plen, const void *buf,
		   size_t len, size_t max);
/* blocking; *buf is malloc'd (NUL-terminated for convenience); -1 on EOF/error */
int proto_recv(int fd, enum msg_type *type, char **buf, size_t *len);

/* incremental reader for the parent */
struct proto_reader {
	char *buf;
	size_t len, cap;
	int eof;
	size_t max;     /* largest payload; 0: PROTO_MAX_PAYLOAD. When set, fill
			   also stops reading once a frame's worth is buffered
			   (a peer on the network cannot grow it without bound) */
};
/* read what is available on fd (non-blocking); 0, or -1 on a broken stream */
int proto_reader_fill(struct proto_reader *r, int fd);
/* pop one complete message; 1 if one was popped, 0 if none, -1 if corrupt */
int proto_reader_next(struct proto_reader *r, enum msg_type *type, char **buf, size_t *len);
void proto_reader_free(struct proto_reader *r);

#endif
