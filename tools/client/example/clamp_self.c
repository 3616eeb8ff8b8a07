/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An application that clamps itself through libcppcgov-client: asks
 * cppcgovd to count its process's utilization as at least UTIL_MIN (and
 * at most UTIL_MAX) while it works, works for SECONDS seconds, and exits;
 * the clamp ends with the process.
 *
 *   cc -o clamp_self clamp_self.c $(pkg-config --cflags --libs cppcgov-client)
 *   ./clamp_self [SECONDS [UTIL_MIN [UTIL_MAX]]]
 *
 * Against a build tree rather than the installed library:
 * PKG_CONFIG_PATH=BUILD/meson-uninstalled for pkg-config, and
 * LD_LIBRARY_PATH=BUILD/tools/client to run it.
 *
 * Prints "handle N" once the clamp is held, then "done" (or why the daemon
 * ended the clamp early). Exits 1 when the clamp is refused, saying why.
 */
#define _POSIX_C_SOURCE 200809L
#include <cppcgov/client.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char** argv)
{
    const double seconds = argc > 1 ? atof(argv[1]) : 2.0;
    const uint16_t util_min = (uint16_t)(argc > 2 ? atoi(argv[2]) : 512);
    const uint16_t util_max = (uint16_t)(argc > 3 ? atoi(argv[3]) : 1024);

    cppcgov_hint* hint = NULL;
    cppcgov_error error;
    if (cppcgov_clamp_process(util_min, util_max, &hint, &error) < 0)
    {
        fprintf(stderr, "clamp_self: no clamp: %s\n", error.description);
        return 1;
    }
    printf("handle %llu\n", (unsigned long long)cppcgov_hint_get_handle(hint));
    fflush(stdout);

    /* The work: spin, looking now and then whether the clamp still holds. */
    volatile unsigned long sink = 0;
    const double end = now() + seconds;
    while (now() < end)
    {
        for (unsigned long i = 0; i < 1000000; ++i)
        {
            sink += i;
        }
        if (cppcgov_hint_process(hint) == 0)
        {
            printf("the clamp ended early: %s\n",
                   cppcgov_hint_get_end_reason(hint));
            break;
        }
    }
    printf("done\n");
    cppcgov_hint_free(hint);
    return 0;
}
