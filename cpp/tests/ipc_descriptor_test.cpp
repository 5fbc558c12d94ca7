// ipc_descriptor_test.cpp - the IPC descriptor's wire checksums
// (ipc_descriptor.hpp): known-answer vectors pin version 1, so a change to any
// in-process code (the cache key hash included) that altered what travels
// between processes fails here. The vectors were computed by the version-1
// implementation as it shipped before the split (commit 145cdb7).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>

#include "ipc_descriptor.hpp"

namespace cuda_core {
namespace {

struct Vector {
    const char* name;
    IpcExportBytes bytes;
    std::uint64_t export_checksum;
    std::uint64_t size_checksum_4096;
    std::uint64_t size_checksum_0;
    std::uint64_t size_checksum_max;
};

IpcExportBytes filled(unsigned char (*byte)(std::size_t)) {
    IpcExportBytes b{};
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = byte(i);
    return b;
}

const Vector kVectors[] = {
    {"zero", filled([](std::size_t) -> unsigned char { return 0; }), 0x075113096fc5a13eull, 0x41b3c52dcd3d97c2ull,
     0xac7ddf016ac764dfull, 0xd164b8bcc9a18738ull},
    {"0..63", filled([](std::size_t i) { return static_cast<unsigned char>(i); }), 0x4553fc2a31ac1a8aull,
     0xf44d6493d1c56a54ull, 0x7f4b438fa674ff2bull, 0x05d067541796eb8cull},
    {"0xff", filled([](std::size_t) -> unsigned char { return 0xFF; }), 0x90cf726a5d1168ebull, 0x2d6d6077e0ad2b47ull,
     0x5550b73472f7d7bfull, 0x61450a9a8bad3727ull},
    {"i*37+11", filled([](std::size_t i) { return static_cast<unsigned char>(i * 37 + 11); }), 0x6c8a077461ffc36cull,
     0x3da5dc3352a0f7f7ull, 0x6180e88308855232ull, 0x4407e21eb5b95404ull},
};

TEST(IpcDescriptorWire, VersionOneKnownAnswers) {
    for (const Vector& v : kVectors) {
        SCOPED_TRACE(v.name);
        EXPECT_EQ(ipc_export_checksum_v1(v.bytes), v.export_checksum);
        EXPECT_EQ(ipc_size_checksum_v1(v.export_checksum, 4096), v.size_checksum_4096);
        EXPECT_EQ(ipc_size_checksum_v1(v.export_checksum, 0), v.size_checksum_0);
        EXPECT_EQ(ipc_size_checksum_v1(v.export_checksum, UINT64_MAX), v.size_checksum_max);
    }
}

TEST(IpcDescriptorWire, TheCurrentVersionIsOne) {
    EXPECT_EQ(kIpcDescriptorChecksumVersion, 1);
    for (const Vector& v : kVectors) {
        EXPECT_EQ(ipc_export_checksum(v.bytes), ipc_export_checksum_v1(v.bytes));
        EXPECT_EQ(ipc_size_checksum(v.export_checksum, 12345), ipc_size_checksum_v1(v.export_checksum, 12345));
    }
}

// The spec in ipc_descriptor.hpp, written out again from the text (words read
// little-endian byte by byte): an independent check that header and code agree.
TEST(IpcDescriptorWire, CodeMatchesTheWrittenSpecification) {
    for (const Vector& v : kVectors) {
        std::uint64_t h = 0x0C0DAC0DE1BC5AFEull;
        for (int i = 0; i < 8; ++i) {
            std::uint64_t w = 0;
            for (int k = 0; k < 8; ++k) w |= static_cast<std::uint64_t>(v.bytes[8 * i + k]) << (8 * k);
            h = (h ^ w) * 0xFF51AFD7ED558CCDull;
            h = h ^ (h >> 32);
        }
        h = h * 0xC4CEB9FE1A85EC53ull;
        EXPECT_EQ(h ^ (h >> 29), ipc_export_checksum_v1(v.bytes)) << v.name;
    }
}

// Every single-bit change of the 64 bytes changes the checksum (the point of
// the workaround for the driver's unchecked export data), and it is deterministic.
TEST(IpcDescriptorWire, EverySingleBitFlipChangesTheExportChecksum) {
    IpcExportBytes bytes{};
    for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<unsigned char>(i * 37 + 11);
    const std::uint64_t base = ipc_export_checksum(bytes);
    EXPECT_EQ(ipc_export_checksum(bytes), base);
    for (std::size_t i = 0; i < bytes.size(); ++i) {
        for (int bit = 0; bit < 8; ++bit) {
            IpcExportBytes flipped = bytes;
            flipped[i] ^= static_cast<unsigned char>(1u << bit);
            EXPECT_NE(ipc_export_checksum(flipped), base) << "byte " << i << " bit " << bit;
        }
    }
}

TEST(IpcDescriptorWire, TheSizeChecksumDependsOnTheSize) {
    const std::uint64_t c = ipc_export_checksum_v1(kVectors[1].bytes);
    EXPECT_NE(ipc_size_checksum_v1(c, 4096), ipc_size_checksum_v1(c, 4097));
    EXPECT_NE(ipc_size_checksum_v1(c, 4096), ipc_size_checksum_v1(c + 1, 4096));
}

// The payload trailer (version 1), pinned byte for byte: magic "IPD", version 1,
// then both checksums little-endian.
TEST(IpcDescriptorWire, PayloadVersionOneLayout) {
    const Vector& v = kVectors[1];
    IpcDescriptorPayload p{};
    ipc_descriptor_payload(v.bytes, 4096, &p);
    ASSERT_EQ(p.size(), 84u);
    for (std::size_t i = 0; i < 64; ++i) EXPECT_EQ(p[i], v.bytes[i]) << i;
    EXPECT_EQ(p[64], 'I');
    EXPECT_EQ(p[65], 'P');
    EXPECT_EQ(p[66], 'D');
    EXPECT_EQ(p[67], 1);
    std::uint64_t c = 0, sc = 0;
    for (int k = 0; k < 8; ++k) {
        c |= static_cast<std::uint64_t>(p[68 + k]) << (8 * k);
        sc |= static_cast<std::uint64_t>(p[76 + k]) << (8 * k);
    }
    EXPECT_EQ(c, v.export_checksum);
    EXPECT_EQ(sc, v.size_checksum_4096);
}

TEST(IpcDescriptorWire, CheckClassifiesEveryPayload) {
    const Vector& v = kVectors[3];
    IpcDescriptorPayload p{};
    ipc_descriptor_payload(v.bytes, 4096, &p);
    IpcExportBytes out{};
    EXPECT_EQ(ipc_descriptor_check(p.data(), p.size(), 4096, &out), IpcDescriptorCheck::kSizeVerified);
    EXPECT_EQ(out, v.bytes);
    EXPECT_EQ(ipc_descriptor_check(p.data(), p.size(), 4097, &out), IpcDescriptorCheck::kSizeUnverified);
    EXPECT_EQ(ipc_descriptor_check(nullptr, 0, 4096, &out), IpcDescriptorCheck::kTooShort);
    EXPECT_EQ(ipc_descriptor_check(p.data(), 63, 4096, &out), IpcDescriptorCheck::kTooShort);
    EXPECT_EQ(ipc_descriptor_check(p.data(), 64, 4096, &out), IpcDescriptorCheck::kNoTrailer);
    EXPECT_EQ(ipc_descriptor_check(p.data(), 66, 4096, &out), IpcDescriptorCheck::kBadTrailer);
    EXPECT_EQ(ipc_descriptor_check(p.data(), 83, 4096, &out), IpcDescriptorCheck::kBadTrailer);
    std::array<unsigned char, 85> longer{};
    std::copy(p.begin(), p.end(), longer.begin());
    EXPECT_EQ(ipc_descriptor_check(longer.data(), longer.size(), 4096, &out), IpcDescriptorCheck::kBadTrailer);
    IpcDescriptorPayload q = p;
    q[64] = 'X';
    EXPECT_EQ(ipc_descriptor_check(q.data(), q.size(), 4096, &out), IpcDescriptorCheck::kBadTrailer);
    q = p;
    q[67] = 2;
    EXPECT_EQ(ipc_descriptor_check(q.data(), q.size(), 4096, &out), IpcDescriptorCheck::kBadVersion);
    for (std::size_t i = 0; i < 64; ++i) {
        q = p;
        q[i] ^= 0x10;
        EXPECT_EQ(ipc_descriptor_check(q.data(), q.size(), 4096, &out), IpcDescriptorCheck::kCorrupted) << i;
    }
    q = p;
    q[70] ^= 1;   // the export checksum itself
    EXPECT_EQ(ipc_descriptor_check(q.data(), q.size(), 4096, &out), IpcDescriptorCheck::kCorrupted);
    q = p;
    q[80] ^= 1;   // the size checksum: the bytes are fine, the size is not vouched for
    EXPECT_EQ(ipc_descriptor_check(q.data(), q.size(), 4096, &out), IpcDescriptorCheck::kSizeUnverified);
}

}  // namespace
}  // namespace cuda_core
