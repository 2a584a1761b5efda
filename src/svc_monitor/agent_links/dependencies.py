"""FastAPI dependencies of the agent links domain."""

from typing import Annotated

from fastapi import Depends

from svc_monitor.agent_links.service import AgentLinkService
from svc_monitor.api.dependencies import registered

AgentLinksDep = Annotated[AgentLinkService, Depends(registered(AgentLinkService))]
