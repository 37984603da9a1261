/* Z85 and CURVE keys, timers and the utility functions (version, capabilities, error texts,
 * stopwatch, sleep, threads, atomic counters). */
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "misuse.h"

void misuse_z85_curve(void) {
    uint8_t bytes[8] = {0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B};
    char text[64];
    uint8_t back[64];
    EXPECT_NULL(zmq_z85_encode(text, bytes, 3), EINVAL);
    EXPECT_NULL(zmq_z85_encode(text, bytes, 7), EINVAL);
    EXPECT_TRUE(zmq_z85_encode(text, bytes, 0) == text && text[0] == '\0');
    EXPECT_TRUE(zmq_z85_encode(text, bytes, 8) == text && strcmp(text, "HelloWorld") == 0);
    EXPECT_TRUE(zmq_z85_decode(back, "HelloWorld") == back && memcmp(back, bytes, 8) == 0);
    EXPECT_NULL(zmq_z85_decode(back, ""), EINVAL);
    EXPECT_NULL(zmq_z85_decode(back, "abc"), EINVAL);
    EXPECT_NULL(zmq_z85_decode(back, "HelloWorl"), EINVAL);
    EXPECT_NULL(zmq_z85_decode(back, "Hell~"), EINVAL);    // not in the alphabet
    EXPECT_NULL(zmq_z85_decode(back, "Hell\x01"), EINVAL);  // below the alphabet
    EXPECT_NULL(zmq_z85_decode(back, "#####"), EINVAL);    // more than 32 bits

    char public_key[41], secret_key[41], derived[41];
    EXPECT_RC(zmq_curve_keypair(public_key, secret_key), 0);
    EXPECT_RC(zmq_curve_public(derived, secret_key), 0);
    EXPECT_TRUE(strcmp(derived, public_key) == 0);
    EXPECT_ERR(zmq_curve_public(derived, ""), EINVAL);
    EXPECT_ERR(zmq_curve_public(derived, "012345678901234567890123456789012345678"), EINVAL);
    char bad[41];
    memcpy(bad, secret_key, sizeof bad);
    bad[7] = '~';
    EXPECT_ERR(zmq_curve_public(derived, bad), EINVAL);
    if (misuse_strix) {
        // libzmq 4.3.4 dereferences these NULLs, and decodes a 45-character key into its 32-byte
        // buffer (a stack overflow); strix refuses them with EINVAL, libzmq's answer for every
        // other bad argument of these functions.
        EXPECT_NULL(zmq_z85_encode(NULL, bytes, 8), EINVAL);
        EXPECT_NULL(zmq_z85_encode(text, NULL, 8), EINVAL);
        EXPECT_NULL(zmq_z85_decode(NULL, "HelloWorld"), EINVAL);
        EXPECT_NULL(zmq_z85_decode(back, NULL), EINVAL);
        EXPECT_ERR(zmq_curve_keypair(NULL, secret_key), EINVAL);
        EXPECT_ERR(zmq_curve_keypair(public_key, NULL), EINVAL);
        EXPECT_ERR(zmq_curve_public(NULL, secret_key), EINVAL);
        EXPECT_ERR(zmq_curve_public(derived, NULL), EINVAL);
        char longer[46];
        memcpy(longer, secret_key, 40);
        memcpy(longer + 40, "HelloWorld", 5);
        longer[45] = '\0';
        EXPECT_ERR(zmq_curve_public(derived, longer), EINVAL);
    }
}

static int fired = 0;
static void on_timer(int id, void* arg) {
    (void)id;
    (void)arg;
    ++fired;
}

static void not_timers(void* bad) {
    EXPECT_ERR(zmq_timers_add(bad, 10, on_timer, NULL), EFAULT);
    EXPECT_ERR(zmq_timers_cancel(bad, 1), EFAULT);
    EXPECT_ERR(zmq_timers_set_interval(bad, 1, 10), EFAULT);
    EXPECT_ERR(zmq_timers_reset(bad, 1), EFAULT);
    EXPECT_ERR(zmq_timers_timeout(bad), EFAULT);
    EXPECT_ERR(zmq_timers_execute(bad), EFAULT);
    void* copy = bad;
    EXPECT_ERR(zmq_timers_destroy(&copy), EFAULT);
}

void misuse_timers(void) {
    not_timers(NULL);
    not_timers(misuse_garbage);
    void* ctx = misuse_ctx();
    not_timers(ctx);  // a context where a timer set is expected
    misuse_term(ctx);

    void* timers = zmq_timers_new();
    EXPECT_TRUE(timers != NULL);
    EXPECT_ERR(zmq_timers_add(timers, 10, NULL, NULL), EFAULT);
    EXPECT_ERR(zmq_timers_cancel(timers, 999), EINVAL);
    EXPECT_ERR(zmq_timers_set_interval(timers, 999, 10), EINVAL);
    EXPECT_ERR(zmq_timers_reset(timers, 999), EINVAL);
    EXPECT_RC(zmq_timers_timeout(timers), -1);  // no timer
    int id = zmq_timers_add(timers, 100000, on_timer, NULL);
    EXPECT_TRUE(id > 0);
    EXPECT_RC(zmq_timers_cancel(timers, id), 0);
    EXPECT_ERR(zmq_timers_cancel(timers, id), EINVAL);  // already cancelled
    EXPECT_RC(zmq_timers_timeout(timers), -1);
    fired = 0;
    // (Interval 0 makes libzmq's zmq_timers_execute loop forever: it re-adds the timer at "now".)
    id = zmq_timers_add(timers, 100000, on_timer, NULL);
    EXPECT_TRUE(id > 0);
    EXPECT_RC(zmq_timers_set_interval(timers, id, 1), 0);
    EXPECT_RC(zmq_timers_reset(timers, id), 0);
    usleep(3000);
    EXPECT_RC(zmq_timers_timeout(timers), 0);  // due
    EXPECT_RC(zmq_timers_execute(timers), 0);
    EXPECT_RC(fired, 1);
    EXPECT_RC(zmq_timers_destroy(&timers), 0);
    EXPECT_TRUE(timers == NULL);
    EXPECT_ERR(zmq_timers_destroy(&timers), EFAULT);
    if (misuse_strix) {
        // libzmq 4.3.4 dereferences the NULL pointer-to-pointer, and reads a destroyed set's
        // freed memory.
        EXPECT_ERR(zmq_timers_destroy(NULL), EFAULT);
        void* gone = zmq_timers_new();
        void* kept = gone;
        EXPECT_RC(zmq_timers_destroy(&gone), 0);
        EXPECT_ERR(zmq_timers_add(kept, 10, on_timer, NULL), EFAULT);
    }
}

static void set_flag(void* arg) { *(int*)arg = 1; }

static void errors_and_versions(void) {
    int major = 0, minor = 0, patch = -1;
    zmq_version(&major, &minor, &patch);
    EXPECT_RC(major, 4);
    EXPECT_RC(minor, 3);
    EXPECT_TRUE(patch >= 0);
    EXPECT_RC(zmq_has("ipc"), 1);
    EXPECT_RC(zmq_has("curve"), 1);
    EXPECT_RC(zmq_has("draft"), 0);
    EXPECT_RC(zmq_has("no-such-capability"), 0);
    EXPECT_RC(zmq_has(""), 0);
    EXPECT_TRUE(strcmp(zmq_strerror(EFSM), "Operation cannot be accomplished in current state") == 0);
    EXPECT_TRUE(strcmp(zmq_strerror(ENOCOMPATPROTO), "The protocol is not compatible with the socket type") == 0);
    EXPECT_TRUE(strcmp(zmq_strerror(ETERM), "Context was terminated") == 0);
    EXPECT_TRUE(strcmp(zmq_strerror(EMTHREAD), "No thread available") == 0);
    char libc_text[256];
    strncpy(libc_text, strerror(EINVAL), sizeof libc_text - 1);
    libc_text[sizeof libc_text - 1] = '\0';
    EXPECT_TRUE(strcmp(zmq_strerror(EINVAL), libc_text) == 0);
    strncpy(libc_text, strerror(12345), sizeof libc_text - 1);
    EXPECT_TRUE(strcmp(zmq_strerror(12345), libc_text) == 0);
    errno = 0;
    int rc = zmq_ctx_term(NULL);
    int reported = zmq_errno();
    EXPECT_TRUE(rc == -1 && reported == EFAULT);
    errno = EAGAIN;
    EXPECT_TRUE(zmq_errno() == EAGAIN);
}

static void counters_and_clocks(void) {
    void* counter = zmq_atomic_counter_new();
    EXPECT_TRUE(counter != NULL);
    EXPECT_RC(zmq_atomic_counter_value(counter), 0);
    zmq_atomic_counter_set(counter, 5);
    EXPECT_RC(zmq_atomic_counter_inc(counter), 5);  // the value before
    EXPECT_RC(zmq_atomic_counter_value(counter), 6);
    EXPECT_RC(zmq_atomic_counter_dec(counter), 1);  // 1 while not zero
    zmq_atomic_counter_set(counter, 1);
    EXPECT_RC(zmq_atomic_counter_dec(counter), 0);
    EXPECT_RC(zmq_atomic_counter_value(counter), 0);
    zmq_atomic_counter_destroy(&counter);
    EXPECT_TRUE(counter == NULL);

    void* watch = zmq_stopwatch_start();
    EXPECT_TRUE(watch != NULL);
    zmq_sleep(0);
    usleep(2000);
    unsigned long mid = zmq_stopwatch_intermediate(watch);
    EXPECT_TRUE(mid >= 2000);
    EXPECT_TRUE(zmq_stopwatch_stop(watch) >= mid);

    int flag = 0;
    void* thread = zmq_threadstart(set_flag, &flag);
    EXPECT_TRUE(thread != NULL);
    zmq_threadclose(thread);
    EXPECT_RC(flag, 1);
}

void misuse_utilities(void) {
    errors_and_versions();
    counters_and_clocks();
    if (misuse_strix) {
        // libzmq 4.3.4 dereferences every one of these NULLs; strix returns without a crash.
        EXPECT_RC(zmq_has(NULL), 0);
        zmq_version(NULL, NULL, NULL);
        EXPECT_RC(zmq_stopwatch_intermediate(NULL), 0);
        EXPECT_RC(zmq_stopwatch_stop(NULL), 0);
        EXPECT_TRUE(zmq_threadstart(NULL, NULL) == NULL);
        zmq_threadclose(NULL);
        zmq_atomic_counter_set(NULL, 1);
        EXPECT_RC(zmq_atomic_counter_inc(NULL), 0);
        EXPECT_RC(zmq_atomic_counter_dec(NULL), 0);
        EXPECT_RC(zmq_atomic_counter_value(NULL), 0);
        zmq_atomic_counter_destroy(NULL);
        void* none = NULL;
        zmq_atomic_counter_destroy(&none);
    }
}
