/* Life cycle of the collector inside the target process. */
#ifndef QSPTOP_COLLECTOR_H
#define QSPTOP_COLLECTOR_H

/* Exported: qsptop -p calls it in a forked child whose thread never ran. */
void qsptop_wake(void);

#endif
