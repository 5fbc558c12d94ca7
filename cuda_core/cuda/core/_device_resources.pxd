from libcpp.vector cimport vector

from cuda.core._resource_handles cimport ContextHandle, DeviceResource


cdef class SMResource:
    cdef DeviceResource _resource
    cdef int _device_id
    cdef unsigned int _sm_count
    cdef unsigned int _min_partition_size
    cdef unsigned int _coscheduled_alignment
    cdef unsigned int _flags
    cdef bint _is_usable   # False for the groups of a dry-run split: they name no SMs
    cdef object __weakref__

    @staticmethod
    cdef SMResource _from_resource(const DeviceResource& res, int device_id, SMResource parent, bint is_usable)
    cdef object _split_by_count(self, object options, int n_groups, bint dry_run)
    cdef object _split_structured(self, object options, int n_groups, bint dry_run)


cdef class WorkqueueResource:
    cdef DeviceResource _config     # CU_DEV_RESOURCE_TYPE_WORKQUEUE_CONFIG: what configure() edits
    cdef DeviceResource _workqueue  # CU_DEV_RESOURCE_TYPE_WORKQUEUE
    cdef int _device_id
    cdef object __weakref__

    @staticmethod
    cdef WorkqueueResource _from_resources(const DeviceResource& config, const DeviceResource& workqueue,
                                           int device_id)


cdef class DeviceResources:
    cdef int _device_id
    cdef ContextHandle _h_context   # empty: the device's resources
    cdef object __weakref__

    @staticmethod
    cdef DeviceResources _of_device(int device_id)

    @staticmethod
    cdef DeviceResources _of_context(const ContextHandle& h_context, int device_id)
    cdef int _query(self, int type, DeviceResource* out) except -1


# The driver resources of `resources` (an iterable of SMResource and
# WorkqueueResource) for a green context, checked as upstream's create_context
# checks them (TypeError for anything else, ValueError for a dry-run group).
cdef vector[DeviceResource] context_resources(object resources) except *
