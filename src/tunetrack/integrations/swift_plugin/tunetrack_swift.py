"""The file ms-swift imports by path for ``--external_plugins``: it registers the ``tunetrack``
callback in ms-swift's table of Trainer callbacks and, when a Megatron-SWIFT command is running (it
imported ``swift.megatron`` before the plugins), in the Megatron one; importing ``swift.megatron``
otherwise would need Megatron-Core and CUDA. ``python -m tunetrack.integrations.swift --plugin-path``
prints where this file is. It is alone in its folder because ms-swift puts a plugin's folder on
``sys.path``: nothing here may shadow a real package."""

import sys

from tunetrack.integrations import swift

swift.register()
if "swift.megatron" in sys.modules:
    from tunetrack.integrations import swift_megatron

    swift_megatron.register()
