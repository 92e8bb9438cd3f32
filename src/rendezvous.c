/*
 * rendezvous.c -- see rendezvous.h.
 *
 * The meeting: node 0 binds MASTER_PORT on every address (MASTER_ADDR is
 * how the others reach it; on Debian a host's own name often resolves to
 * 127.0.1.1, where a bind would hide it) and polls the listening socket and
 * up to MAX_PENDING connections that have not said hello yet. A connection
 * that sends something other than a pkb hello is dropped with a warning (a
 * port scanner does not end an evaluation); a pkb of another world or job
 * ends the meeting for everyone, each agent told why in its go frame.
 */
#define _GNU_SOURCE
#include "rendezvous.h"
#include "launch_result.h"   /* defines: struct launch_result, struct rank_report */
#include "util.h"     /* defines: xmalloc, now_ns, warning */

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_PENDING 64
#define HELLO_VERSION 1

/* ---- the launcher's variables ---------------------------------------------- */

/* a variable holding an integer in [lo, hi]; 0, or -1 with err */
static int env_int(const char *name, long lo, long hi, int *out, char *err, size_t n)
{
	const char *s = getenv(name);
	if (!s || !*s) {
		snprintf(err, n, "%s is not set", name);
		return -1;
	}
	long long v;
	if (parse_int_in(s, lo, hi, &v) < 0) {
		snprintf(err, n, "%s='%.40s' is not an integer from %ld to %ld", name, s, lo, hi);
		return -1;
	}
	*out = (int)v;
	return 0;
}

static const struct {
	const char *name, *rank, *size, *local;
} launchers[] = {
	{ "torch", "RANK", "WORLD_SIZE", "LOCAL_RANK" },
	{ "mpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK" },
	{ "slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID" },
};

int rdv_env_read(const char *launcher, struct rdv_env *e, char *err, size_t n)
{
	memset(e, 0, sizeof *e);
	int k = -1;
	for (int i = 0; i < (int)ARRAY_SIZE(launchers); i++) {
		if (!strcmp(launcher, launchers[i].name) ||
		    (!strcmp(launcher, "env") && k < 0 && getenv(launchers[i].rank) &&
		     getenv(launchers[i].size)))
			k = i;
	}
	if (k < 0) {
		if (strcmp(launcher, "env"))
			snprintf(err, n, "--launcher takes slurm, mpi, torch or env, not '%.40s'",
				 launcher);
		else
			snprintf(err, n, "--launcher env: none of RANK/WORLD_SIZE, "
				 "OMPI_COMM_WORLD_RANK/SIZE, SLURM_PROCID/SLURM_NTASKS is set");
		return -1;
	}
	snprintf(e->launcher, sizeof e->launcher, "%s", launchers[k].name);
	if (env_int(launchers[k].size, 1, RDV_MAX_NODES, &e->nodes, err, n) < 0 ||
	    env_int(launchers[k].rank, 0, e->nodes - 1, &e->node, err, n) < 0)
		return -1;
	/* the local index only names the task in messages: 0 when unset */
	if (getenv(launchers[k].local) &&
	    env_int(launchers[k].local, 0, RDV_MAX_NODES - 1, &e->local, err, n) < 0)
		return -1;
	const char *addr = getenv("MASTER_ADDR");
	if (e->nodes > 1 && (!addr || !*addr)) {
		snprintf(err, n, "MASTER_ADDR is not set (node 0's host, where the agents meet)");
		return -1;
	}
	if (addr && strlen(addr) >= sizeof e->addr) {
		snprintf(err, n, "MASTER_ADDR is longer than %zu bytes", sizeof e->addr - 1);
		return -1;
	}
	snprintf(e->addr, sizeof e->addr, "%s", addr ? addr : "127.0.0.1");
	/* torchrun's agent can hold MASTER_PORT with its own store: then
	 * PKB_MASTER_PORT names another */
	const char *pv = getenv("PKB_MASTER_PORT") ? "PKB_MASTER_PORT" : "MASTER_PORT";
	if (e->nodes > 1 && env_int(pv, 1, 65535, &e->port, err, n) < 0)
		return -1;
	return 0;
}

/* ---- frames ----------------------------------------------------------------- */

static void put_u32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_u32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int rdv_send_rank(int fd, enum msg_type t, int rank, uint32_t value, const void *buf, size_t len)
{
	unsigned char pre[8];
	put_u32(pre, (uint32_t)rank);
	put_u32(pre + 4, value);
	return proto_send_pre(fd, t, pre, sizeof pre, buf, len, RDV_MAX_FRAME);
}

int rdv_rank_frame(const char *buf, size_t len, int lo, int hi, int *rank, uint32_t *value,
		   const char **payload, size_t *plen)
{
	if (len < 8)
		return -1;
	uint32_t r = get_u32((const unsigned char *)buf);
	if (r < (uint32_t)lo || r >= (uint32_t)hi)
		return -1;
	*rank = (int)r;
	*value = get_u32((const unsigned char *)buf + 4);
	*payload = buf + 8;
	*plen = len - 8;
	return 0;
}

static int send_json(int fd, enum msg_type t, json_t *j)
{
	char *txt = json_dumps(j, JSON_COMPACT);
	int r = txt ? proto_send(fd, t, txt, strlen(txt)) : -1;
	free(txt);
	return r;
}

/* a socket that is never written to forever: sends give up after the
 * silence limit (a peer that stopped reading is a lost peer) */
static void link_socket_opts(int fd)
{
	struct timeval tv = { .tv_sec = (time_t)RDV_SILENCE_S };
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

const char *rdv_link_tick(struct rdv_link *k, uint64_t now)
{
	if (now - k->heard > (uint64_t)(RDV_SILENCE_S * 1e9))
		return "silent for 15 s";
	if (now - k->pinged > (uint64_t)(RDV_PING_S * 1e9)) {
		k->pinged = now;
		if (proto_send(k->fd, MSG_NODE_PING, NULL, 0) < 0)
			return "its link broke";
	}
	return NULL;
}

void rdv_links_close(struct rdv_link *links, int lo, int hi)
{
	for (int i = lo; i < hi; i++)
		if (links[i].fd >= 0)
			shutdown(links[i].fd, SHUT_WR);
	uint64_t until = now_ns() + 2000000000ull;
	for (;;) {
		int open = 0;
		for (int i = lo; i < hi; i++) {
			if (links[i].fd < 0)
				continue;
			char sink[4096];
			ssize_t r = recv(links[i].fd, sink, sizeof sink, MSG_DONTWAIT);
			if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
				close(links[i].fd);
				links[i].fd = -1;
			} else {
				open++;
			}
		}
		if (!open || now_ns() >= until)
			break;
		usleep(5000);
	}
	for (int i = lo; i < hi; i++)
		if (links[i].fd >= 0) {
			close(links[i].fd);
			links[i].fd = -1;
		}
}

/* ---- hellos ------------------------------------------------------------------- */

/* The job as the nodes must agree on it: each node's shared objects live in
 * its own cache (the file name is the content's hash: compare that), the
 * warmup count carries a per-node random jitter, and a seed no --seed gave
 * is drawn by each node (node 0's are used). A seed given on one node and
 * drawn on another still differs. */
static json_t *job_key(json_t *job)
{
	json_t *k = json_deep_copy(job);
	if (json_is_true(json_object_get(k, "seed_drawn")))
		json_object_del(k, "seed");
	json_object_del(k, "seed_drawn");
	json_t *perf = json_object_get(k, "perf");
	if (json_is_object(perf))
		json_object_del(perf, "warmup");
	size_t i;
	json_t *s;
	json_array_foreach(json_object_get(k, "solutions"), i, s) {
		const char *so = json_string_value(json_object_get(s, "so"));
		if (so) {
			const char *base = strrchr(so, '/');
			json_object_set_new(s, "so", json_string(base ? base + 1 : so));
		}
	}
	return k;
}

/* the first top-level key on which two jobs differ, for the message */
static const char *job_diff(json_t *a, json_t *b)
{
	const char *key;
	json_t *v;
	json_object_foreach(a, key, v)
		if (!json_equal(v, json_object_get(b, key)))
			return key;
	json_object_foreach(b, key, v)
		if (!json_object_get(a, key))
			return key;
	return "?";
}

int rdv_hello_check(json_t *hello, const struct rdv_env *e, int world, json_t *job, int *node,
		    int *fatal, char *err, size_t n)
{
	*fatal = 0;
	json_int_t v, nd, nodes, w;
	json_t *theirs;
	const char *host;
	json_error_t je;
	if (!json_is_object(hello) ||
	    json_unpack_ex(hello, &je, JSON_STRICT, "{s:I,s:I,s:I,s:I,s:s,s:o}", "v", &v, "node",
			   &nd, "nodes", &nodes, "world", &w, "host", &host, "job", &theirs) < 0) {
		snprintf(err, n, "not a pkb hello: %s", json_is_object(hello) ? je.text : "not an object");
		return -1;
	}
	*fatal = 1;
	if (v != HELLO_VERSION) {
		snprintf(err, n, "a pkb of protocol %lld met node 0 (protocol %d): one pkb build on "
			 "every node", (long long)v, HELLO_VERSION);
		return -1;
	}
	if (nodes != e->nodes || w != world) {
		snprintf(err, n, "node %lld counts %lld nodes and %lld ranks, node 0 counts %d and %d "
			 "(the launcher's world size and --gpus must be the same on every node)",
			 (long long)nd, (long long)nodes, (long long)w, e->nodes, world);
		return -1;
	}
	if (nd < 1 || nd >= e->nodes) {
		snprintf(err, n, "an agent says it is node %lld of %d (node 0 is this one)",
			 (long long)nd, e->nodes);
		return -1;
	}
	json_t *a = job_key(job), *b = job_key(theirs);
	int same = json_equal(a, b);
	if (!same)
		snprintf(err, n, "node %lld holds another job than node 0 ('%s' differs): the same "
			 "command, problem and files on every node", (long long)nd, job_diff(a, b));
	json_decref(a);
	json_decref(b);
	if (!same)
		return -1;
	*fatal = 0;
	*node = (int)nd;
	return 0;
}

/* ---- node 0 ----------------------------------------------------------------- */

static int listen_on(int port, char *err, size_t n)
{
	/* dual stack where there is IPv6, else IPv4: every address either way */
	int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1, zero = 0;
	int r = -1;
	if (fd >= 0) {
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
		struct sockaddr_in6 a = { .sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port),
					  .sin6_addr = in6addr_any };
		r = bind(fd, (struct sockaddr *)&a, sizeof a);
		if (r < 0 && errno != EADDRINUSE) {
			close(fd);
			fd = -1;
		}
	}
	if (fd < 0) {
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			snprintf(err, n, "socket: %s", strerror(errno));
			return -1;
		}
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
					 .sin_addr.s_addr = htonl(INADDR_ANY) };
		r = bind(fd, (struct sockaddr *)&a, sizeof a);
	}
	if (r < 0 || listen(fd, MAX_PENDING) < 0) {
		snprintf(err, n, "node 0 cannot listen on port %d: %s%s", port, strerror(errno),
			 errno == EADDRINUSE ? " (another node 0, or another program, has it: "
			 "check the launcher's ranks, or give pkb another port in PKB_MASTER_PORT)" : "");
		close(fd);
		return -1;
	}
	return fd;
}

struct pending {
	int fd;
	struct proto_reader rd;
	char host[64];
};

static void pending_drop(struct pending *p)
{
	close(p->fd);
	proto_reader_free(&p->rd);
	p->fd = -1;
}

/* the agents on one host sit next to each other (the launchers' block
 * layout); each agent's ranks learn their host's range */
static void host_ranges(struct rdv_link *links, int nodes, int node, struct rdv_layout *lay)
{
	int a = node, b = node;
	while (a > 0 && !strcmp(links[a - 1].host, links[node].host))
		a--;
	while (b + 1 < nodes && !strcmp(links[b + 1].host, links[node].host))
		b++;
	lay->host_first = links[a].first;
	lay->host_size = links[b].first + links[b].count - links[a].first;
}

static void refuse_all(struct rdv_link *links, int nodes, const char *why)
{
	json_t *go = json_pack("{s:s}", "error", why);
	for (int i = 1; i < nodes; i++)
		if (links[i].fd >= 0) {
			send_json(links[i].fd, MSG_NODE_GO, go);
			proto_reader_free(&links[i].rd);
		}
	json_decref(go);
	rdv_links_close(links, 1, nodes);
}

/* node 0's meeting as it goes */
struct meeting {
	const struct rdv_env *e;
	int world;
	json_t *job;
	struct rdv_link *links;   /* [node]: fd >= 0 once its agent said hello */
	struct pending pend[MAX_PENDING];   /* connections that have not yet */
	int lfd;
	int arrived;              /* nodes, node 0 included */
};

/* why the meeting ended at its deadline: who came, who did not */
static void say_missing(const struct meeting *m, double timeout_s, char *err, size_t n)
{
	const struct rdv_env *e = m->e;
	size_t off = (size_t)snprintf(err, n, "%d of %d nodes arrived at port %d within "
				      "%.0f s (missing:", m->arrived, e->nodes, e->port, timeout_s);
	for (int i = 1, shown = 0; i < e->nodes && off < n; i++)
		if (m->links[i].fd < 0 && shown++ < 8)
			off += (size_t)snprintf(err + off, n - off, " node %d", i);
	if (off < n)
		snprintf(err + off, n - off, ")");
}

/* a new connection into a free pending slot; dropped when none is free
 * (too many silent connections: a flood) */
static void accept_pending(struct meeting *m)
{
	struct sockaddr_storage sa;
	socklen_t sl = sizeof sa;
	int c = accept4(m->lfd, (struct sockaddr *)&sa, &sl, SOCK_CLOEXEC);
	if (c < 0)
		return;
	int slot = -1;
	for (int i = 0; i < MAX_PENDING && slot < 0; i++)
		if (m->pend[i].fd < 0)
			slot = i;
	if (slot < 0) {
		close(c);
		return;
	}
	link_socket_opts(c);
	m->pend[slot] = (struct pending){ .fd = c, .rd = { .max = RDV_MAX_HELLO } };
	getnameinfo((struct sockaddr *)&sa, sl, m->pend[slot].host, sizeof m->pend[slot].host,
		    NULL, 0, NI_NUMERICHOST);
}

/* a pkb of another world or job, or a second agent of one node: told why
 * on its connection, which is closed; the meeting ends with `why` */
static void refuse_pending(struct pending *p, const char *why)
{
	json_t *go = json_pack("{s:s}", "error", why);
	send_json(p->fd, MSG_NODE_GO, go);
	json_decref(go);
	struct rdv_link one = { .fd = p->fd };
	rdv_links_close(&one, 0, 1);
	p->fd = -1;
	proto_reader_free(&p->rd);
}

/* What a pending connection sent, when it sent something: a pkb hello
 * makes it its node's link (1); anything else drops it with a warning (0,
 * as when there is nothing yet); a hello that must end the meeting ends
 * it (-1 with err). */
static int take_hello(struct meeting *m, struct pending *p, char *err, size_t n)
{
	proto_reader_fill(&p->rd, p->fd);
	enum msg_type t;
	char *buf = NULL;
	size_t len;
	int got = proto_reader_next(&p->rd, &t, &buf, &len);
	if (got == 0 && !p->rd.eof)
		return 0;
	if (got != 1 || t != MSG_NODE_HELLO) {
		warning("node 0: dropped a connection from %s that sent no pkb hello", p->host);
		free(buf);
		pending_drop(p);
		return 0;
	}
	json_t *hello = json_loadb(buf, len, 0, NULL);
	free(buf);
	struct rdv_link *links = m->links;
	int node = -1, fatal = 0;
	char why[600];
	if (rdv_hello_check(hello, m->e, m->world, m->job, &node, &fatal, why, sizeof why) == 0 &&
	    links[node].fd >= 0) {
		snprintf(why, sizeof why, "two agents say they are node %d (from %s and "
			 "%s): check the launcher's ranks", node, links[node].host, p->host);
		fatal = 1;
	}
	if (fatal) {
		json_decref(hello);
		refuse_pending(p, why);
		snprintf(err, n, "%s", why);
		return -1;
	}
	if (node < 0) {
		warning("node 0: dropped a connection from %s: %s", p->host, why);
		json_decref(hello);
		pending_drop(p);
		return 0;
	}
	/* the agent's own name for its host: the address it came from
	 * can differ from its peers' (several interfaces) */
	const char *h = json_string_value(json_object_get(hello, "host"));
	links[node].fd = p->fd;
	links[node].rd = p->rd;
	snprintf(links[node].host, sizeof links[node].host, "%s", h);
	links[node].rd.max = RDV_MAX_FRAME;
	p->fd = -1;
	memset(&p->rd, 0, sizeof p->rd);
	json_decref(hello);
	return 1;
}

/* every other agent told go, with the job and its host's ranks; -1 with
 * err when one left before */
static int send_go(struct meeting *m, char *err, size_t n)
{
	for (int i = 1; i < m->e->nodes; i++) {
		struct rdv_layout l;
		host_ranges(m->links, m->e->nodes, i, &l);
		json_t *go = json_pack("{s:O,s:i,s:i}", "job", m->job, "host_first", l.host_first,
				       "host_size", l.host_size);
		int rc = send_json(m->links[i].fd, MSG_NODE_GO, go);
		json_decref(go);
		if (rc < 0) {
			snprintf(err, n, "node %d (%s) left before the start", i, m->links[i].host);
			return -1;
		}
		m->links[i].heard = m->links[i].pinged = now_ns();
	}
	return 0;
}

int rdv_coordinate(const struct rdv_env *e, int world, json_t *job, double timeout_s,
		   struct rdv_link *links, struct rdv_layout *lay, char *err, size_t n)
{
	int G = world / e->nodes;
	for (int i = 0; i < e->nodes; i++) {
		memset(&links[i], 0, sizeof links[i]);
		links[i].fd = -1;
		links[i].node = i;
		links[i].first = i * G;
		links[i].count = G;
	}
	gethostname(links[0].host, sizeof links[0].host - 1);
	struct meeting m = { .e = e, .world = world, .job = job, .links = links, .arrived = 1 };
	m.lfd = listen_on(e->port, err, n);
	if (m.lfd < 0)
		return -1;
	for (int i = 0; i < MAX_PENDING; i++)
		m.pend[i].fd = -1;
	int rc = -1;
	uint64_t until = now_ns() + (uint64_t)(timeout_s * 1e9);
	while (m.arrived < e->nodes) {
		int64_t left_ms = ((int64_t)until - (int64_t)now_ns()) / 1000000;
		if (left_ms <= 0) {
			say_missing(&m, timeout_s, err, n);
			goto out;
		}
		struct pollfd pfd[MAX_PENDING + 1];
		pfd[0] = (struct pollfd){ .fd = m.lfd, .events = POLLIN };
		for (int i = 0; i < MAX_PENDING; i++)
			pfd[i + 1] = (struct pollfd){ .fd = m.pend[i].fd, .events = POLLIN };
		poll(pfd, MAX_PENDING + 1, left_ms < 200 ? (int)left_ms : 200);
		if (pfd[0].revents & POLLIN)
			accept_pending(&m);
		for (int i = 0; i < MAX_PENDING; i++) {
			struct pending *p = &m.pend[i];
			if (p->fd < 0 || !(pfd[i + 1].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			int got = take_hello(&m, p, err, n);
			if (got < 0)
				goto out;
			m.arrived += got;
		}
	}
	if (send_go(&m, err, n) < 0)
		goto out;
	host_ranges(links, e->nodes, 0, lay);
	rc = 0;
out:
	if (rc < 0)
		refuse_all(links, e->nodes, err);
	for (int i = 0; i < MAX_PENDING; i++)
		if (m.pend[i].fd >= 0)
			pending_drop(&m.pend[i]);
	close(m.lfd);
	return rc;
}

/* ---- nodes > 0 ---------------------------------------------------------------- */

/* one connection attempt, bounded by ms; the socket, or -1 with errno */
static int connect_once(const struct addrinfo *ai, int ms)
{
	int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0 && errno != EINPROGRESS)
		goto fail;
	struct pollfd p = { .fd = fd, .events = POLLOUT };
	if (poll(&p, 1, ms) != 1) {
		errno = ETIMEDOUT;
		goto fail;
	}
	int soerr = 0;
	socklen_t sl = sizeof soerr;
	getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
	if (soerr) {
		errno = soerr;
		goto fail;
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	return fd;
fail:;
	int keep = errno;
	close(fd);
	errno = keep;
	return -1;
}

int rdv_join(const struct rdv_env *e, int world, json_t *job, double timeout_s,
	     struct rdv_link *link, struct rdv_layout *lay, char *err, size_t n)
{
	memset(link, 0, sizeof *link);
	link->fd = -1;
	link->rd.max = RDV_MAX_FRAME;
	uint64_t until = now_ns() + (uint64_t)(timeout_s * 1e9);
	char port[16], last[200] = "no attempt";
	snprintf(port, sizeof port, "%d", e->port);
	/* node 0 may start later, or still be compiling: retry until the deadline */
	while (link->fd < 0) {
		int64_t left_ms = ((int64_t)until - (int64_t)now_ns()) / 1000000;
		if (left_ms <= 0) {
			snprintf(err, n, "no node 0 at %s:%d within %.0f s (%s)", e->addr, e->port,
				 timeout_s, last);
			return -1;
		}
		struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *ai;
		int g = getaddrinfo(e->addr, port, &hints, &ai);
		if (g) {
			snprintf(last, sizeof last, "cannot resolve '%.100s': %s", e->addr, gai_strerror(g));
		} else {
			for (struct addrinfo *a = ai; a && link->fd < 0; a = a->ai_next) {
				link->fd = connect_once(a, left_ms < 1000 ? (int)left_ms : 1000);
				if (link->fd < 0)
					snprintf(last, sizeof last, "%s", strerror(errno));
			}
			freeaddrinfo(ai);
		}
		if (link->fd < 0)
			usleep(200000);
	}
	link_socket_opts(link->fd);
	char host[64] = "";
	gethostname(host, sizeof host - 1);
	json_t *hello = json_pack("{s:i,s:i,s:i,s:i,s:s,s:O}", "v", HELLO_VERSION, "node", e->node,
				  "nodes", e->nodes, "world", world, "host", host, "job", job);
	int sent = send_json(link->fd, MSG_NODE_HELLO, hello);
	json_decref(hello);
	json_t *go = NULL;
	while (sent == 0 && !go) {
		int64_t left_ms = ((int64_t)until - (int64_t)now_ns()) / 1000000;
		if (left_ms <= 0) {
			snprintf(err, n, "node 0 at %s:%d did not start the launch within %.0f s "
				 "(a node missing?)", e->addr, e->port, timeout_s);
			goto fail;
		}
		struct pollfd p = { .fd = link->fd, .events = POLLIN };
		poll(&p, 1, left_ms < 200 ? (int)left_ms : 200);
		if (!(p.revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		proto_reader_fill(&link->rd, link->fd);
		enum msg_type t;
		char *buf;
		size_t len;
		int got = proto_reader_next(&link->rd, &t, &buf, &len);
		if (got == 1 && t == MSG_NODE_GO) {
			go = json_loadb(buf, len, 0, NULL);
			free(buf);
			if (!go)
				break;
		} else if (got == 1 && t == MSG_NODE_PING) {
			free(buf);
		} else if (got != 0 || link->rd.eof) {
			if (got == 1)
				free(buf);
			break;
		}
	}
	if (!go) {
		snprintf(err, n, "node 0 at %s:%d closed the link before the start", e->addr, e->port);
		goto fail;
	}
	const char *why = json_string_value(json_object_get(go, "error"));
	json_t *theirs = json_object_get(go, "job");
	json_int_t hf = -1, hs = -1;
	json_unpack(go, "{s?I,s?I}", "host_first", &hf, "host_size", &hs);
	int G = world / e->nodes, first = e->node * G;
	if (why) {
		snprintf(err, n, "node 0 stopped the launch: %s", why);
		goto fail;
	}
	if (!json_is_object(theirs) || hf < 0 || hs < 1 || hf > first || hf + hs < first + G ||
	    hf + hs > world) {
		snprintf(err, n, "node 0 at %s:%d sent a malformed go", e->addr, e->port);
		goto fail;
	}
	/* node 0's drawn seed: every rank generates the same instance */
	json_t *seed = json_object_get(theirs, "seed");
	if (json_is_true(json_object_get(job, "seed_drawn")) && json_is_integer(seed))
		json_object_set(job, "seed", seed);
	/* the warmup of node 0: every rank runs the same count of collectives */
	json_t *wu = json_object_get(json_object_get(theirs, "perf"), "warmup");
	json_t *perf = json_object_get(job, "perf");
	if (json_is_object(perf) && json_is_integer(wu))
		json_object_set(perf, "warmup", wu);
	lay->host_first = (int)hf;
	lay->host_size = (int)hs;
	link->node = 0;
	link->first = 0;
	link->count = world;
	link->heard = link->pinged = now_ns();
	json_decref(go);
	return 0;
fail:
	json_decref(go);
	close(link->fd);
	link->fd = -1;
	proto_reader_free(&link->rd);
	return -1;
}

/* ---- the final report ---------------------------------------------------------- */

json_t *rdv_report_pack(const struct launch_result *res)
{
	json_t *ranks = json_array();
	for (int r = 0; r < res->world; r++) {
		const struct rank_report *rr = &res->ranks[r];
		json_t *ks = json_array();
		for (int k = 0; k < PH_KIND_COUNT; k++)
			json_array_append_new(ks, json_real(rr->kind_s[k]));
		json_array_append_new(ranks, json_pack("{s:s,s:f,s:o,s:b,s:b,s:s,s:s,s:f}", "phase",
						       rr->phase, "phase_s", rr->phase_s, "kind_s",
						       ks, "done", rr->done, "failed", rr->failed,
						       "category", rr->category, "message",
						       rr->message, "exit_s", rr->exit_s));
	}
	return json_pack("{s:s,s:i,s:s,s:f,s:o}", "outcome", outcome_name(res->outcome), "culprit",
			 res->culprit, "message", res->message, "wall_s", res->wall_s, "ranks",
			 ranks);
}

int rdv_report_unpack(json_t *in, struct launch_result *res, char *err, size_t n)
{
	const char *outcome, *msg;
	json_int_t culprit;
	double wall;
	json_t *ranks;
	json_error_t je;
	if (json_unpack_ex(in, &je, 0, "{s:s,s:I,s:s,s:F,s:o}", "outcome", &outcome, "culprit",
			   &culprit, "message", &msg, "wall_s", &wall, "ranks", &ranks) < 0) {
		snprintf(err, n, "report: %s", je.text);
		return -1;
	}
	int oc = outcome_parse(outcome);
	if (oc < 0 || culprit < -1 || culprit >= res->world || !json_is_array(ranks) ||
	    json_array_size(ranks) != (size_t)res->world) {
		snprintf(err, n, "report: outcome, culprit or ranks out of range");
		return -1;
	}
	for (int r = 0; r < res->world; r++) {
		json_t *o = json_array_get(ranks, (size_t)r), *ks;
		const char *ph, *cat, *m;
		int done, failed;
		double ps;
		if (json_unpack_ex(o, &je, 0, "{s:s,s:F,s:o,s:b,s:b,s:s,s:s}", "phase", &ph, "phase_s",
				   &ps, "kind_s", &ks, "done", &done, "failed", &failed, "category",
				   &cat, "message", &m) < 0 || !json_is_array(ks) ||
		    json_array_size(ks) != PH_KIND_COUNT) {
			snprintf(err, n, "report: rank %d: %s", r, json_is_array(ks) ? je.text
				 : "kind_s is not an array");
			return -1;
		}
		struct rank_report *rr = &res->ranks[r];
		snprintf(rr->phase, sizeof rr->phase, "%s", ph);
		snprintf(rr->category, sizeof rr->category, "%s", cat);
		snprintf(rr->message, sizeof rr->message, "%s", m);
		rr->phase_s = ps;
		rr->exit_s = json_number_value(json_object_get(o, "exit_s"));
		rr->done = done;
		rr->failed = failed;
		for (int k = 0; k < PH_KIND_COUNT; k++)
			rr->kind_s[k] = json_number_value(json_array_get(ks, (size_t)k));
	}
	res->outcome = (enum pkb_outcome)oc;
	res->culprit = (int)culprit;
	snprintf(res->message, sizeof res->message, "%s", msg);
	res->wall_s = wall;
	return 0;
}
