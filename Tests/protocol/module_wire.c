/*
 * The module's side of the protocol table, for Tests/LocalAuthTests/ModuleWireTests.swift:
 * compiled there with the module's own request.c, kv.c, frame.c and result_map.c, it
 * prints what the module sends and knows, and the Swift test checks it against
 * LocalAuthProtocol's Request and ResultCode.
 *
 *   request NAME HEX   the `Q` frame (la_request_encode, la_frame_encode) of each request
 *                      the module sends: NAME is the case the Swift test expects
 *   code NUMBER NAME   every result code the module's table knows (la_result_name)
 */
#include "frame.h"
#include "request.h"
#include "result_map.h"

#include <stdio.h>
#include <stdlib.h>

static void print_request(const char *name, const struct la_request *req)
{
    char payload[LA_FRAME_MAX];
    uint8_t wire[LA_FRAME_WIRE_MAX];
    size_t len = 0, written = 0;
    char why[128];
    if (!la_request_encode(req, payload, sizeof payload, &len, why, sizeof why)) {
        fprintf(stderr, "module_wire: %s: %s\n", name, why);
        exit(1);
    }
    if (la_frame_encode('Q', payload, len, wire, sizeof wire, &written) != LA_FRAME_OK) {
        fprintf(stderr, "module_wire: %s: no frame\n", name);
        exit(1);
    }
    printf("request %s ", name);
    for (size_t i = 0; i < written; i++)
        printf("%02x", wire[i]);
    printf("\n");
}

int main(void)
{
    /* sudo's first line on a terminal, with two arguments. */
    const char *sudo_argv[] = { "debug", "prompt=concurrent" };
    struct la_args sudo_args = { .argc = 2, .argv = sudo_argv };
    struct la_request sudo = {
        .mode = "authenticate", .user = "alice", .service = "sudo", .tty = "/dev/pts/3", .rhost = "",
        .ruser = "", .silent = false, .first_line = false, .proof = NULL, .stdin_tty = true,
        .display = false, .caller_uid = 1000, .caller_pid = 4242, .args = &sudo_args,
    };
    snprintf(sudo.locale, sizeof sudo.locale, "de_DE.UTF-8");
    snprintf(sudo.language, sizeof sudo.language, "de:en");
    print_request("authenticate", &sudo);

    /* A lock screen's first line: silent, a display, no arguments, no locale. */
    struct la_args none = { .argc = 0, .argv = NULL };
    struct la_request locker = {
        .mode = "authenticate", .user = "bob", .service = "swaylock", .tty = "", .rhost = "",
        .ruser = "", .silent = true, .stdin_tty = false, .display = true, .caller_uid = 1001,
        .caller_pid = 77, .args = &none,
    };
    print_request("authenticate-locker", &locker);

    /* The `authsucc` line after a first line that found no reader. */
    const char *succ_argv[] = { "authsucc" };
    struct la_args succ_args = { .argc = 1, .argv = succ_argv, .reader_unreachable = true };
    struct la_request succ = {
        .mode = "authsucc", .user = "alice", .service = "sudo", .tty = "/dev/pts/3", .rhost = "",
        .ruser = "", .first_line = true, .proof = "authtok", .stdin_tty = true, .caller_uid = 1000,
        .caller_pid = 4242, .args = &succ_args,
    };
    print_request("authsucc-authtok", &succ);

    /* sshd's account phase of a login from elsewhere, without a first line. */
    struct la_request account = {
        .mode = "authsucc", .user = "carol", .service = "sshd", .tty = "ssh", .rhost = "192.0.2.7",
        .ruser = "", .first_line = false, .proof = "account", .caller_uid = 0, .caller_pid = 900,
        .args = &none,
    };
    print_request("authsucc-account", &account);

    for (long code = -2000; code <= 2000; code++) {
        const char *name = la_result_name(code);
        if (name != NULL)
            printf("code %ld %s\n", code, name);
    }
    return 0;
}
