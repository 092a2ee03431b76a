"""stepscope's startup hook: auto-instrumentation for `stepscope run`.

`stepscope run` puts the directory holding this file first on PYTHONPATH
and sets STEPSCOPE_AUTO=1 (unless --no-auto), so every Python interpreter
of the run (the command, torchrun's ranks, spawned workers, subprocesses)
runs it at start-up, through the `site` module.  It

  - runs the `sitecustomize` this file shadows, if there is one (a
    distribution's, a virtual environment's, the user's), exactly as
    `site` would have: its errors are reported by `site` as usual;
  - when STEPSCOPE_AUTO is 1, watches for the top-level `torch` module to
    finish importing, and only then imports stepscope and calls
    stepscope._auto.install(), which patches torch (see docs/python.md,
    "Auto-instrumentation").

A script that never imports torch pays one string comparison per module
it imports and is otherwise untouched: neither torch nor stepscope is
imported here.  Nothing here raises into the script: whatever goes wrong
costs one line on stderr and leaves auto-instrumentation off.
"""
import os as _os
import sys as _sys

_HERE = _os.path.dirname(_os.path.abspath(__file__))


def _warn(what):
    try:
        _sys.stderr.write("stepscope: auto-instrumentation off: %s\n" % (what,))
        _sys.stderr.flush()
    except Exception:
        pass


def _same_dir(entry):
    try:
        return _os.path.abspath(entry or ".") == _HERE
    except Exception:
        return False


def _import_auto():
    """stepscope._auto, found as the script would find stepscope (an
    installed one first; else _StepscopeFallback's)."""
    import importlib
    return importlib.import_module("stepscope._auto")


class _StepscopeFallback:
    """The last meta path finder: the top-level `stepscope` from the
    package `stepscope run` was built with (STEPSCOPE_PYTHON_PATH), for an
    interpreter that has none of its own.  Last, so an installed stepscope
    wins; a finder rather than a sys.path entry, so the script's sys.path
    stays what it would have been, and `import stepscope` works whether the
    script imports it before torch or after."""

    def __init__(self, where):
        self._where = where

    def find_spec(self, name, path=None, target=None):
        if name != "stepscope":
            return None
        import importlib.machinery
        return importlib.machinery.PathFinder.find_spec(name, [self._where])


def _add_fallback():
    where = _os.environ.get("STEPSCOPE_PYTHON_PATH", "")
    if where:
        _sys.meta_path.append(_StepscopeFallback(where))


def _start_stepscope():
    """torch has been imported: import stepscope and let it patch torch."""
    try:
        auto = _import_auto()
    except ImportError as e:
        if e.name == "stepscope._auto":
            _warn("the stepscope module found first (%s) has none; install this stepscope's "
                  "(pip install, docs/python.md)" % (getattr(_sys.modules.get("stepscope"), "__file__", "?"),))
        else:
            _warn("the stepscope module cannot be imported (%s); pip install it (docs/python.md), "
                  "or put it on PYTHONPATH" % (e,))
        return
    except BaseException as e:  # noqa: B902 - the script must never see it
        _warn("importing stepscope: %s: %s" % (type(e).__name__, e))
        return
    try:
        auto.install()
    except BaseException as e:  # noqa: B902 - the script must never see it
        _warn("%s: %s" % (type(e).__name__, e))


class _TorchWatch:
    """A meta path finder that finds nothing: it asks the finders after it
    for the top-level `torch`, and has the loader they return call
    _start_stepscope once torch's __init__ has run.  The loader keeps its
    type and identity (torch.__loader__ is what it would have been); only
    its exec_module is wrapped, on that one instance, until it returns."""

    def __init__(self):
        self._busy = False

    def find_spec(self, name, path=None, target=None):
        if name != "torch" or self._busy:
            return None
        self._busy = True
        try:
            spec = self._spec_after_me(name, path, target)
        finally:
            self._busy = False
        if spec is None:
            return None
        loader = spec.loader
        try:
            original = loader.exec_module
            had_own = "exec_module" in vars(loader)
        except Exception:
            return spec  # a loader we cannot wrap: torch imports as usual, uninstrumented

        def exec_module(module):
            try:
                original(module)
            finally:
                # the loader as it was, whatever happened
                try:
                    if had_own:
                        loader.exec_module = original
                    else:
                        del loader.exec_module
                except Exception:
                    pass
            self.remove()
            _start_stepscope()

        try:
            loader.exec_module = exec_module
        except Exception:
            pass  # a loader with __slots__: torch imports as usual, uninstrumented
        return spec

    def _spec_after_me(self, name, path, target):
        finders = list(_sys.meta_path)
        try:
            rest = finders[finders.index(self) + 1:]
        except ValueError:
            rest = finders
        for finder in rest:
            find = getattr(finder, "find_spec", None)
            if find is None:
                continue
            spec = find(name, path, target)
            if spec is not None:
                return spec
        return None

    def remove(self):
        try:
            _sys.meta_path.remove(self)
        except ValueError:
            pass


def _watch_for_torch():
    try:
        if "torch" in _sys.modules:  # imported by something that ran before us
            _start_stepscope()
        else:
            _sys.meta_path.insert(0, _TorchWatch())
    except Exception as e:
        _warn("the startup hook could not install itself (%s: %s)" % (type(e).__name__, e))


def _chain():
    """Import the sitecustomize this one shadows, as `site` would have.
    Returns the exception it raised (for `site` to report), or None.  Our
    directory leaves sys.path for good: the script sees the path it would
    have seen without stepscope (child processes get it from PYTHONPATH)."""
    me = _sys.modules.get("sitecustomize")
    _sys.path[:] = [p for p in _sys.path if not _same_dir(p)]
    _sys.modules.pop("sitecustomize", None)
    failure = None
    try:
        __import__("sitecustomize")
    except ImportError as e:
        if e.name != "sitecustomize":
            failure = e
    except BaseException as e:  # noqa: B902 - site reports it, as it would have
        failure = e
    # the import system returns whatever sys.modules holds when this file
    # ends: the user's module when there is one, else this one
    if "sitecustomize" not in _sys.modules and me is not None:
        _sys.modules["sitecustomize"] = me
    return failure


if _os.environ.get("STEPSCOPE_AUTO") == "1":
    _add_fallback()
    _watch_for_torch()
_failure = _chain()
if _failure is not None:
    try:
        raise _failure
    finally:
        _failure = None
