"""Imported when any Python starts in an environment where tunetrack is installed
(``tunetrack-hooks.pth`` in site-packages holds ``import _tunetrack_hooks``), so that frameworks find
tunetrack without a line of the user's code: ``report_to="tunetrack"`` in Transformers, and under
``tunetrack run`` the adapters attaching themselves (``tunetrack.attach.hooks``).

It must cost a Python start nothing: it imports nothing (``sys`` and ``os`` are loaded already) and
only puts a finder first on ``sys.meta_path``. The finder answers only for the few framework modules
in ``WATCHED``: it lets the other finders find them, and once such a module has run, hands it to
``tunetrack.attach.hooks.imported``. ``TUNETRACK_HOOKS=0`` turns it off. It lives outside the
``tunetrack`` package because importing that package would import ``typing`` (milliseconds at
every start). The package's own code is reached only when a watched module is imported.
"""

import os
import sys

#: the modules whose import tunetrack waits for (``tunetrack.attach.hooks.PATCHES`` says what it does)
WATCHED = frozenset(
    {
        "transformers.integrations.integration_utils",
        "transformers.trainer_callback",
        "accelerate.accelerator",
        "torchtune.config._instantiate",
        "swift.callbacks",
    }
)


class AfterImport:
    """A meta path finder that finds nothing itself: it wraps the loader of a watched module."""

    def find_spec(self, name, path=None, target=None):  # type: ignore[no-untyped-def]
        if name not in WATCHED:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if loader is not None and hasattr(loader, "exec_module"):
            run = loader.exec_module

            def exec_module(module):  # type: ignore[no-untyped-def]
                run(module)
                try:  # the framework's module is loaded whatever happens here
                    from tunetrack.attach.hooks import imported

                    imported(module)
                except Exception as exc:
                    sys.stderr.write(f"tunetrack: could not attach to {name}: {exc!r}\n")

            loader.exec_module = exec_module
        return spec


if os.environ.get("TUNETRACK_HOOKS", "1") != "0" and not any(
    type(f).__name__ == "AfterImport" for f in sys.meta_path
):
    sys.meta_path.insert(0, AfterImport())
