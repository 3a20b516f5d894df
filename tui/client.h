/* The front end's end of the connection: frames in, model and symbols out. */
#ifndef QSPTOP_CLIENT_H
#define QSPTOP_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/proto.h"
#include "model.h"
#include "symbols.h"

enum target_state { TARGET_RUNNING, TARGET_EXITED, TARGET_LOST };


/* A stack row's definition and its last cumulative totals. */
struct stack_last {
	bool defined;
	uint32_t row, stack, tid;
	struct wait_counts w;	/* the last counts received */
};

/*
 * The model's row and stack ids, handed out to every connection that
 * feeds one model: each collector numbers its own from 0.
 */
struct client_ids {
	uint32_t rows;		/* the next free model row id */
	uint32_t stacks;	/* the next free model stack id */
};

/*
 * A blame pseudo-stack (PROTO_BLAME_MARK): the holder it names; or a
 * holder stack (PROTO_HOLDER_MARK): its model holder stack id + 1.
 */
struct blame_def {
	bool is;
	uint8_t type;
	uint64_t site;		/* tagged (procs.h); 0: holder unknown */
	uint32_t holder;	/* 0: not a holder stack */
};

struct client {
	int fd;
	unsigned proc;			/* its process's index (procs.h) */
	struct shmobj *shm;		/* its shared locks named across
					   processes (owned); NULL: not */
	struct client_ids *ids;
	uint32_t *row_map;		/* by collector row id: model id + 1 */
	size_t row_map_cap;
	uint32_t *stack_map;		/* by collector stack id: model id + 1 */
	size_t stack_map_cap;
	/*
	 * Whether its ticks close the model's intervals (one connection's
	 * do: the others' counts land in the interval open when they come).
	 * sum_tick, when set, adds the others' totals to such a tick.
	 */
	bool clock;
	void (*sum_tick)(void *ctx, struct proto_tick *t);
	void *sum_ctx;
	struct proto_tick tick;		/* the last one, less the baseline */
	struct proto_while_held *held_last;	/* by row id: last totals */
	size_t held_last_cap;
	/* Waits in progress: of the update being read, of the last whole one. */
	struct model_wait *waits_in, *waits;
	size_t n_waits_in, waits_in_cap, n_waits, waits_cap;
	struct model *model;
	struct symbols *symbols;
	struct proto_hello hello;
	bool have_hello;
	bool in_baseline;		/* counts are the baseline, not news */
	struct lock_counts *last;	/* by row id: the collector's last
					   cumulative counts */
	size_t last_cap;
	struct stack_last *stack_last;	/* by stack row id */
	size_t stack_last_cap;
	struct blame_def *blame;	/* by collector stack id: its blame
					   pseudo-stack's holder, if one */
	size_t blame_cap;
	uint64_t origin_ns;		/* collector clock when counting began */
	uint64_t base_dropped;		/* the tick values of the baseline */
	uint64_t base_folded;
	enum target_state state;
	uint64_t ticks;			/* TICK frames received */
	uint64_t last_tick_ns;		/* collector clock of the last tick */
	uint8_t *in;
	size_t in_len;
	char error[256];		/* why the connection ended badly */
};

/*
 * Start reading the collector of process index proc (procs.h) on fd into
 * model and symbols, taking model ids from ids. Its ticks close the
 * model's intervals (clock) until told otherwise.
 */
void client_init(struct client *c, int fd, struct model *m, struct symbols *s,
		 unsigned proc, struct client_ids *ids);

/*
 * Wait up to timeout_ms (-1: forever) for the collector and apply what it
 * sent, up to the end of one interval. Returns 1 when an interval closed,
 * 0 when not, and -1 once the connection is over (state and error say how).
 */
int client_poll(struct client *c, int timeout_ms);

/*
 * Whether frames already read wait to be applied (an interval ended in
 * the middle of what was read): the next client_poll() needs no waiting.
 */
bool client_buffered(const struct client *c);

/* Ask the collector for updates every interval_ms. */
void client_set_interval(struct client *c, unsigned interval_ms);

/* Ask the collector to track holders (on) or to stop. */
void client_send_holders(struct client *c, bool on);

/*
 * Tell the collector the code ranges (pairs lo, hi) of the lock wrappers
 * to count past: calls from inside them count on their callers. None: calls
 * count where they are made.
 */
void client_send_wrappers(struct client *c, const uint64_t *ranges, size_t n);

/* Tell the collector we leave, and close. */
void client_detach(struct client *c);

/* Release buffers and close the connection. */
void client_close(struct client *c);

#endif
