"""The IPC descriptor's checksums are a wire format between processes
(cpp/ipc_descriptor.hpp, version 1): the values an exporter writes are pinned
here through the Python path, as cpp/tests/ipc_descriptor_test.cpp pins them in
C++. A change to anything in-process (the IPC cache's key hash included) must
not change them; a new checksum is a new version."""
import pytest

pytestmark = [pytest.mark.no_driver_ok, pytest.mark.ours_only]

# (payload, size) -> (export checksum, size checksum), computed by the version-1
# code as it shipped before the C++ split (commit 145cdb7).
VECTORS = [
    (bytes(64), 4096, 0x075113096FC5A13E, 0x41B3C52DCD3D97C2),
    (bytes(range(64)), 4096, 0x4553FC2A31AC1A8A, 0xF44D6493D1C56A54),
    (b"\xff" * 64, 0, 0x90CF726A5D1168EB, 0x5550B73472F7D7BF),
    (bytes((i * 37 + 11) & 0xFF for i in range(64)), 2**64 - 1, 0x6C8A077461FFC36C, 0x4407E21EB5B95404),
]


@pytest.mark.parametrize("payload, size, export_checksum, size_checksum", VECTORS)
def test_version_one_known_answers(payload, size, export_checksum, size_checksum):
    from cuda.core._memory._ipc import _descriptor_checksums

    assert _descriptor_checksums(payload, size) == (export_checksum, size_checksum)
