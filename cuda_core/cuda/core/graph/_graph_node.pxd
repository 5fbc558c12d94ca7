from libc.stdint cimport uintptr_t

from cuda.core._kernel_arg_handler cimport ParamHolder
from cuda.core._launch_config cimport LaunchConfig
from cuda.core._module cimport Kernel
from cuda.core._resource_handles cimport CUDA_KERNEL_NODE_PARAMS, CUDA_MEMCPY3D, CUdeviceptr


cdef class GraphNode:
    cdef object _graph        # the GraphDefinition it belongs to (keeps the CUgraph alive); None: no graph
    cdef uintptr_t _node      # the CUgraphNode; 0: the entry point (_is_entry) or a destroyed node
    cdef bint _is_entry       # the entry point of its definition (GraphDefinition._entry)
    cdef object __weakref__

    cdef int _check_valid(self) except -1


# The registered node object of `node`'s CUgraphNode when one of the same graph
# is alive, else `node` itself, registered (one Python object per node).
cdef GraphNode registered_node(GraphNode node)

# The registered node object of CUgraphNode `raw` in graph definition `graph`, or None.
cdef object lookup_node(object graph, uintptr_t raw)

# Operands and parameters of kernel, memset and memcpy nodes (_graph_definition, _subclasses).
cdef object resolve_operand(object operand, object owner, str side, CUdeviceptr* out)
cdef tuple fill_pattern(object value)
cdef unsigned int memory_type_of(CUdeviceptr ptr) except? 0
cdef int fill_memcpy_params(CUDA_MEMCPY3D* params, CUdeviceptr dst, CUdeviceptr src, size_t size) except -1
cdef LaunchConfig launch_config(object config)
cdef int fill_kernel_params(CUDA_KERNEL_NODE_PARAMS* params, Kernel kernel, LaunchConfig conf,
                            ParamHolder holder) except -1
