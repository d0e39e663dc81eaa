/* check.h - minimal assertion helpers for the C tests (exit 0 pass, 1 fail, 77 skip). */
#ifndef PYQ_TEST_CHECK_H
#define PYQ_TEST_CHECK_H
#include <stdio.h>
#include <stdlib.h>

static int check_failures;

#define CHECK(cond)                                                              \
    do {                                                                         \
        if (!(cond)) {                                                           \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
            check_failures++;                                                    \
        }                                                                        \
    } while (0)

#define CHECK_EQ(a, b)                                                           \
    do {                                                                         \
        long long va_ = (long long)(a), vb_ = (long long)(b);                    \
        if (va_ != vb_) {                                                        \
            fprintf(stderr, "%s:%d: CHECK_EQ failed: %s = %lld, %s = %lld\n",    \
                    __FILE__, __LINE__, #a, va_, #b, vb_);                       \
            check_failures++;                                                    \
        }                                                                        \
    } while (0)

#define CHECK_DONE(name)                                                         \
    do {                                                                         \
        if (check_failures) {                                                    \
            fprintf(stderr, "%s: %d check(s) failed\n", name, check_failures);  \
            return 1;                                                            \
        }                                                                        \
        printf("%s: ok\n", name);                                                \
        return 0;                                                                \
    } while (0)
#endif
