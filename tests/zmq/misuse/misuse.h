/* Checks shared by the misuse test's files (zmq_misuse.c, misuse_*.c): each records one call's
 * result against the answer libzmq 4.3.4 gives, and the run ends with a count of failures.
 *
 * The program is written against <zmq.h> only and built twice (linked to Debian's libzmq and to
 * strix's libzmq.so.5); every expectation runs against both, so the libzmq run proves it is
 * libzmq's real answer. misuse_strix is set for the strix run: it adds the calls libzmq itself
 * crashes or asserts on (see each one's comment), where strix must answer instead of crashing. */
#ifndef STRIX_TESTS_ZMQ_MISUSE_H
#define STRIX_TESTS_ZMQ_MISUSE_H

#include <errno.h>
#include <stddef.h>

#include <zmq.h>

/* 1 in the strix run: also run the calls libzmq crashes on. */
extern int misuse_strix;

/* Records one result; the macros below fill in the place and the call's text. */
void misuse_expect_err(const char* file, int line, const char* call, long rc, int err, int want_err);
void misuse_expect_null(const char* file, int line, const char* call, const void* p, int err, int want_err);
void misuse_expect_rc(const char* file, int line, const char* call, long rc, int err, long want_rc);
void misuse_expect_true(const char* file, int line, const char* what, int ok);

/* The call returns -1 and sets errno to want_err. */
#define EXPECT_ERR(call, want_err)                                       \
    do {                                                                 \
        errno = 0;                                                       \
        long rc_ = (long)(call);                                         \
        int e_ = errno;                                                  \
        misuse_expect_err(__FILE__, __LINE__, #call, rc_, e_, want_err); \
    } while (0)
/* The call returns NULL and sets errno to want_err. */
#define EXPECT_NULL(call, want_err)                                      \
    do {                                                                 \
        errno = 0;                                                       \
        const void* p_ = (const void*)(call);                            \
        int e_ = errno;                                                  \
        misuse_expect_null(__FILE__, __LINE__, #call, p_, e_, want_err); \
    } while (0)
/* The call returns want_rc. */
#define EXPECT_RC(call, want_rc)                                               \
    do {                                                                       \
        errno = 0;                                                             \
        long rc_ = (long)(call);                                               \
        int e_ = errno;                                                        \
        misuse_expect_rc(__FILE__, __LINE__, #call, rc_, e_, (long)(want_rc)); \
    } while (0)
#define EXPECT_TRUE(cond) misuse_expect_true(__FILE__, __LINE__, #cond, (cond) ? 1 : 0)

/* A zeroed block big enough to stand for any of libzmq's objects: a handle that is neither a
 * context, a socket nor a timer set (libzmq reads its tag from it and finds 0). */
extern void* misuse_garbage;

/* The sections, one per group of functions (misuse_api.c, misuse_msg.c, misuse_sockets.c,
 * misuse_term.c). Each creates and ends what it uses. */
void misuse_contexts(void);
void misuse_socket_handles(void);
void misuse_endpoints(void);
void misuse_options(void);
void misuse_send_recv(void);
void misuse_termination(void);
void misuse_messages(void);
void misuse_poll(void);
void misuse_proxy(void);
void misuse_z85_curve(void);
void misuse_timers(void);
void misuse_utilities(void);

/* Helpers for the sections: a context or socket that must be created (aborts the run if not). */
void* misuse_ctx(void);
void* misuse_socket(void* ctx, int type);
void misuse_close(void* socket);
void misuse_term(void* ctx);

#endif
