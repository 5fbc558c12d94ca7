# cython: language_level=3
# distutils: language = c++
"""Device resources for green contexts: SM partitions and workqueue
configurations (upstream module path ``cuda.core._device_resources``).

A resource is a value copied out of the driver (``CUdevResource``); it owns
nothing. :class:`SMResource` splits into disjoint groups, and
:meth:`Device.create_context` makes a green context from them. The driver calls
are the C++ core's (cpp/green_context.hpp); this module checks the options.
"""
from libc.stdint cimport intptr_t
from libc.string cimport memset
from libcpp.vector cimport vector

from cuda.core._resource_handles cimport (
    check, context_get_resource, ContextHandle, CUresult, device_get_resource, DeviceResource,
    driver_version_tuple, kDeviceResourceSm, kDeviceResourceWorkqueue, kDeviceResourceWorkqueueConfig,
    kWorkqueueScopeDeviceCtx, kWorkqueueScopeGreenCtxBalanced, resource_alignment, resource_min_partition,
    resource_set_sm_count, resource_set_wq_limit, resource_set_wq_scope, resource_sm_count, resource_sm_flags,
    resource_wq_device, resource_wq_limit, resource_wq_scope,
    sm_resource_split, sm_resource_split_by_count, SmGroupRequest,
)

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["DeviceResources", "SMResource", "SMResourceOptions", "WorkqueueResource", "WorkqueueResourceOptions"]

_UINT_MAX = 0xFFFFFFFF
_SCOPE_VALUES = {"device_ctx": kWorkqueueScopeDeviceCtx, "green_ctx_balanced": kWorkqueueScopeGreenCtxBalanced}


def _version_text(version):
    return ".".join(map(str, version))


# Green contexts need a CUDA 12.4 driver (upstream's message).
cdef int _check_green_context_support() except -1:
    cdef tuple version = driver_version_tuple()
    if version < (12, 4, 0):
        raise RuntimeError(f"Green context support requires CUDA driver 12.4 or newer "
                           f"(current driver: {_version_text(version)})")
    return 0


# Workqueue resources need a CUDA 13.1 driver (upstream's message).
cdef int _check_workqueue_support() except -1:
    cdef tuple version = driver_version_tuple()
    if version < (13, 1, 0):
        raise RuntimeError(f"WorkqueueResource requires CUDA driver 13.1 or newer "
                           f"(current driver: {_version_text(version)})")
    return 0


def _is_sequence(value):
    return isinstance(value, Sequence)


@dataclass
class SMResourceOptions:
    """Options for :meth:`SMResource.split`.

    Each field is a scalar (one group) or a sequence (one entry per group).
    ``count`` decides the number of groups: a scalar or None makes one group,
    a sequence ``len(count)`` groups; any other sequence field must have that
    length.

    Attributes
    ----------
    count : int or Sequence[int], optional
        The SMs requested per group; None (the default) lets the driver choose
        (the smallest partition before CUDA 13.1, every free SM from 13.1 on).
    coscheduled_sm_count : int or Sequence[int], optional
        SMs guaranteed to be co-scheduled in each group (CUDA 13.1 drivers).
    preferred_coscheduled_sm_count : int or Sequence[int], optional
        A larger co-scheduled count the driver tries for first (CUDA 13.1).
    backfill : bool or Sequence[bool], optional
        Let the driver fill a group with SMs that break co-scheduling, so that
        counts which are not multiples of the alignment can be served (CUDA 13.1;
        ignored by older drivers). Default False.
    """
    count: object = None
    coscheduled_sm_count: object = None
    preferred_coscheduled_sm_count: object = None
    backfill: object = False


@dataclass
class WorkqueueResourceOptions:
    """Options for :meth:`WorkqueueResource.configure`; None leaves a setting as is.

    Attributes
    ----------
    sharing_scope : WorkqueueSharingScopeType or str, optional
        ``"device_ctx"`` (share every workqueue of the device, the driver's
        default) or ``"green_ctx_balanced"`` (use workqueues disjoint from other
        balanced green contexts where possible).
    concurrency_limit : int, optional
        The expected maximum number of concurrent stream-ordered workloads,
        at least 1. The driver's cap is ``CUDA_DEVICE_MAX_CONNECTIONS``; a larger
        value is accepted, without a guarantee that submissions do not overlap.

    Raises
    ------
    ValueError
        If `sharing_scope` is not one of the two values, or `concurrency_limit` is below 1.
    TypeError
        If `concurrency_limit` is not a number.
    """
    sharing_scope: object = None
    concurrency_limit: object = None

    def __post_init__(self):
        scope = self.sharing_scope
        if scope is not None and not (isinstance(scope, str) and scope in _SCOPE_VALUES):
            raise ValueError(f"{scope!r} is not a valid WorkqueueSharingScopeType. "
                             f"Must be None, 'device_ctx' or 'green_ctx_balanced'")
        limit = self.concurrency_limit
        if limit is not None:
            if not isinstance(limit, (int, float)):
                raise TypeError(f"Expected int, got {type(limit).__name__}")
            limit = int(limit)
            if limit < 1:
                raise ValueError(f"concurrency_limit must be >= 1, got {limit}")
            self.concurrency_limit = limit


# The number of groups `options` asks for; checks that the per-group fields agree with `count`.
cdef int _group_count(object options) except -1:
    count = options.count
    cdef int n_groups
    cdef bint scalar
    if count is None or isinstance(count, int):
        n_groups, scalar = 1, True
    elif _is_sequence(count):
        n_groups, scalar = len(count), False
        if n_groups == 0:
            raise ValueError("count sequence must not be empty")
    else:
        raise TypeError(f"count must be int, Sequence, or None, got {type(count)}")
    for name in ("coscheduled_sm_count", "preferred_coscheduled_sm_count", "backfill"):
        value = getattr(options, name)
        if not _is_sequence(value):
            continue
        if scalar:
            raise ValueError(f"{name} is a Sequence but count is scalar; "
                             f"count must be a Sequence to specify multiple groups")
        if len(value) != n_groups:
            raise ValueError(f"{name} has length {len(value)}, expected {n_groups} (must match count)")
    return n_groups


def _per_group(value, int n_groups):
    return list(value) if _is_sequence(value) else [value] * n_groups


# A requested SM count: None is 0 (the driver chooses).
cdef unsigned int _count_value(object value) except? 0:
    if value is None:
        return 0
    if not isinstance(value, int):
        raise TypeError(f"count must be an int or None, got {type(value)}")
    if value < 0:
        raise ValueError(f"count must be non-negative, got {value}")
    if value > _UINT_MAX:
        raise OverflowError("value too large to convert to unsigned int")
    return <unsigned int>value


# A co-scheduling field: None is 0 (the driver's default).
cdef unsigned int _uint_field(object value, str name) except? 0:
    if value is None:
        return 0
    if not isinstance(value, int):
        raise TypeError(f"{name} must be an int or None, got {type(value)}")
    if value < 0:
        raise OverflowError("can't convert negative value to unsigned int")
    if value > _UINT_MAX:
        raise OverflowError("value too large to convert to unsigned int")
    return <unsigned int>value


cdef class SMResource:
    """A set of streaming multiprocessors: all of a device's
    (:attr:`DeviceResources.sm`), a green context's, or one group of a
    :meth:`split`. Not constructed directly; it owns nothing in the driver.
    """

    def __init__(self, *args, **kwargs):
        raise RuntimeError("SMResource cannot be instantiated directly. Use dev.resources.sm or SMResource.split().")

    @staticmethod
    cdef SMResource _from_resource(const DeviceResource& res, int device_id, SMResource parent, bint is_usable):
        cdef SMResource self = SMResource.__new__(SMResource)
        self._resource = res
        self._device_id = device_id
        self._sm_count = resource_sm_count(self._resource)
        self._min_partition_size = resource_min_partition(self._resource)
        self._coscheduled_alignment = resource_alignment(self._resource)
        self._flags = resource_sm_flags(self._resource)
        if parent is not None:   # a group the driver left these zero in takes its parent's
            if self._min_partition_size == 0:
                self._min_partition_size = parent._min_partition_size
            if self._coscheduled_alignment == 0:
                self._coscheduled_alignment = parent._coscheduled_alignment
        self._is_usable = is_usable
        return self

    @property
    def handle(self):
        """The address of this object's ``CUdevResource`` (valid while it lives)."""
        return <intptr_t>&self._resource

    @property
    def sm_count(self):
        """The number of SMs in this resource."""
        return self._sm_count

    @property
    def min_partition_size(self):
        """The fewest SMs a group split from this resource can have."""
        return self._min_partition_size

    @property
    def coscheduled_alignment(self):
        """The number of SMs guaranteed to be co-scheduled (group sizes are multiples of it)."""
        return self._coscheduled_alignment

    @property
    def flags(self):
        """The driver's flags of this resource (``CUdevSmResourceGroup_flags``; 0 before CUDA 13.1)."""
        return self._flags

    def split(self, options, *, dry_run=False):
        """Split this resource into disjoint groups and a remainder.

        Before CUDA 13.1 the driver's ``cuDevSmResourceSplitByCount`` is used:
        every group has the same count (rounded up to the partition size) and
        the co-scheduling fields are refused; from 13.1 ``cuDevSmResourceSplit``
        takes each group's fields as given.

        Parameters
        ----------
        options : SMResourceOptions
            The groups to make.
        dry_run : bool, optional
            Keyword-only. True: only report the groups' sizes; the groups
            returned cannot make a context. Default False.

        Returns
        -------
        tuple[list[SMResource], SMResource]
            ``(groups, remainder)``: the groups, and the SMs left over.

        Raises
        ------
        TypeError
            If `options` is not an SMResourceOptions, or a field has the wrong type.
        ValueError
            If a count is negative or the sequence fields disagree with `count`.
        RuntimeError
            If the driver is older than CUDA 12.4, or asks for what needs CUDA 13.1.
        CUDAError
            If the driver refuses the split (``CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION``
            when the SMs do not suffice).
        """
        if not isinstance(options, SMResourceOptions):
            raise TypeError(f"Argument 'options' has incorrect type (expected "
                            f"cuda.core._device_resources.SMResourceOptions, got {type(options).__name__})")
        cdef int n_groups = _group_count(options)
        _check_green_context_support()
        if driver_version_tuple() >= (13, 1, 0):
            return self._split_structured(options, n_groups, bool(dry_run))
        return self._split_by_count(options, n_groups, bool(dry_run))

    # cuDevSmResourceSplitByCount: n_groups groups of one count.
    cdef object _split_by_count(self, object options, int n_groups, bint dry_run):
        if options.coscheduled_sm_count is not None:
            raise RuntimeError("SMResourceOptions.coscheduled_sm_count requires the CUDA 13.1 structured SM split API")
        if options.preferred_coscheduled_sm_count is not None:
            raise RuntimeError(
                "SMResourceOptions.preferred_coscheduled_sm_count requires the CUDA 13.1 structured SM split API")
        counts = _per_group(options.count, n_groups)
        if any(c != counts[0] for c in counts[1:]):
            raise RuntimeError("CUDA 12 SM splitting only supports homogeneous count values; "
                               "use CUDA 13.1 or newer for per-group counts")
        cdef unsigned int min_count = _count_value(counts[0])
        cdef vector[DeviceResource] result = vector[DeviceResource](n_groups)
        cdef DeviceResource remaining
        cdef unsigned int made = n_groups
        cdef CUresult r
        memset(&remaining, 0, sizeof(DeviceResource))
        with nogil:
            r = sm_resource_split_by_count(result.data(), &made, self._resource, &remaining, min_count)
        check(r)
        groups = [SMResource._from_resource(result[i], self._device_id, self, not dry_run) for i in range(made)]
        return groups, SMResource._from_resource(remaining, self._device_id, self, not dry_run)

    # cuDevSmResourceSplit (CUDA 13.1): each group as asked.
    cdef object _split_structured(self, object options, int n_groups, bint dry_run):
        counts = _per_group(options.count, n_groups)
        coscheduled = _per_group(options.coscheduled_sm_count, n_groups)
        preferred = _per_group(options.preferred_coscheduled_sm_count, n_groups)
        backfill = _per_group(options.backfill, n_groups)
        cdef vector[SmGroupRequest] requests = vector[SmGroupRequest](n_groups)
        cdef int i
        for i in range(n_groups):
            requests[i].sm_count = _count_value(counts[i])
            requests[i].coscheduled_sm_count = _uint_field(coscheduled[i], "coscheduled_sm_count")
            requests[i].preferred_coscheduled_sm_count = _uint_field(preferred[i], "preferred_coscheduled_sm_count")
            requests[i].backfill = bool(backfill[i])
        cdef vector[DeviceResource] result
        cdef DeviceResource remainder
        cdef DeviceResource synthesized
        cdef DeviceResource* out = NULL
        cdef CUresult r
        if not dry_run:
            result.resize(n_groups)
            out = result.data()
        memset(&remainder, 0, sizeof(DeviceResource))
        with nogil:
            r = sm_resource_split(out, n_groups, self._resource, &remainder, requests.data())
        check(r)
        groups = []
        for i in range(n_groups):
            if dry_run:   # no resource was made: report the size the driver chose
                memset(&synthesized, 0, sizeof(DeviceResource))
                synthesized.type = kDeviceResourceSm
                resource_set_sm_count(synthesized, requests[i].sm_count)
                groups.append(SMResource._from_resource(synthesized, self._device_id, self, False))
            else:
                groups.append(SMResource._from_resource(result[i], self._device_id, self, True))
        return groups, SMResource._from_resource(remainder, self._device_id, self, not dry_run)


cdef class WorkqueueResource:
    """The workqueue configuration of a device or green context (the driver's
    ``CU_DEV_RESOURCE_TYPE_WORKQUEUE_CONFIG`` and ``CU_DEV_RESOURCE_TYPE_WORKQUEUE``
    as one object); needs a CUDA 13.1 driver. :meth:`configure` edits this copy,
    which a green context made from it then uses. Not constructed directly.
    """

    def __init__(self, *args, **kwargs):
        raise RuntimeError("WorkqueueResource cannot be instantiated directly. Use dev.resources.workqueue.")

    @staticmethod
    cdef WorkqueueResource _from_resources(const DeviceResource& config, const DeviceResource& workqueue,
                                           int device_id):
        cdef WorkqueueResource self = WorkqueueResource.__new__(WorkqueueResource)
        self._config = config
        self._workqueue = workqueue
        self._device_id = device_id
        return self

    @property
    def handle(self):
        """The address of this object's configuration ``CUdevResource`` (valid while it lives)."""
        return <intptr_t>&self._config

    @property
    def sharing_scope(self):
        """The sharing scope, a :class:`~cuda.core.typing.WorkqueueSharingScopeType`."""
        from cuda.core.typing import WorkqueueSharingScopeType   # cuda.core.typing imports _context, which imports this

        scope = resource_wq_scope(self._config)
        if scope == kWorkqueueScopeDeviceCtx:
            return WorkqueueSharingScopeType.DEVICE_CTX
        if scope == kWorkqueueScopeGreenCtxBalanced:
            return WorkqueueSharingScopeType.GREEN_CTX_BALANCED
        raise ValueError(f"Unknown sharing scope enum value: {scope}")

    @property
    def concurrency_limit(self):
        """The expected maximum number of concurrent stream-ordered workloads
        (from a device: the driver's cap, typically ``CUDA_DEVICE_MAX_CONNECTIONS``)."""
        return resource_wq_limit(self._config)

    @property
    def device(self):
        """The :class:`~cuda.core.Device` whose workqueues these are."""
        from cuda.core._device import Device   # _device imports this module

        return Device(self._device_id)

    def configure(self, options):
        """Change this configuration in place; fields of `options` that are None stay.

        Parameters
        ----------
        options : WorkqueueResourceOptions
            The sharing scope and concurrency limit to set.

        Raises
        ------
        TypeError
            If `options` is not a WorkqueueResourceOptions.
        OverflowError
            If the concurrency limit does not fit the driver's 32 bits.
        RuntimeError
            If the driver is older than CUDA 13.1.
        """
        if not isinstance(options, WorkqueueResourceOptions):
            raise TypeError(f"Argument 'options' has incorrect type (expected "
                            f"cuda.core._device_resources.WorkqueueResourceOptions, got {type(options).__name__})")
        _check_green_context_support()
        _check_workqueue_support()
        scope = options.sharing_scope
        limit = options.concurrency_limit
        if scope is not None and not (isinstance(scope, str) and scope in _SCOPE_VALUES):
            raise ValueError(f"{scope!r} is not a valid WorkqueueSharingScopeType. "
                             f"Must be None, 'device_ctx' or 'green_ctx_balanced'")
        if limit is not None and (not isinstance(limit, int) or limit < 1):
            raise ValueError(f"concurrency_limit must be >= 1, got {limit!r}")
        if limit is not None and limit > _UINT_MAX:
            raise OverflowError("value too large to convert to unsigned int")
        if scope is not None:
            resource_set_wq_scope(self._config, _SCOPE_VALUES[scope])
        if limit is not None:
            resource_set_wq_limit(self._config, <unsigned int>limit)


cdef class DeviceResources:
    """The hardware resources of a device (:attr:`Device.resources`) or of a
    context (:attr:`Context.resources`, :attr:`Stream.resources`: a green
    context's are what it was made with, a primary context's the device's).
    Each query asks the driver again. Not constructed directly.
    """

    def __init__(self, *args, **kwargs):
        raise RuntimeError("DeviceResources cannot be instantiated directly. Use dev.resources or ctx.resources.")

    @staticmethod
    cdef DeviceResources _of_device(int device_id):
        cdef DeviceResources self = DeviceResources.__new__(DeviceResources)
        self._device_id = device_id
        return self

    @staticmethod
    cdef DeviceResources _of_context(const ContextHandle& h_context, int device_id):
        cdef DeviceResources self = DeviceResources.__new__(DeviceResources)
        self._device_id = device_id
        self._h_context = h_context
        return self

    # The resource of `type` of the device or the context.
    cdef int _query(self, int type, DeviceResource* out) except -1:
        cdef CUresult r
        with nogil:
            if self._h_context:
                r = context_get_resource(self._h_context, type, out)
            else:
                r = device_get_resource(self._device_id, type, out)
        return check(r)

    @property
    def sm(self):
        """The :class:`SMResource` of the device or context (``CUDA_ERROR_NOT_SUPPORTED``
        as :class:`~cuda.core.CUDAError` from a driver without green contexts)."""
        cdef DeviceResource res
        _check_green_context_support()
        self._query(kDeviceResourceSm, &res)
        return SMResource._from_resource(res, self._device_id, None, True)

    @property
    def workqueue(self):
        """The :class:`WorkqueueResource` of the device or context; RuntimeError
        before CUDA 13.1."""
        cdef DeviceResource config
        cdef DeviceResource workqueue
        _check_green_context_support()
        _check_workqueue_support()
        self._query(kDeviceResourceWorkqueueConfig, &config)
        self._query(kDeviceResourceWorkqueue, &workqueue)
        return WorkqueueResource._from_resources(config, workqueue, resource_wq_device(config))


cdef vector[DeviceResource] context_resources(object resources) except *:
    cdef vector[DeviceResource] out
    for resource in resources:
        if isinstance(resource, SMResource):
            if not (<SMResource>resource)._is_usable:
                raise ValueError("dry-run SMResource objects cannot be used to create a context")
            out.push_back((<SMResource>resource)._resource)
        elif isinstance(resource, WorkqueueResource):
            out.push_back((<WorkqueueResource>resource)._config)
        else:
            raise TypeError(f"Unsupported context resource type: {type(resource)}")
    return out
