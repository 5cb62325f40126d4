/*
 * libFuzzer harness for the bytes the module reads from the helper: the frame decoder, then
 * the result parser on every `R` it finds, exactly as session.c chains them.
 *
 *   clang -std=c11 -D_GNU_SOURCE -g -fsanitize=fuzzer,address,undefined \
 *       -I Sources/pam_localauth Sources/pam_localauth/fuzz/frame_fuzz.c \
 *       Sources/pam_localauth/frame.c Sources/pam_localauth/kv.c \
 *       Sources/pam_localauth/result_map.c -o build/frame_fuzz
 *   build/frame_fuzz -max_len=9000
 */
#include "frame.h"
#include "result_map.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    while (size > 0) {
        struct la_frame f;
        size_t used = 0;
        if (la_frame_decode(data, size, &f, &used) != LA_FRAME_OK)
            break;
        if (used == 0 || used > size)
            __builtin_trap(); /* the decoder must always make progress within the input */
        if (f.type == 'R') {
            struct la_result r;
            const char *why;
            if (la_result_parse(f.payload, f.payload_len, &r, &why))
                (void)la_result_to_pam(r.code, false);
        }
        data += used;
        size -= used;
    }
    return 0;
}
