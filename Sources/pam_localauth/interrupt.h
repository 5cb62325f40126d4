/*
 * Ctrl-C while the module waits for the helper: SIGINT becomes a byte on a self-pipe, which
 * the wait loop sees next to the helper's pipe and turns into a `C` frame (the helper then
 * ends with userFallback and the password prompt follows). Without this, Ctrl-C would do
 * whatever the application does with SIGINT, usually end it.
 */
#ifndef LA_INTERRUPT_H
#define LA_INTERRUPT_H

#include <signal.h>
#include <stdbool.h>

struct la_interrupt {
    int read_fd;
    int write_fd;
    bool armed;
    struct sigaction old;
};

/* Creates the self-pipe (close-on-exec, non-blocking). False on failure. */
bool la_interrupt_open(struct la_interrupt *in);

/*
 * Installs the SIGINT handler, saving the application's disposition. When the application
 * ignores SIGINT nothing is installed: Ctrl-C then keeps meaning nothing.
 */
void la_interrupt_arm(struct la_interrupt *in);

/* Puts the application's disposition back; harmless when not armed. */
void la_interrupt_disarm(struct la_interrupt *in);

/* Empties the self-pipe; true when at least one SIGINT had arrived. */
bool la_interrupt_take(struct la_interrupt *in);

/* Disarms and closes the self-pipe. */
void la_interrupt_close(struct la_interrupt *in);

#endif
