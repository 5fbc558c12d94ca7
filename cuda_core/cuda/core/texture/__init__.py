"""Texture and surface APIs for ``cuda.core``: opaque CUDA arrays, mipmapped
arrays, and the bindless texture and surface objects built on them.

Import these types from here, e.g.::

    from cuda.core.texture import OpaqueArray, TextureObject, TextureObjectOptions

The associated enumerations (:class:`~cuda.core.typing.ArrayFormatType`,
:class:`~cuda.core.typing.AddressModeType`,
:class:`~cuda.core.typing.FilterModeType`,
:class:`~cuda.core.typing.ReadModeType`) live in :mod:`cuda.core.typing`.
Objects are made by :meth:`cuda.core.Device.create_opaque_array`,
:meth:`~cuda.core.Device.create_mipmapped_array`,
:meth:`~cuda.core.Device.create_texture_object` and
:meth:`~cuda.core.Device.create_surface_object`.
"""

from cuda.core.texture._array import OpaqueArray, OpaqueArrayOptions
from cuda.core.texture._mipmapped_array import MipmappedArray, MipmappedArrayOptions
from cuda.core.texture._surface import SurfaceObject
from cuda.core.texture._texture import ResourceDescriptor, TextureObject, TextureObjectOptions

__all__ = [
    "MipmappedArray",
    "MipmappedArrayOptions",
    "OpaqueArray",
    "OpaqueArrayOptions",
    "ResourceDescriptor",
    "SurfaceObject",
    "TextureObject",
    "TextureObjectOptions",
]
