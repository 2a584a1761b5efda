"""What the pipe hands its input to: the two kinds of consumer, as protocols.

Live state, the INFO history, the detectors and the feature domains that judge or keep
what an instance says implement one or both; their parts declare them, and watching.py
lists them once, in part order, when it builds the Pipe. A consumer is told of every
observation (or every fact) of every connection, polled or pushed, and picks what it
wants: most take one fact type and return at once on the others. `forget` is called when
a connection stops being watched (removed, or edited, maybe to point at another server):
whatever it holds for that connection starts over.

A consumer may be synchronous (a detector keeping a few numbers per connection: no
coroutine per observation) or asynchronous (a writer to storage): the pipe awaits what
`observe` returns when it returns something.
"""

from collections.abc import Awaitable
from typing import Protocol

from svc_monitor.pipe.facts import Facts
from svc_monitor.pipe.observation import Observation


class ObservationConsumer(Protocol):
    """Takes each INFO-shaped Observation."""

    def observe(self, observation: Observation) -> Awaitable[None] | None: ...

    def forget(self, connection_id: str) -> None: ...


class FactsConsumer(Protocol):
    """Takes the facts of the polls other than INFO (pipe/facts.py), polled or pushed."""

    def observe_facts(self, connection_id: str, facts: Facts) -> Awaitable[None] | None: ...

    def forget(self, connection_id: str) -> None: ...
