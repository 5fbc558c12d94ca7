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


# The payload (cpp/ipc_descriptor.hpp): 64 export bytes, then the version-1
# trailer: magic "IPD", version byte 1, both checksums little-endian.
@pytest.mark.parametrize("payload, size, export_checksum, size_checksum", VECTORS)
def test_version_one_payload_layout(payload, size, export_checksum, size_checksum):
    from cuda.core._memory._ipc import _descriptor_payload

    p = _descriptor_payload(payload, size)
    assert len(p) == 84
    assert p[:64] == payload
    assert p[64:68] == b"IPD\x01"
    assert int.from_bytes(p[68:76], "little") == export_checksum
    assert int.from_bytes(p[76:84], "little") == size_checksum


def test_descriptor_reduces_to_payload_and_size_like_upstream():
    """Upstream's tests take `payload, _ = desc.__reduce__()[1]` and rebuild with
    IPCBufferDescriptor._init(payload, size): exactly two items, no check at build."""
    from cuda.core._memory._ipc import IPCBufferDescriptor, _descriptor_payload

    payload = _descriptor_payload(bytes(range(64)), 4096)
    d = IPCBufferDescriptor._init(payload, 4096)
    func, args = d.__reduce__()
    assert args == (payload, 4096)
    assert func(*args) == d and func(*args).size == 4096
    short = IPCBufferDescriptor._init(b"\x00" * 8, 4096)   # upstream builds these; the import refuses them
    assert short.size == 4096
    with pytest.raises(TypeError):
        IPCBufferDescriptor._init("not bytes", 4096)


def test_allocation_handle_rejects_a_negative_fd_with_upstreams_text():
    from cuda.core._memory._ipc import IPCAllocationHandle

    with pytest.raises(ValueError, match=r"Invalid allocation handle \(fd\) -1: must be non-negative"):
        IPCAllocationHandle._init(-1, None)
