"""Server and release versions, ordered by `packaging.version` (PEP 440).

What the engines report parses as is: "7.2.4", "9.1.2", Valkey's unstable "255.255.255",
Redis's pre-release numbering (8.0-M02 reports "7.9.225", below 8.0.0), and a
pre-release suffix ("8.0.0-rc1" < "8.0.0-rc2" < "8.0.0"; `engine_version` adds Valkey's
valkey_release_stage that way). A string that is not a version gets a defined answer, None,
never an exception.
"""

from packaging.version import InvalidVersion, Version

# Longer than any real version; also keeps int() away from its 4,300-digit limit.
_MAX_LENGTH = 64


def server_version(text: str) -> Version | None:
    """`text` as a comparable version, or None when it is not one."""
    if len(text) > _MAX_LENGTH:
        return None
    try:
        return Version(text)
    except InvalidVersion:
        return None


def release_parts(text: str) -> tuple[int, int, int]:
    """(major, minor, patch) of `text`, pre-release ignored (the features of 8.1.0-rc1 are
    8.1's); missing parts are 0 and a string that is not a version is (0, 0, 0), which
    every feature gate reads as too old."""
    version = server_version(text)
    if version is None:
        return (0, 0, 0)
    major, minor, patch = (*version.release, 0, 0)[:3]
    return (major, minor, patch)


def is_newer(candidate: str, than: str) -> bool:
    """Whether `candidate` is a later version than `than`; False when either is not one."""
    new, old = server_version(candidate), server_version(than)
    return new is not None and old is not None and new > old
