/* sd-bus and sd-login from libsystemd (Debian: libsystemd-dev). */
#include <systemd/sd-bus.h>
#include <systemd/sd-login.h>
#include <systemd/sd-id128.h>
#include <systemd/sd-daemon.h>
