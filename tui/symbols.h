/*
 * Addresses of the target turned into function+offset, file:line and
 * module, from the modules the collector reported. Works after the target
 * has exited: modules are opened by path and checked by build id. Never
 * waits on the network: debuginfo missing locally is fetched from the
 * debuginfod servers of DEBUGINFOD_URLS in the background, and names
 * appear when it lands.
 */
#ifndef QSPTOP_SYMBOLS_H
#define QSPTOP_SYMBOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* A call the compiler inlined: the function it was made in, and where. */
struct inline_call {
	const char *function;	/* NULL when unknown */
	const char *file;	/* NULL when unknown */
	int line;		/* 0 when unknown */
};

/*
 * What an address is. In code the compiler inlined, file:line is the
 * innermost place in the program's own sources, not in a system header
 * (std::lock_guard's lock call is libstdc++'s, its line the program's):
 * a line of function, an inlined function, whose calls inlined_in gives
 * innermost first, the last one in the function symbol names. Elsewhere
 * function is symbol and inlined_in is empty. symbol, the function whose
 * code holds the address, is what wrappers and offsets go by.
 */
struct frame_info {
	uint64_t address;
	const char *symbol;	/* NULL when unknown */
	uint64_t offset;	/* address - symbol start */
	const char *function;	/* of file:line; NULL when unknown */
	const char *file;	/* source file as DWARF names it, or NULL */
	int line;		/* 0 when unknown */
	unsigned n_inlined;	/* entries of inlined_in */
	const struct inline_call *inlined_in;
	const char *module;	/* module path, or NULL outside every module */
	uint64_t module_offset;	/* address - module load bias */
};

struct symbols;

/*
 * Create an empty symbol resolver. It takes DEBUGINFOD_URLS out of the
 * environment (tui/fetch.h): create it after launching a command.
 */
struct symbols *symbols_new(void);
void symbols_free(struct symbols *s);

/*
 * Modules are named as process pid names them, in its root (when it has a
 * mount namespace of its own): they are opened beneath that root, never
 * outside it. Before the first module.
 */
void symbols_set_root(struct symbols *s, pid_t pid);

/*
 * Add a module loaded at bias base (dlpi_addr). A build id that does not
 * match the file on disk makes the module resolve to module+offset only.
 */
void symbols_add_module(struct symbols *s, const char *path, uint64_t base,
			const uint8_t *build_id, size_t build_id_len);

/*
 * Resolve an address. For a return address (is_return true) the symbol and
 * line are those of the call instruction (address - 1), the offset is still
 * relative to address. Strings stay valid until symbols_free(), the
 * inlined_in array until the next symbols_add_module() or
 * symbols_refresh(). Past the refresh's time budget a new address gets its
 * module and offset only, and false: ask again on a later refresh.
 */
bool symbols_resolve(struct symbols *s, uint64_t address, int is_return,
		     struct frame_info *out);

/*
 * The data object (a static or global variable, from the symbol table)
 * holding address: its name, and the address's offset in it. False when
 * no module's symbols have one there (the heap, a stack, a stripped
 * module's static data).
 */
bool symbols_data(struct symbols *s, uint64_t address, const char **name,
		  uint64_t *offset);

/*
 * Start a refresh: take in the debuginfo fetched since the last one and
 * give new addresses a fresh time budget. Whether names may have changed
 * since (so the screen is worth drawing again).
 */
bool symbols_refresh(struct symbols *s);

/*
 * Before an export: wait up to three quarters of ms for the fetches under
 * way, then give new addresses the rest of ms.
 */
void symbols_settle(struct symbols *s, unsigned ms);

/*
 * A short note while names are to come ("resolving…", "resolving…
 * debuginfod: fetching 2"), "" otherwise; "..." unless utf8.
 */
void symbols_progress(const struct symbols *s, bool utf8, char *buf,
		      size_t size);

/*
 * Why debuginfod is no longer asked, in one line ("debuginfod: URL did not
 * answer in 5s; names from local files only"), or NULL.
 */
const char *symbols_fetch_failure(const struct symbols *s);

/* Give up the fetches under way (they count as not answered). */
void symbols_stop_fetching(struct symbols *s);

/*
 * A number that changes whenever the names of modules already added may
 * have changed (their debuginfo arrived).
 */
unsigned symbols_generation(const struct symbols *s);

/* How many modules have been added: the modules are 0 .. that - 1. */
size_t symbols_modules(const struct symbols *s);

/*
 * Call fn with every function of module number module (names demangled),
 * at their addresses in the target.
 */
void symbols_each_function(struct symbols *s, size_t module,
			   void (*fn)(void *ctx, const char *name,
				      uint64_t start, uint64_t end),
			   void *ctx);

/* The extent [lo, hi) of the function holding address; false if unknown. */
bool symbols_function_at(struct symbols *s, uint64_t address, uint64_t *lo,
			 uint64_t *hi);

/* Where a module lies in the target and in its file (pprof's mapping). */
struct symbols_mapping {
	size_t index;		/* the module's number */
	const char *path;
	uint64_t start, end;	/* extent in the target */
	uint64_t file_offset;	/* of start in the file */
	const uint8_t *build_id;
	size_t build_id_len;
};

/* The mapping of the module holding address; false if none of known extent. */
bool symbols_mapping(struct symbols *s, uint64_t address,
		     struct symbols_mapping *out);

/* The load bias of the module whose path, or file name, is name; 0 if none. */
uint64_t symbols_module_base(const struct symbols *s, const char *name);

#endif
