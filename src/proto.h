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
};

#define PROTO_MAX_PAYLOAD (64u << 20)

int proto_send(int fd, enum msg_type type, const void *buf, size_t len);
/* blocking; *buf is malloc'd (NUL-terminated for convenience); -1 on EOF/error */
int proto_recv(int fd, enum msg_type *type, char **buf, size_t *len);

/* incremental reader for the parent */
struct proto_reader {
	char *buf;
	size_t len, cap;
	int eof;
};
/* read what is available on fd (non-blocking); 0, or -1 on a broken stream */
int proto_reader_fill(struct proto_reader *r, int fd);
/* pop one complete message; 1 if one was popped, 0 if none, -1 if corrupt */
int proto_reader_next(struct proto_reader *r, enum msg_type *type, char **buf, size_t *len);
void proto_reader_free(struct proto_reader *r);

#endif
