/* sd-bus, sd-login and sd-journal from libsystemd (Debian: libsystemd-dev). */
#include <systemd/sd-bus.h>
#include <systemd/sd-login.h>
#include <systemd/sd-id128.h>
#include <systemd/sd-daemon.h>
/* sd_journal_sendv as a function (the macro adds the C caller's file and line). */
#define SD_JOURNAL_SUPPRESS_LOCATION 1
#include <systemd/sd-journal.h>
