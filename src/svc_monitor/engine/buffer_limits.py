"""The `client-output-buffer-limit` parameter as CONFIG GET answers it."""

# The class is `slave` on Redis and `replica` on Valkey 8+ (which accepts both when set).
_REPLICA_CLASSES = frozenset({"replica", "slave"})


def replica_hard_limit(value: str) -> int | None:
    """The replica class's hard limit in bytes (0: none), from CONFIG GET's normalised
    "normal 0 0 0 slave 268435456 67108864 60 pubsub ..."; None when the value does not
    hold one the way every supported version writes it."""
    words = value.split()
    for index in range(0, len(words) - 3, 4):
        if words[index].lower() in _REPLICA_CLASSES:
            hard = words[index + 1]
            return int(hard) if hard.isdigit() else None
    return None
