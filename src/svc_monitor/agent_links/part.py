"""The agent links domain's part: agent tokens, the agents' WebSocket and their links."""

from svc_monitor.agent_links.api import router, socket_router
from svc_monitor.agent_links.service import AgentLinkService
from svc_monitor.agent_links.store import AgentTokenStore
from svc_monitor.parts import Part, Registry, Task
from svc_monitor.services import Services


def part(registry: Registry) -> Part:
    s = registry.get(Services)
    service = registry.add(
        AgentLinkService, AgentLinkService(AgentTokenStore(s.db), s.connections, s.bus)
    )
    # The socket at the root (/agent/ws) and under /api, as agents may be pointed at either.
    return Part(
        name="agent_links",
        routers=(router, socket_router),
        root_routers=(socket_router,),
        tasks=(Task("agent links", service.watch),),
    )
