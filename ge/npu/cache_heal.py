"""Numba's on-disk cache, read defensively: a damaged entry is quarantined and compiled again, with one warning.

Numba reads a cache index (`.nbi`: its version pickled, then the source stamp and the overloads) and data
files (`.nbc`) with bare `pickle.load`; an empty or truncated index (a full disk, a killed writer, a copied
tree) raised `EOFError: Ran out of input` from every later process that imported the kernel, until the user
found and deleted the file. Here the cache file class every Numba cache makes (numba/core/caching.py's
`IndexDataCacheFile`, looked up when a dispatcher enables its cache) is replaced by a subclass:
  Step 1. An index that cannot be read is moved aside (`<name>.<pid>.damaged`) and read as empty: the
          functions compile, and saving writes a fresh index.
  Step 2. A data file that cannot be unpickled is moved aside the same way and reported as missing (Numba's
          own answer to a vanished file): the function compiles again.
Each quarantine warns once, naming the file (thunk_cache.report: it also shows in Session.stats()).
Installed on import, by ge/npu/jitcache.py, before any kernel module enables its cache.
"""
from __future__ import annotations

import os

from numba.core import caching

from .thunk_cache import report



def quarantine(path: str, error: BaseException) -> None:
    moved = f"{path}.{os.getpid()}.damaged"
    try:
        os.replace(path, moved)
    except OSError:   # gone already (another process moved it), or read-only: still compile again
        moved = None
    where = f"moved to '{os.path.basename(moved)}'" if moved else "left in place"
    report(path, f"ge: Numba cache entry '{path}' is damaged ({type(error).__name__}: {str(error)[:120]}); "
                 f"{where}, the function compiles again")


class HealingCacheFile(caching.IndexDataCacheFile):
    """Numba's index and data cache files, with Steps 1-2."""

    def _load_index(self):
        try:
            return super()._load_index()
        except OSError:   # Numba's own answers (a missing index is {}); a permission problem stays one
            raise
        except Exception as e:  # noqa: BLE001 - anything else is an unreadable entry (EOFError, UnpicklingError...)
            quarantine(self._index_path, e)
            return {}

    def _load_data(self, name):
        try:
            return super()._load_data(name)
        except OSError:
            raise
        except Exception as e:  # noqa: BLE001 - as above
            quarantine(self._data_path(name), e)
            raise FileNotFoundError(self._data_path(name)) from None   # load() answers None: compile


def install() -> None:
    if caching.IndexDataCacheFile is not HealingCacheFile:
        caching.IndexDataCacheFile = HealingCacheFile


install()
