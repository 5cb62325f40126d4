/* Module arguments; see args.h. */
#include "args.h"

#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include <security/pam_ext.h>

/* The value after `key=`, or NULL when arg is not that key. */
static const char *la_arg_value(const char *arg, const char *key)
{
    size_t n = strlen(key);
    return strncmp(arg, key, n) == 0 && arg[n] == '=' ? arg + n + 1 : NULL;
}

/*
 * Seconds as whole digits with up to three decimals ("2", "0.5"), parsed by hand because
 * strtod follows the host's LC_NUMERIC and sudo or login may have set a locale with `,`.
 */
static bool la_parse_seconds_ms(const char *s, long *ms)
{
    long whole = 0, frac = 0, scale = 1000;
    int digits = 0;
    for (; *s >= '0' && *s <= '9'; s++, digits++) {
        if (digits >= 7)
            return false;
        whole = whole * 10 + (*s - '0');
    }
    if (*s == '.') {
        for (s++; *s >= '0' && *s <= '9' && scale > 1; s++) {
            scale /= 10;
            frac += (*s - '0') * scale;
            digits++;
        }
    }
    if (*s != '\0' || digits == 0)
        return false;
    *ms = whole * 1000 + frac;
    return true;
}

static void la_args_timeout(pam_handle_t *pamh, const char *value, struct la_args *out)
{
    long ms;
    if (la_parse_seconds_ms(value, &ms) && ms >= LA_HELPER_TIMEOUT_MIN_MS
        && ms <= LA_HELPER_TIMEOUT_MAX_MS) {
        out->helper_timeout_ms = ms;
        return;
    }
    pam_syslog(pamh, LOG_ERR, "helper_timeout must be a number of seconds from %d to %d; "
               "keeping %ld", LA_HELPER_TIMEOUT_MIN_MS / 1000, LA_HELPER_TIMEOUT_MAX_MS / 1000,
               out->helper_timeout_ms / 1000);
}

/* The option table's spelling of "yes"; anything else is "no" (the helper reports it). */
static bool la_parse_yes(const char *v)
{
    return strcmp(v, "yes") == 0 || strcmp(v, "true") == 0 || strcmp(v, "1") == 0
        || strcmp(v, "on") == 0;
}

/* `service=PATH`: which service answers inside sudo and login, so only root moves it
 * (a test's own localauthd). */
static void la_args_service(pam_handle_t *pamh, const char *value, struct la_args *out)
{
    if (geteuid() != 0) {
        pam_syslog(pamh, LOG_NOTICE, "service= ignored: the caller is not root");
        return;
    }
    if (value[0] != '/') {
        pam_syslog(pamh, LOG_ERR, "service= must be an absolute path; keeping %s",
                   out->service_path);
        return;
    }
    out->service_path = value;
}

void la_args_parse(pam_handle_t *pamh, int argc, const char **argv, struct la_args *out)
{
    *out = (struct la_args){
        .unprivileged = geteuid() != 0,
        .service_path = LA_SERVICE_PATH,
        .helper_timeout_ms = LA_HELPER_TIMEOUT_DEFAULT_MS,
        .argc = argc,
        .argv = argv,
    };
    for (int i = 0; i < argc; i++) {
        const char *v;
        if (strcmp(argv[i], "authsucc") == 0)
            out->authsucc = true;
        else if (strcmp(argv[i], "debug") == 0)
            out->debug = true;
        else if ((v = la_arg_value(argv[i], "debug")) != NULL)
            out->debug = la_parse_yes(v);
        else if (la_arg_value(argv[i], "helper") != NULL)
            /* The module started a helper of its own before localauthd was the one door:
             * an old stack keeps working, without the fingerprint going anywhere else. */
            pam_syslog(pamh, LOG_NOTICE, "helper= is obsolete and ignored: only localauthd "
                       "starts the helper");
        else if ((v = la_arg_value(argv[i], "service")) != NULL)
            la_args_service(pamh, v, out);
        else if ((v = la_arg_value(argv[i], "helper_timeout")) != NULL)
            la_args_timeout(pamh, v, out);
        /* Everything else belongs to the helper's option table. */
    }
}
