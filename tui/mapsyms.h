/*
 * The modules of a process without the collector, for the symbols: read
 * from /proc/PID/maps (path and load address), each file's program headers
 * read through the process's own mapping of it.
 */
#ifndef QSPTOP_MAPSYMS_H
#define QSPTOP_MAPSYMS_H

#include <stdbool.h>
#include <sys/types.h>

#include "symbols.h"

/* Add every file-backed module of pid to symbols; false if maps is unreadable. */
bool mapsyms_load(struct symbols *symbols, pid_t pid);

#endif
