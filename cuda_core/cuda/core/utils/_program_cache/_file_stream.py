"""The on-disk program cache: one file per entry, written atomically.

Layout under the cache directory: ``entries/<first 2 hex digits>/<other 62>``
(the SHA-256 of the key) holds each entry's raw bytes, and ``tmp/`` (owner
only) holds writes in progress. A write goes to a temporary file in ``tmp/``,
is flushed and fsync()ed, then os.replace()d over its entry, so a reader in
any thread or process sees the old bytes or the new ones, never a mix.
"""
import contextlib
import errno
import hashlib
import os
import tempfile
import threading
import time
from pathlib import Path
from typing import Iterator

from cuda.core._module import ObjectCode
from cuda.core.utils import _cache_dir

from ._abc import ProgramCacheResource, _as_key_bytes, _extract_bytes

_ENTRIES_SUBDIR = "entries"
_TMP_SUBDIR = "tmp"
# A temporary file this old belongs to a writer that died: sweeps remove it.
_TMP_STALE_AGE_SECONDS = 3600
# Windows: a file another process holds open cannot be replaced or removed for
# a moment; these waits (about 185 ms in all) ride that out.
_SHARING_VIOLATION_WINERRORS = (5, 32, 33)
_REPLACE_RETRY_DELAYS = (0.0, 0.005, 0.010, 0.020, 0.050, 0.100)

# Read once; tests flip it to exercise the Windows rules.
_IS_WINDOWS = os.name == "nt"

_UTIME_SUPPORTS_FD = os.utime in os.supports_fd


def _stat_key(st: os.stat_result) -> tuple[int, int, int]:
    """What tells "the same file" from "a file replaced since": inode, size, mtime."""
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def _default_cache_dir() -> Path:
    """``program-cache`` under the per-user cache root (see :mod:`cuda.core.utils._cache_dir`);
    this module's ``_IS_WINDOWS`` (or that module's) picks the Windows rule."""
    windows = _IS_WINDOWS or _cache_dir._IS_WINDOWS
    return _cache_dir._user_cache_root(windows) / "cuda-python" / "program-cache"


def _is_windows_sharing_violation(exc: BaseException) -> bool:
    """Whether ``exc`` is Windows' transient "file in use" error (never true on POSIX)."""
    if not _IS_WINDOWS or not isinstance(exc, PermissionError):
        return False
    winerror = getattr(exc, "winerror", None)
    if winerror is not None:
        return winerror in _SHARING_VIOLATION_WINERRORS
    return exc.errno == errno.EACCES


def _with_sharing_retry(op, *args, on_exhausted=None, **kwargs):
    """``op(*args, **kwargs)``, retried while Windows reports a sharing violation;
    when the waits run out, ``on_exhausted(last_error)`` (or the error re-raised)."""
    last = None
    for delay in _REPLACE_RETRY_DELAYS:
        if delay:
            time.sleep(delay)
        try:
            return op(*args, **kwargs)
        except PermissionError as exc:
            if not _is_windows_sharing_violation(exc):
                raise
            last = exc
    if on_exhausted is not None:
        return on_exhausted(last)
    raise last


def _replace_with_sharing_retry(tmp_path: Path, target: Path) -> bool:
    """os.replace(tmp_path, target); False only when Windows kept the target busy throughout."""
    def replace():
        os.replace(tmp_path, target)
        return True

    return bool(_with_sharing_retry(replace, on_exhausted=lambda _exc: False))


def _unlink_with_sharing_retry(path: Path) -> None:
    """Remove ``path`` (FileNotFoundError when it is gone), riding out Windows sharing violations."""
    _with_sharing_retry(Path.unlink, Path(path))


def _stat_and_read_with_sharing_retry(path: Path) -> tuple[os.stat_result, bytes]:
    """The stat and bytes of ``path``; FileNotFoundError when it is absent (or stays busy on Windows)."""
    def read():
        with open(path, "rb") as f:
            return os.stat(f.fileno()), f.read()   # the open file's stat (os.fstat is the atime bump's)

    def exhausted(last):
        raise FileNotFoundError(path) from last

    return _with_sharing_retry(read, on_exhausted=exhausted)


def _touch_atime(path: Path, st_before: os.stat_result) -> None:
    """Set ``path``'s access time to now (keeping its mtime) if it is still the file read.

    Eviction goes by access time, and relatime / noatime mounts and NTFS do not
    keep it on reads, so every hit sets it explicitly. The check against
    ``st_before`` (on the same open descriptor where the OS allows) keeps a
    file another writer replaced meanwhile from getting the old file's mtime.
    Best effort: an OSError leaves the time as it was.
    """
    now = time.time_ns()
    try:
        if _UTIME_SUPPORTS_FD:
            fd = os.open(path, os.O_RDONLY)
            try:
                if _stat_key(os.fstat(fd)) == _stat_key(st_before):
                    os.utime(fd, ns=(now, st_before.st_mtime_ns))
            finally:
                os.close(fd)
        elif _stat_key(path.stat()) == _stat_key(st_before):
            os.utime(path, ns=(now, st_before.st_mtime_ns))
    except OSError:
        pass


def _prune_if_stat_unchanged(path: Path, st_before: os.stat_result) -> None:
    """Remove ``path`` unless it was replaced since ``st_before`` was taken (or is already gone)."""
    try:
        if _stat_key(path.stat()) != _stat_key(st_before):
            return
        _unlink_with_sharing_retry(path)
    except FileNotFoundError:
        pass
    except PermissionError as exc:
        if not _is_windows_sharing_violation(exc):
            raise


class FileStreamProgramCache(ProgramCacheResource):
    """Persistent program cache backed by a directory of atomic files.

    Made for several processes at once: each write lands in a temporary file
    that is then os.replace()d over the entry, so no reader sees a partial
    entry. An entry file is the raw binary (cubin, PTX, LTO-IR), with no
    header or pickle, so NVIDIA's tools read it directly.

    Eviction (only with ``max_size_bytes``) removes the least recently *read*
    entries first: every hit sets the entry's access time.

    .. note:: Writes are best effort on Windows: when another process keeps
       the entry open for longer than the retries (about 185 ms), the write
       is dropped and the next lookup misses. Other errors propagate.

    .. note:: Entries are atomic for readers, not crash-durable: each file is
       fsync()ed before it is renamed into place, the directory is not.

    .. note:: Processes of different cuda.core versions may share a cache: a
       key from :func:`make_program_cache_key` includes the compiler's (and,
       for the driver linker, the driver's) version and a schema number, so an
       entry is never reused for a different toolchain; unreachable entries
       are removed by eviction.

    Parameters
    ----------
    path:
        Directory that owns the cache (created when missing). Default:
        ``$XDG_CACHE_HOME/cuda-python/program-cache`` (``~/.cache/...`` when
        unset) on Linux, ``%LOCALAPPDATA%\\cuda-python\\program-cache`` on Windows.
    max_size_bytes:
        Optional soft cap on the total size on disk, enforced when a write
        goes over it; concurrent writers may exceed it briefly.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, *, max_size_bytes: int | None = None) -> None:
        if max_size_bytes is not None:
            if isinstance(max_size_bytes, bool) or not isinstance(max_size_bytes, int):
                raise TypeError(f"max_size_bytes must be an int or None, not {type(max_size_bytes).__name__}")
            if max_size_bytes <= 0:
                raise ValueError("max_size_bytes must be positive or None (0 would evict every write)")
        if path is not None and not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"path must be a str, an os.PathLike or None, not {type(path).__name__}")
        self._root = Path(path) if path is not None else _default_cache_dir()
        self._entries = self._root / _ENTRIES_SUBDIR
        self._tmp = self._root / _TMP_SUBDIR
        self._max_size_bytes = max_size_bytes
        # The root and entries/ keep the default permissions (a group may share
        # a cache); files are created owner-only in tmp/ (itself owner-only) and
        # keep that mode when renamed into entries/. Existing directories are
        # left as they are.
        self._root.mkdir(parents=True, exist_ok=True)
        self._entries.mkdir(exist_ok=True)
        self._tmp.mkdir(exist_ok=True, mode=0o700)
        self._sweep_stale_tmp_files()
        # The running total that decides when eviction must scan; reseeded from
        # the disk at every scan, so other processes' writes are reconciled there.
        self._size_lock = threading.Lock()
        self._tracked_size_bytes = self._compute_total_size() if max_size_bytes is not None else 0

    def _path_for_key(self, key: object) -> Path:
        """The entry file of ``key``: its SHA-256 (a FIPS-approved hash; fixed length for any key)."""
        digest = hashlib.sha256(_as_key_bytes(key), usedforsecurity=False).hexdigest()
        return self._entries / digest[:2] / digest[2:]

    def __getitem__(self, key: object) -> bytes:
        path = self._path_for_key(key)
        try:
            st, data = _stat_and_read_with_sharing_retry(path)
        except FileNotFoundError:
            raise KeyError(key) from None
        _touch_atime(path, st)
        return data

    def __setitem__(self, key: object, value: bytes | bytearray | memoryview | ObjectCode) -> None:
        data = _extract_bytes(value)
        target = self._path_for_key(key)
        target.parent.mkdir(parents=True, exist_ok=True)
        self._tmp.mkdir(parents=True, exist_ok=True)  # someone may have removed it since
        old_size = 0
        if self._max_size_bytes is not None:
            try:
                old_size = target.stat().st_size
            except FileNotFoundError:
                old_size = 0
        fd, tmp_name = tempfile.mkstemp(prefix="entry-", dir=self._tmp)
        tmp_path = Path(tmp_name)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            committed = _replace_with_sharing_retry(tmp_path, target)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                tmp_path.unlink()
            raise
        if not committed:
            with contextlib.suppress(FileNotFoundError):
                tmp_path.unlink()
            return
        if self._max_size_bytes is None:
            return
        with self._size_lock:
            self._tracked_size_bytes += len(data) - old_size
            over = self._tracked_size_bytes > self._max_size_bytes
        if over:
            self._enforce_size_cap()

    def __delitem__(self, key: object) -> None:
        path = self._path_for_key(key)
        size = 0
        if self._max_size_bytes is not None:
            try:
                size = path.stat().st_size
            except FileNotFoundError:
                raise KeyError(key) from None
        try:
            _unlink_with_sharing_retry(path)
        except FileNotFoundError:
            raise KeyError(key) from None
        if self._max_size_bytes is not None:
            with self._size_lock:  # never below 0: a concurrent reseed may not have seen this file
                self._tracked_size_bytes = max(0, self._tracked_size_bytes - size)

    def __len__(self) -> int:
        """The number of entry files on disk (entries of an older key schema included, until evicted)."""
        return sum(1 for _ in self._iter_entry_paths())

    def clear(self) -> None:
        """Remove every entry (an entry another writer replaced meanwhile is kept), stale
        temporary files and empty entry directories; writes in flight are left alone."""
        snapshot = []
        for path in self._iter_entry_paths():
            try:
                snapshot.append((path, path.stat()))
            except FileNotFoundError:
                continue
        for path, st in snapshot:
            _prune_if_stat_unchanged(path, st)
        self._sweep_stale_tmp_files()
        try:
            subdirs = [Path(e.path) for e in os.scandir(self._entries) if e.is_dir(follow_symlinks=False)]
        except FileNotFoundError:
            subdirs = []
        for sub in subdirs:
            with contextlib.suppress(OSError):
                sub.rmdir()
        if self._max_size_bytes is not None:
            total = self._compute_total_size()
            with self._size_lock:
                self._tracked_size_bytes = total

    def _iter_entry_paths(self) -> Iterator[Path]:
        """Every entry file (two levels under entries/), skipping what vanishes meanwhile."""
        try:
            with os.scandir(self._entries) as outer:
                for sub in outer:
                    if not sub.is_dir(follow_symlinks=False):
                        continue
                    try:
                        with os.scandir(sub.path) as inner:
                            for entry in inner:
                                if entry.is_file(follow_symlinks=False):
                                    yield Path(entry.path)
                    except FileNotFoundError:
                        continue
        except FileNotFoundError:
            return

    def _iter_tmp_entries(self) -> Iterator[os.DirEntry]:
        """Every file in tmp/."""
        try:
            with os.scandir(self._tmp) as it:
                for entry in it:
                    if entry.is_file(follow_symlinks=False):
                        yield entry
        except FileNotFoundError:
            return

    def _sum_tmp_sizes(self) -> int:
        """Bytes in tmp/ (writes in flight take disk space too)."""
        total = 0
        for entry in self._iter_tmp_entries():
            with contextlib.suppress(FileNotFoundError):
                total += entry.stat(follow_symlinks=False).st_size
        return total

    def _compute_total_size(self) -> int:
        """Bytes on disk now: the entries plus tmp/."""
        total = 0
        for path in self._iter_entry_paths():
            with contextlib.suppress(FileNotFoundError):
                total += path.stat().st_size
        return total + self._sum_tmp_sizes()

    def _sweep_stale_tmp_files(self) -> None:
        """Remove temporary files older than _TMP_STALE_AGE_SECONDS (left by writers that died)."""
        cutoff = time.time() - _TMP_STALE_AGE_SECONDS
        for entry in self._iter_tmp_entries():
            try:
                if entry.stat(follow_symlinks=False).st_mtime < cutoff:
                    os.unlink(entry.path)
            except (FileNotFoundError, PermissionError):
                continue

    def _enforce_size_cap(self) -> None:
        """Evict least recently read entries until the disk total fits the cap.

        An entry replaced since the scan is not removed (its new size is counted
        instead), so eviction never deletes another process's fresh write.
        """
        if self._max_size_bytes is None:
            return
        self._sweep_stale_tmp_files()
        scanned = []
        total = 0
        for path in self._iter_entry_paths():
            try:
                st = path.stat()
            except FileNotFoundError:
                continue
            scanned.append((st.st_atime, path, st))
            total += st.st_size
        total += self._sum_tmp_sizes()
        if total > self._max_size_bytes:
            scanned.sort(key=lambda item: item[0])
            for _atime, path, st in scanned:
                if total <= self._max_size_bytes:
                    break
                try:
                    now = path.stat()
                except FileNotFoundError:
                    total -= st.st_size
                    continue
                if _stat_key(now) != _stat_key(st):
                    total += now.st_size - st.st_size
                    continue
                try:
                    _unlink_with_sharing_retry(path)
                    total -= st.st_size
                except FileNotFoundError:
                    total -= st.st_size
                except PermissionError as exc:
                    if not _is_windows_sharing_violation(exc):
                        raise
        with self._size_lock:
            self._tracked_size_bytes = total
