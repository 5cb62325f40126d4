/* See process_reset.h. */
#include "process_reset.h"

#include <linux/ioprio.h>
#include <sched.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

void la_reset_scheduling(void)
{
    struct sched_param param = { .sched_priority = 0 };
    /* Also drops SCHED_RESET_ON_FORK and any real-time or idle class. */
    sched_setscheduler(0, SCHED_OTHER, &param);
    setpriority(PRIO_PROCESS, 0, 0);
    cpu_set_t all;
    CPU_ZERO(&all);
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
        CPU_SET(cpu, &all); /* the kernel keeps only the CPUs this process may use */
    sched_setaffinity(0, sizeof all, &all);
    syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0, IOPRIO_PRIO_VALUE(IOPRIO_CLASS_NONE, 0));
    prctl(PR_SET_TIMERSLACK, 0UL, 0UL, 0UL, 0UL); /* 0: back to the default slack */
}

struct la_limit_want {
    int resource;
    const char *name;
    rlim_t want;
    rlim_t floor; /* the least that still works when `want` cannot be had */
};

static const struct la_limit_want la_limits[] = {
    { RLIMIT_FSIZE, "FSIZE", RLIM_INFINITY, RLIM_INFINITY },
    { RLIMIT_CPU, "CPU", RLIM_INFINITY, RLIM_INFINITY },
    { RLIMIT_DATA, "DATA", RLIM_INFINITY, RLIM_INFINITY },
    { RLIMIT_AS, "AS", RLIM_INFINITY, RLIM_INFINITY },
    { RLIMIT_NOFILE, "NOFILE", 1024, 64 },
    { RLIMIT_CORE, "CORE", 0, 0 },
};

static int la_limit(const struct la_limit_want *w)
{
    struct rlimit lim = { w->want, w->want };
    if (setrlimit(w->resource, &lim) == 0)
        return 0;
    if (getrlimit(w->resource, &lim) != 0)
        return -1;
    lim.rlim_cur = lim.rlim_max < w->want ? lim.rlim_max : w->want;
    if (lim.rlim_cur < w->floor || setrlimit(w->resource, &lim) != 0)
        return -1;
    return 0;
}

const char *la_reset_limits(void)
{
    const char *failed = NULL;
    for (size_t i = 0; i < sizeof la_limits / sizeof la_limits[0]; i++)
        if (la_limit(&la_limits[i]) != 0 && failed == NULL)
            failed = la_limits[i].name;
    return failed;
}
