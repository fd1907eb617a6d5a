"""Whether a file or directory in a cache could have been changed by anyone but this user.

Caches of files derived from installed packages (the MiniLM graph, the cl100k vocabulary)
may be pointed at a shared directory, or find one another account created first under a
shared temporary directory; what they read from or write to must then be left alone.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


def owned_privately(status: os.stat_result, *, regular: bool) -> bool:
    """Owned by this process's user (or by root, who could change anything anyway: a cache
    built into a container image) and not writable by group or others (and a regular file
    when `regular`). POSIX only: elsewhere the platform's access control decides."""
    if regular and not stat.S_ISREG(status.st_mode):
        return False
    if not hasattr(os, "getuid"):
        return True
    return status.st_uid in (os.getuid(), 0) and not status.st_mode & 0o022


def private_or_absent(directory: Path) -> bool:
    """True when `directory` (followed through links) is this user's alone, or is absent or
    unreachable (nothing can be read there; creating it makes it this user's)."""
    try:
        status = os.stat(directory)
    except OSError:
        return True
    return owned_privately(status, regular=False)
