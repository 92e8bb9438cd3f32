/*
 * proto.c -- framing of parent/rank messages. See proto.h.
 */
#include "proto.h"
#include "util.h"   /* defines: xmalloc, xrealloc */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAGIC 0x706b6231u   /* "pkb1" */

struct hdr {
	uint32_t magic, type, len;
};

/* a socket's write_all: send(MSG_NOSIGNAL), so a gone peer is -1, not SIGPIPE */
static int send_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len) {
		ssize_t w = send(fd, p, len, MSG_NOSIGNAL);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

static int read_all(int fd, void *buf, size_t len)
{
	char *p = buf;
	while (len) {
		ssize_t r = read(fd, p, len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		p += r;
		len -= (size_t)r;
	}
	return 0;
}

int proto_send(int fd, enum msg_type type, const void *buf, size_t len)
{
	if (len > PROTO_MAX_PAYLOAD)
		return -1;
	struct hdr h = { MAGIC, (uint32_t)type, (uint32_t)len };
	if (send_all(fd, &h, sizeof h) < 0)
		return -1;
	return len ? send_all(fd, buf, len) : 0;
}

int proto_send_pre(int fd, enum msg_type type, const void *pre, size_t plen, const void *buf,
		   size_t len, size_t max)
{
	if (plen > max || len > max - plen)
		return -1;
	struct hdr h = { MAGIC, (uint32_t)type, (uint32_t)(plen + len) };
	if (send_all(fd, &h, sizeof h) < 0 || (plen && send_all(fd, pre, plen) < 0))
		return -1;
	return len ? send_all(fd, buf, len) : 0;
}

int proto_recv(int fd, enum msg_type *type, char **buf, size_t *len)
{
	struct hdr h;
	if (read_all(fd, &h, sizeof h) < 0 || h.magic != MAGIC || h.len > PROTO_MAX_PAYLOAD)
		return -1;
	char *p = xmalloc((size_t)h.len + 1);
	if (read_all(fd, p, h.len) < 0) {
		free(p);
		return -1;
	}
	p[h.len] = 0;
	*type = (enum msg_type)h.type;
	*buf = p;
	*len = h.len;
	return 0;
}

int proto_reader_fill(struct proto_reader *r, int fd)
{
	for (;;) {
		if (r->max && r->len > r->max + sizeof(struct hdr))
			return 0;   /* a whole frame is here: let next() take it */
		if (r->cap - r->len < 65536) {
			r->cap = r->cap ? r->cap * 2 : 131072;
			r->buf = xrealloc(r->buf, r->cap);
		}
		ssize_t n = recv(fd, r->buf + r->len, r->cap - r->len, MSG_DONTWAIT);
		if (n > 0) {
			r->len += (size_t)n;
			continue;
		}
		if (n == 0) {
			r->eof = 1;
			return 0;
		}
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 0;
		r->eof = 1;
		return -1;
	}
}

int proto_reader_next(struct proto_reader *r, enum msg_type *type, char **buf, size_t *len)
{
	struct hdr h;
	if (r->len < sizeof h)
		return 0;
	memcpy(&h, r->buf, sizeof h);
	if (h.magic != MAGIC || h.len > (r->max ? r->max : PROTO_MAX_PAYLOAD))
		return -1;
	if (r->len < sizeof h + h.len)
		return 0;
	char *p = xmalloc((size_t)h.len + 1);
	memcpy(p, r->buf + sizeof h, h.len);
	p[h.len] = 0;
	size_t used = sizeof h + h.len;
	memmove(r->buf, r->buf + used, r->len - used);
	r->len -= used;
	*type = (enum msg_type)h.type;
	*buf = p;
	*len = h.len;
	return 1;
}

void proto_reader_free(struct proto_reader *r)
{
	free(r->buf);
	memset(r, 0, sizeof *r);
}
