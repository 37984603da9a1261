#include <strix/codec/crc32c.hpp>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#define STRIX_CRC32C_X86 1
#else
#define STRIX_CRC32C_X86 0
#endif

namespace strix {
namespace {

// Reflected representation: bit 31 is the coefficient of x^0, bit 0 that of x^31.
constexpr std::uint32_t castagnoli = 0x82F63B78u;

// Multiplies a polynomial by x modulo the generator.
constexpr std::uint32_t times_x(std::uint32_t b) noexcept { return (b & 1u) != 0 ? (b >> 1) ^ castagnoli : b >> 1; }

// Slicing-by-8: table[k][v] is the CRC register after feeding byte v followed by k zero bytes,
// so eight bytes are folded in with eight independent lookups instead of a serial chain of eight.
using slice_tables = std::array<std::array<std::uint32_t, 256>, 8>;

constexpr slice_tables make_slice_tables() noexcept {
    slice_tables t{};
    for (std::uint32_t v = 0; v < 256; ++v) {
        std::uint32_t c = v;
        for (int bit = 0; bit < 8; ++bit) c = times_x(c);
        t[0][v] = c;
    }
    for (std::size_t k = 1; k < 8; ++k) {
        for (std::size_t v = 0; v < 256; ++v) {
            const std::uint32_t prev = t[k - 1][v];
            t[k][v] = (prev >> 8) ^ t[0][prev & 0xFFu];
        }
    }
    return t;
}

constexpr slice_tables slice = make_slice_tables();

static_assert(slice[0][1] == 0xF26B8303u, "CRC32C byte table disagrees with the published table");

constexpr std::uint32_t load_le32(const unsigned char* p) noexcept {
    // Assembled byte by byte so the result does not depend on host byte order; gcc turns this
    // into a single load on little-endian targets.
    return static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) |
           (static_cast<std::uint32_t>(p[2]) << 16) | (static_cast<std::uint32_t>(p[3]) << 24);
}

std::uint32_t sw_update(std::uint32_t c, const unsigned char* p, std::size_t n) noexcept {
    while (n >= 8) {
        const std::uint32_t lo = c ^ load_le32(p);
        const std::uint32_t hi = load_le32(p + 4);
        c = slice[7][lo & 0xFFu] ^ slice[6][(lo >> 8) & 0xFFu] ^ slice[5][(lo >> 16) & 0xFFu] ^ slice[4][lo >> 24] ^
            slice[3][hi & 0xFFu] ^ slice[2][(hi >> 8) & 0xFFu] ^ slice[1][(hi >> 16) & 0xFFu] ^ slice[0][hi >> 24];
        p += 8;
        n -= 8;
    }
    while (n-- != 0) c = (c >> 8) ^ slice[0][(c ^ *p++) & 0xFFu];
    return c;
}

#if STRIX_CRC32C_X86

// The crc32 instruction has a latency of 3 cycles but a throughput of 1 per cycle, so one serial
// chain leaves two thirds of the unit idle. Long inputs are cut into chunks of three
// `stripe`-byte stripes, each run as its own chain; the three partial registers are then joined
// with the identity  reg(s, A|B) = shift(reg(s, A), |B|) ^ reg(0, B),  where shift(c, n)
// multiplies c by x^(8n) modulo the generator. For the fixed stripe length that multiplication is
// linear in c, so it is four table lookups.
constexpr std::size_t stripe = 256;

// a * b modulo the generator, both in reflected representation.
constexpr std::uint32_t mul_mod(std::uint32_t a, std::uint32_t b) noexcept {
    std::uint32_t product = 0;
    for (int i = 0; i < 32; ++i) {
        if ((a & (0x80000000u >> i)) != 0) product ^= b;
        b = times_x(b);
    }
    return product;
}

using shift_tables = std::array<std::array<std::uint32_t, 256>, 4>;

constexpr shift_tables make_shift_tables() noexcept {
    std::uint32_t x_pow = 0x80000000u;  // x^0
    for (std::size_t i = 0; i < 8 * stripe; ++i) x_pow = times_x(x_pow);
    shift_tables t{};
    for (std::size_t k = 0; k < 4; ++k) {
        for (std::uint32_t v = 0; v < 256; ++v) t[k][v] = mul_mod(v << (8 * k), x_pow);
    }
    return t;
}

constexpr shift_tables shift_by_stripe = make_shift_tables();

constexpr std::uint32_t shift_stripe(std::uint32_t c) noexcept {
    return shift_by_stripe[0][c & 0xFFu] ^ shift_by_stripe[1][(c >> 8) & 0xFFu] ^
           shift_by_stripe[2][(c >> 16) & 0xFFu] ^ shift_by_stripe[3][c >> 24];
}

static_assert(shift_stripe(0) == 0, "shift must be linear");

inline std::uint64_t load_u64(const unsigned char* p) noexcept {
    std::uint64_t v;
    std::memcpy(&v, p, sizeof v);  // x86 is little-endian and allows unaligned loads
    return v;
}

__attribute__((target("sse4.2"))) std::uint32_t hw_update(std::uint32_t c, const unsigned char* p,
                                                          std::size_t n) noexcept {
    std::uint64_t c0 = c;
    while (n >= 3 * stripe) {
        std::uint64_t c1 = 0;
        std::uint64_t c2 = 0;
        for (std::size_t i = 0; i < stripe; i += 8) {
            c0 = _mm_crc32_u64(c0, load_u64(p + i));
            c1 = _mm_crc32_u64(c1, load_u64(p + stripe + i));
            c2 = _mm_crc32_u64(c2, load_u64(p + 2 * stripe + i));
        }
        std::uint32_t joined = shift_stripe(static_cast<std::uint32_t>(c0)) ^ static_cast<std::uint32_t>(c1);
        joined = shift_stripe(joined) ^ static_cast<std::uint32_t>(c2);
        c0 = joined;
        p += 3 * stripe;
        n -= 3 * stripe;
    }
    while (n >= 8) {
        c0 = _mm_crc32_u64(c0, load_u64(p));
        p += 8;
        n -= 8;
    }
    auto c32 = static_cast<std::uint32_t>(c0);
    while (n-- != 0) c32 = _mm_crc32_u8(c32, *p++);
    return c32;
}

bool cpu_has_sse42() noexcept {
    __builtin_cpu_init();  // needed when called before the runtime's own constructors ran
    return __builtin_cpu_supports("sse4.2") != 0;
}

#else

std::uint32_t hw_update(std::uint32_t c, const unsigned char*, std::size_t) noexcept { return c; }
bool cpu_has_sse42() noexcept { return false; }

#endif

const unsigned char* bytes_of(std::span<const std::byte> data) noexcept {
    return reinterpret_cast<const unsigned char*>(data.data());
}

std::uint32_t hw_unchecked(std::span<const std::byte> data, std::uint32_t crc) noexcept {
    return ~hw_update(~crc, bytes_of(data), data.size());
}

using crc_fn = std::uint32_t (*)(std::span<const std::byte>, std::uint32_t) noexcept;

}  // namespace

std::uint32_t crc32c_sw(std::span<const std::byte> data, std::uint32_t crc) noexcept {
    return ~sw_update(~crc, bytes_of(data), data.size());
}

bool crc32c_hw_available() noexcept {
    static const bool available = cpu_has_sse42();
    return available;
}

std::uint32_t crc32c_hw(std::span<const std::byte> data, std::uint32_t crc) noexcept {
    if (!crc32c_hw_available()) {
        std::fputs("strix: crc32c_hw() called on a CPU without SSE4.2; use crc32c()\n", stderr);
        std::abort();
    }
    return hw_unchecked(data, crc);
}

std::uint32_t crc32c(std::span<const std::byte> data, std::uint32_t crc) noexcept {
    // Resolved on the first call (thread-safe static init); later calls are one indirect jump.
    static const crc_fn impl = crc32c_hw_available() ? &hw_unchecked : &crc32c_sw;
    return impl(data, crc);
}

}  // namespace strix
