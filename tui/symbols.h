/*
 * Addresses of the target turned into function+offset, file:line and
 * module, from the modules the collector reported. Works after the target
 * has exited: modules are opened by path and checked by build id.
 */
#ifndef QSPTOP_SYMBOLS_H
#define QSPTOP_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

struct frame_info {
	uint64_t address;
	const char *symbol;	/* NULL when unknown */
	uint64_t offset;	/* address - symbol start */
	const char *file;	/* source file as DWARF names it, or NULL */
	int line;		/* 0 when unknown */
	const char *module;	/* module path, or NULL outside every module */
	uint64_t module_offset;	/* address - module load bias */
};

struct symbols;

/* Create an empty symbol resolver. */
struct symbols *symbols_new(void);
void symbols_free(struct symbols *s);

/*
 * Add a module loaded at bias base (dlpi_addr). A build id that does not
 * match the file on disk makes the module resolve to module+offset only.
 */
void symbols_add_module(struct symbols *s, const char *path, uint64_t base,
			const uint8_t *build_id, size_t build_id_len);

/*
 * Resolve an address. For a return address (is_return true) the symbol and
 * line are those of the call instruction (address - 1), the offset is still
 * relative to address. Strings stay valid until symbols_free().
 */
void symbols_resolve(struct symbols *s, uint64_t address, int is_return,
		     struct frame_info *out);

#endif
