/*
 * Writing the files qsptop exports without ever writing through a symbolic
 * link, or into a file, that someone else planted where qsptop writes.
 */
#ifndef QSPTOP_OUTFILE_H
#define QSPTOP_OUTFILE_H

#include <stddef.h>

/*
 * Write len bytes of text to a new file at path (O_CREAT|O_EXCL|O_NOFOLLOW):
 * when anything is there, a file or a link even dangling, nothing is
 * written. A failed write removes what it created. -1 with err.
 */
int outfile_create(const char *path, const char *text, size_t len, char *err,
		   size_t errlen);

/*
 * Replace path with a file holding len bytes of text: written to a new
 * temporary file of an unpredictable name beside it, then renamed over
 * path, which is replaced itself even when it is a link. On failure path
 * is left as it was and no temporary remains. -1 with err.
 */
int outfile_replace(const char *path, const char *text, size_t len,
		    char *err, size_t errlen);

/*
 * Why path cannot be created, error an errno: "PATH: directory DIR: why"
 * when its directory is at fault (missing, closed, read-only), DIR made
 * absolute when it exists; else "PATH: why".
 */
void outfile_error(const char *path, int error, char *err, size_t errlen);

#endif
