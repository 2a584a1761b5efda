"""The one entry of the pipe. Every Observation and every fact, polled or pushed, goes
through here to the consumers listed when the app was composed (watching.py), so a feature
written once serves both, and who takes what can be read in one place.

It is also where a replica's fencing holds: what a poll brings back for a connection this
replica no longer holds a trusted lease on (replicas/ownership.py) goes no further, so
no history row or event comes from a replica that another may already have replaced."""

from collections.abc import Callable, Sequence

from svc_monitor.pipe.consumers import FactsConsumer, ObservationConsumer
from svc_monitor.pipe.facts import Facts
from svc_monitor.pipe.observation import Observation


class Pipe:
    """Hands each Observation and each fact to its consumers, in the order given."""

    def __init__(
        self,
        *,
        observation_consumers: Sequence[ObservationConsumer],
        facts_consumers: Sequence[FactsConsumer],
        fenced: Callable[[str], bool] = lambda connection_id: False,
        judged: Callable[[Observation], None] = lambda observation: None,
    ) -> None:
        self._fenced = fenced
        self._judged = judged
        self._observation_consumers = tuple(observation_consumers)
        self._facts_consumers = tuple(facts_consumers)
        # Each consumer once, though many take both kinds.
        forgetting: dict[int, ObservationConsumer | FactsConsumer] = {}
        for consumer in self._observation_consumers:
            forgetting.setdefault(id(consumer), consumer)
        for facts_consumer in self._facts_consumers:
            forgetting.setdefault(id(facts_consumer), facts_consumer)
        self._forgetting = tuple(forgetting.values())

    @property
    def consumers(self) -> tuple[ObservationConsumer | FactsConsumer, ...]:
        """Every consumer, once each, in the order given."""
        return self._forgetting

    async def observe(self, observation: Observation) -> None:
        if not observation.pushed and self._fenced(observation.connection_id):
            return
        for consumer in self._observation_consumers:
            pending = consumer.observe(observation)
            if pending is not None:
                await pending
        self._judged(observation)

    async def put_facts(self, connection_id: str, facts: Facts) -> None:
        if self._fenced(connection_id):  # never true of a pushed connection
            return
        for consumer in self._facts_consumers:
            pending = consumer.observe_facts(connection_id, facts)
            if pending is not None:
                await pending

    def forget(self, connection_id: str) -> None:
        """The connection stopped being watched: every consumer drops its state for it."""
        for consumer in self._forgetting:
            consumer.forget(connection_id)
