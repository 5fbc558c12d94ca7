"""``DeviceMemoryResource.peer_accessible_by``: a live set of the peer devices
granted access to a memory pool, read from and written to the driver on each
use (upstream module path ``cuda.core._memory._peer_access_utils``).

Every write (``add``, ``discard``, the bulk operations and the property's
setter) becomes at most one ``cuMemPoolSetAccess`` call carrying all its
changes, through :func:`_set_pool_access`."""
from collections.abc import Iterator, MutableSet
from dataclasses import dataclass
from itertools import chain

from cuda.core._device import Device

__all__ = ["PeerAccessPlan", "PeerAccessibleBySetProxy"]


@dataclass(frozen=True)
class PeerAccessPlan:
    """A requested peer-access state: the peers wanted (sorted ordinals, owner
    excluded) and the ordinals to grant and to revoke to reach it."""
    target_ids: tuple
    to_add: tuple
    to_remove: tuple


def _resolve_peer_device_id(value):
    """The ordinal of `value`: a Device, a device ordinal, or None for the
    current device. TypeError/ValueError (from Device) for anything else."""
    if isinstance(value, Device):
        return value.device_id
    return Device(value).device_id


def normalize_peer_access_targets(owner_device_id, requested_devices, *, resolve_device_id):
    """The sorted, unique ordinals of `requested_devices`, without the owner."""
    ids = {resolve_device_id(d) for d in requested_devices}
    ids.discard(owner_device_id)
    return tuple(sorted(ids))


def _refuse_inaccessible(owner_device_id, ordinals, can_access_peer, noun="peer(s)"):
    refused = [i for i in ordinals if not can_access_peer(i)]
    if refused:
        raise ValueError(f"Device {owner_device_id} cannot access {noun}: {', '.join(map(str, refused))}")


def plan_peer_access_update(owner_device_id, current_peer_ids, requested_devices, *, resolve_device_id,
                            can_access_peer):
    """The plan that makes exactly `requested_devices` peers of the owner's pool,
    given the peers it has now. ValueError naming every requested device the
    owner cannot reach (``can_access_peer`` is asked only about new peers)."""
    target = normalize_peer_access_targets(owner_device_id, requested_devices, resolve_device_id=resolve_device_id)
    current = set(current_peer_ids)
    to_add = tuple(i for i in target if i not in current)
    to_remove = tuple(sorted(current.difference(target)))
    _refuse_inaccessible(owner_device_id, to_add, can_access_peer)
    return PeerAccessPlan(target, to_add, to_remove)


def _set_pool_access(mr, to_add, to_remove):
    """One ``cuMemPoolSetAccess`` granting read-write access to `to_add` and
    revoking it from `to_remove` (at least one of them not empty)."""
    mr._set_peer_access(tuple(to_add), tuple(to_remove))


def _apply_peer_access_diff(mr, to_add, to_remove):
    """Apply a grant/revoke diff in at most one driver call (none when empty)."""
    to_add = tuple(to_add)
    to_remove = tuple(to_remove)
    if to_add or to_remove:
        _set_pool_access(mr, to_add, to_remove)


def replace_peer_accessible_by(mr, devices):
    """Make exactly `devices` (Devices or ordinals; the owner is ignored) the
    peers of `mr`'s pool, in one driver call."""
    owner = mr.device_id
    plan = plan_peer_access_update(owner, mr._peer_ids(), devices, resolve_device_id=_resolve_peer_device_id,
                                   can_access_peer=Device(owner).can_access_peer)
    _apply_peer_access_diff(mr, plan.to_add, plan.to_remove)


class PeerAccessibleBySetProxy(MutableSet):
    """The peer devices granted read-write access to a memory pool, as a live
    set: reads ask the driver (``cuMemPoolGetAccess``), writes change it
    (``cuMemPoolSetAccess``), and nothing is cached, so every proxy of one
    pool agrees. Iterating yields :class:`~cuda.core.Device` objects;
    membership, ``add`` and ``discard`` take a Device or an ordinal, and the
    owning device is ignored. Each bulk operation (``update``, ``|=``, ``&=``,
    ``-=``, ``^=``, ``clear``) is one driver call. Every use raises
    :class:`RuntimeError` once the resource is closed."""

    __slots__ = ("_mr",)

    def __init__(self, mr):
        self._mr = mr

    @classmethod
    def _from_iterable(cls, it):
        return set(it)

    def _ids(self):
        return self._mr._peer_ids()

    def __contains__(self, value):
        ids = self._ids()
        try:
            ordinal = _resolve_peer_device_id(value)
        except (TypeError, ValueError):
            return False
        return ordinal in ids

    def __iter__(self) -> Iterator:
        return iter([Device(i) for i in self._ids()])

    def __len__(self):
        return len(self._ids())

    def add(self, value):
        """Grant `value` (a Device or ordinal) read-write access to the pool."""
        self._apply((value,), (), noun="peer")

    def discard(self, value):
        """Revoke `value`'s access to the pool (nothing if it has none)."""
        self._apply((), (value,))

    def clear(self):
        """Revoke every peer's access, in one driver call."""
        self._apply((), self._ids())

    def update(self, *others):
        """Grant access to every device in `others`, in one driver call."""
        self._apply(chain.from_iterable(others), ())

    def difference_update(self, *others):
        """Revoke access from every device in `others`, in one driver call."""
        self._apply((), chain.from_iterable(others))

    def intersection_update(self, *others):
        """Keep access only for the devices also in each of `others`, in one driver call."""
        owner = self._mr.device_id
        keep = set(self._ids())
        for other in others:
            keep &= set(normalize_peer_access_targets(owner, other, resolve_device_id=_resolve_peer_device_id))
        self._apply((), set(self._ids()) - keep)

    def symmetric_difference_update(self, other):
        """Toggle access for every device in `other`, in one driver call."""
        owner = self._mr.device_id
        current = set(self._ids())
        toggled = normalize_peer_access_targets(owner, other, resolve_device_id=_resolve_peer_device_id)
        self._apply([i for i in toggled if i not in current], [i for i in toggled if i in current])

    def __ior__(self, other):
        self.update(other)
        return self

    def __iand__(self, other):
        self.intersection_update(other)
        return self

    def __isub__(self, other):
        self.difference_update(other)
        return self

    def __ixor__(self, other):
        self.symmetric_difference_update(other)
        return self

    def __repr__(self):
        return f"PeerAccessibleBySetProxy({set(self)!r})"

    def _apply(self, additions, removals, *, noun="peer(s)"):
        """Grant `additions` and revoke `removals` (Devices or ordinals; the
        owner is dropped) in at most one ``cuMemPoolSetAccess``. New peers the
        owner cannot reach are a ValueError before any change."""
        owner = self._mr.device_id
        current = set(self._ids())
        add_ids = normalize_peer_access_targets(owner, additions, resolve_device_id=_resolve_peer_device_id)
        remove_ids = normalize_peer_access_targets(owner, removals, resolve_device_id=_resolve_peer_device_id)
        to_add = tuple(i for i in add_ids if i not in current)
        to_remove = tuple(i for i in remove_ids if i in current and i not in add_ids)
        _refuse_inaccessible(owner, to_add, Device(owner).can_access_peer, noun)
        _apply_peer_access_diff(self._mr, to_add, to_remove)
