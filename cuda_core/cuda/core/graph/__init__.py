"""cuda.core.graph: CUDA graphs (upstream cuda-core 1.2.2's module).

Graphs are built by stream capture (:class:`GraphBuilder`, conditional
branches included) or explicitly (:class:`GraphDefinition`: kernel, memset,
memcpy, host callback, event, memory, child graph and conditional nodes added
from the definition or from other nodes, edges edited through ``pred``/``succ``,
nodes destroyed, conditional nodes with body graphs controlled by a
:class:`GraphCondition`), and launched as an executable :class:`Graph`, whose
nodes can be changed through executable-node views (``graph[node]``) or a
whole-graph :meth:`Graph.update`.
"""
from cuda.core.graph import _graph_builder, _graph_definition, _graph_node, _subclasses
from cuda.core.graph._graph_builder import *  # noqa: F403
from cuda.core.graph._graph_definition import *  # noqa: F403
from cuda.core.graph._graph_node import *  # noqa: F403
from cuda.core.graph._subclasses import *  # noqa: F403

__all__ = [
    *_graph_builder.__all__,
    *_graph_definition.__all__,
    *_graph_node.__all__,
    *_subclasses.__all__,
]

del _graph_builder, _graph_definition, _graph_node, _subclasses
