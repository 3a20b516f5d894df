/*
 * Redirecting a running process's lock calls to the hooks by rewriting GOT
 * slots, for a collector that was dlopen'ed rather than preloaded. Collector
 * thread only.
 */
#ifndef QSPTOP_GOT_H
#define QSPTOP_GOT_H

#include <stdbool.h>

/* Point every matching slot of every loaded module at our hooks. */
void got_patch_all(void);

/*
 * On every scan while patched: patch modules loaded since, forget those
 * unloaded, and check once more the slots the last pass wrote.
 */
void got_refresh(void);

/* Put back every slot still pointing at a hook; forget all slots. */
void got_restore_all(void);

/*
 * Patch the unlock slots (holders tracked) or put them back, alone: the
 * lock slots stay as they are, patched or bound by the loader.
 */
void got_set_holders(bool on);

/* Whether slots are patched (between got_patch_all and got_restore_all). */
bool got_active(void);

#endif
