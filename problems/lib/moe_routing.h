/*
 * moe_routing.h -- the shape of the routing 028 and 029 share, the
 * original's: 8 experts, each token routed to its top 2. For problem.c
 * (through routing_host.h) and for the two reference.cu files alike.
 */
#ifndef PKB_MOE_ROUTING_H
#define PKB_MOE_ROUTING_H

#define EXPERTS 8
#define TOPK 2

#endif /* PKB_MOE_ROUTING_H */
