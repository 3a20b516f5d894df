/*
 * Lock wrappers: functions that only pass a lock call on (a program's own
 * my_lock(), libstdc++'s std::mutex::lock(), QEMU's qemu_mutex_lock_impl).
 * Glob patterns (fnmatch) are matched against the demangled name of the
 * function holding an address, with or without its "(args)" part, so that
 * waits can be attributed to the first caller outside every wrapper.
 */
#ifndef QSPTOP_WRAPPERS_H
#define QSPTOP_WRAPPERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symbols.h"

struct wrappers;

/* The built-in patterns, NULL-terminated (for --help and the README). */
extern const char *const wrappers_builtin_globs[];

/* An empty wrapper list resolving addresses through s. */
struct wrappers *wrappers_new(struct symbols *s);
void wrappers_free(struct wrappers *w);

/* Add one pattern: a glob, "0xADDR" or "MODULE+0xOFFSET". */
void wrappers_add(struct wrappers *w, const char *glob);

/* Add the built-in patterns. */
void wrappers_builtin(struct wrappers *w);

/* How many patterns and found functions there are. */
size_t wrappers_count(const struct wrappers *w);

/*
 * Add the function [lo, hi) as a wrapper without a name (found from
 * evidence, autowrap.h); it stays until wrappers_free().
 */
void wrappers_add_function(struct wrappers *w, uint64_t lo, uint64_t hi);

/* How many functions wrappers_add_function() added. */
size_t wrappers_found(const struct wrappers *w);

/* Whether a function name matches a pattern (demangled, args optional). */
bool wrappers_name_matches(const struct wrappers *w, const char *name);

/*
 * Whether the return address lies in a wrapper function; w is a struct
 * wrappers (the signature of model_query.is_wrapper). Cached per address.
 */
bool wrappers_match(void *w, uint64_t address);

/*
 * The code ranges of every wrapper function known now: pairs lo, hi in
 * *ranges (caller frees); their count. The functions of modules added
 * since the last call are matched then; "0xADDR" and "MODULE+0xOFFSET"
 * patterns name the function holding that address (its symbol's extent,
 * or in a stripped module its unwind entry's).
 */
size_t wrappers_ranges(struct wrappers *w, uint64_t **ranges);

#endif
