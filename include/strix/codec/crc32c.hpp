#pragma once
// CRC32C (Castagnoli): reflected polynomial 0x82F63B78, initial value and final xor 0xFFFFFFFF.
// This is the checksum of iSCSI (RFC 3720), SCTP and ext4, and the one the SSE4.2 `crc32`
// instruction computes, which is why the wire format uses it.
//
// Every entry point takes the running CRC of the bytes before `data` (0 for a fresh start) and
// returns the CRC of everything so far, so a checksum can be built piece by piece:
//
//     crc32c(b, crc32c(a)) == crc32c(a + b)
//
// All functions are pure: any thread may call them at any time.

#include <cstddef>
#include <cstdint>
#include <span>

namespace strix {

/// CRC32C of `data`, continuing from `crc` (the result of an earlier call, or 0 to start).
/// Uses the SSE4.2 instruction when the CPU has it, the table method otherwise; the choice is
/// made once, on the first call. Any thread.
std::uint32_t crc32c(std::span<const std::byte> data, std::uint32_t crc = 0) noexcept;

/// Same result as crc32c(), always computed in software (slicing-by-8 tables). Any thread.
std::uint32_t crc32c_sw(std::span<const std::byte> data, std::uint32_t crc = 0) noexcept;

/// Same result as crc32c(), always computed with the SSE4.2 `crc32` instruction.
/// Precondition: crc32c_hw_available(); calling it on a CPU without SSE4.2 aborts with a message
/// instead of faulting on an illegal instruction. Any thread.
std::uint32_t crc32c_hw(std::span<const std::byte> data, std::uint32_t crc = 0) noexcept;

/// True when this CPU executes SSE4.2 (and so crc32c_hw() may be called). Any thread.
bool crc32c_hw_available() noexcept;

}  // namespace strix
