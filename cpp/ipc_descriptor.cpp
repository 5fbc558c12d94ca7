// ipc_descriptor.cpp - the descriptor checksums, exactly as ipc_descriptor.hpp
// specifies them. Do not share code with the cache key hash (ipc_import.cpp).
#include "ipc_descriptor.hpp"

#include <cstddef>
#include <cstring>

namespace cuda_core {

namespace {

// Word `i` of the export bytes, little-endian on every host (one load on a
// little-endian host: the hot import path checks every descriptor).
std::uint64_t export_word_le(const IpcExportBytes& bytes, std::size_t i) noexcept {
    std::uint64_t word;
    std::memcpy(&word, bytes.data() + 8 * i, sizeof word);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    word = __builtin_bswap64(word);
#endif
    return word;
}

}  // namespace

// Owns nothing; a pure function of the 64 bytes (version 1).
std::uint64_t ipc_export_checksum_v1(const IpcExportBytes& bytes) noexcept {
    std::uint64_t h = 0x0C0DAC0DE1BC5AFEull;
    for (std::size_t i = 0; i < bytes.size() / 8; ++i) {
        h = (h ^ export_word_le(bytes, i)) * 0xFF51AFD7ED558CCDull;
        h ^= h >> 32;
    }
    h *= 0xC4CEB9FE1A85EC53ull;
    return h ^ (h >> 29);
}

// Owns nothing; a pure function of (checksum, size) (version 1).
std::uint64_t ipc_size_checksum_v1(std::uint64_t export_checksum, std::uint64_t size) noexcept {
    std::uint64_t h = (export_checksum ^ 0x5151E5C0DEull) + size * 0x9E3779B97F4A7C15ull;
    h = (h ^ (h >> 31)) * 0xBF58476D1CE4E5B9ull;
    return h ^ (h >> 30);
}

}  // namespace cuda_core
