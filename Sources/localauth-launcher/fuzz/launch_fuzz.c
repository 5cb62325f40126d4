/*
 * libFuzzer harness for what the launcher does with bytes it does not control: its argv
 * (split from the input at NUL bytes) and the text of a refusal, which it turns into a
 * result frame in place of the helper. That frame is checked with the module's own
 * decoder and result parser, so a refusal can never be a garbled frame or anything but
 * code -6 with a printable cause.
 *
 *   clang -std=c11 -D_GNU_SOURCE -g -fsanitize=fuzzer,address,undefined \
 *       -I Sources/localauth-launcher -I Sources/pam_localauth \
 *       Sources/localauth-launcher/fuzz/launch_fuzz.c Sources/localauth-launcher/launch.c \
 *       Sources/pam_localauth/frame.c Sources/pam_localauth/kv.c \
 *       Sources/pam_localauth/result_map.c -o build/launch_fuzz
 *   build/launch_fuzz -max_len=1024
 */
#include "frame.h"
#include "launch.h"
#include "result_map.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { MAX_ARGS = 64 };

static void check_args(const uint8_t *data, size_t size)
{
    char *copy = malloc(size + 1);
    if (copy == NULL)
        return;
    memcpy(copy, data, size);
    copy[size] = '\0';
    char *argv[MAX_ARGS + 1];
    int argc = 0;
    for (size_t i = 0; size > 0 && i <= size && argc < MAX_ARGS;) {
        argv[argc++] = copy + i;
        i += strlen(copy + i) + 1;
    }
    argv[argc] = NULL;
    if (la_launch_args_ok(argc, argv) != (argc == 1))
        __builtin_trap();
    free(copy);
}

static void check_refusal(const uint8_t *data, size_t size)
{
    char cause[1024];
    size_t n = size < sizeof cause - 1 ? size : sizeof cause - 1;
    memcpy(cause, data, n);
    cause[n] = '\0';
    unsigned char out[LA_LAUNCH_CAUSE_MAX + 128];
    size_t len = la_launch_refusal(cause, out, sizeof out);
    if (len == 0)
        __builtin_trap(); /* the launcher's own buffer always has room */
    struct la_frame f;
    size_t used;
    if (la_frame_decode(out, len, &f, &used) != LA_FRAME_OK || used != len || f.type != 'R')
        __builtin_trap();
    struct la_result r;
    const char *why;
    if (!la_result_parse(f.payload, f.payload_len, &r, &why) || r.code != -6)
        __builtin_trap();
    if (strncmp(r.cause, "localauth-launcher: ", 20) != 0)
        __builtin_trap();
    for (const char *c = r.cause; *c; c++)
        if (*c < 0x20 || *c > 0x7e)
            __builtin_trap();
    /* Too small a buffer is refused, never overrun. */
    if (len > 0 && la_launch_refusal(cause, out, len - 1) != 0)
        __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_args(data, size);
    check_refusal(data, size);
    return 0;
}
