"""Agent tokens with user control on: an admin's to make and revoke, shown once, stored
as a hash, in the activity log; a member sees the links only."""

import hashlib

from sqlalchemy import select

from svc_monitor.agent_links.service import AgentLinkService
from svc_monitor.agent_links.store import agent_tokens
from tests.fixtures.workspace import Workspace

pytest_plugins = ["tests.fixtures.servers", "tests.fixtures.workspace"]


async def test_tokens_are_an_admins_and_every_change_is_in_the_activity_log(
    workspace: Workspace,
) -> None:
    ada = await workspace.join("Ada", role="admin")
    mo = await workspace.join("Mo", role="member")
    refused = await mo.client.post("/api/agent-tokens", json={"name": "edge"})
    assert refused.status_code == 403
    made = await ada.client.post("/api/agent-tokens", json={"name": "edge"})
    assert made.status_code == 201, made.text
    body = made.json()
    secret = body["token"]
    # Shown once: the list never has it, and storage keeps its SHA-256 only.
    listed = (await ada.client.get("/api/agent-tokens")).json()
    assert [t["name"] for t in listed] == ["edge"]
    assert secret not in str(listed)
    db = workspace.running.services.db
    rows = await db.fetch_all(select(agent_tokens))
    assert [r.token_hash for r in rows] == [hashlib.sha256(secret.encode()).hexdigest()]
    assert secret not in str([tuple(r) for r in rows])
    # Its connection is listed as an agent connection, down until the agent links.
    connection = (await ada.client.get(f"/api/connections/{body['connectionId']}")).json()
    assert connection["source"] == "agent"
    assert connection["host"].startswith("agent-")
    assert connection["port"] == 0
    # Members see the links, not the tokens.
    assert (await mo.client.get("/api/agents")).status_code == 200
    assert (await mo.client.get("/api/agent-tokens")).status_code == 403
    assert (await mo.client.delete(f"/api/agent-tokens/{body['id']}")).status_code == 403

    revoked = await ada.client.delete(f"/api/agent-tokens/{body['id']}")
    assert revoked.status_code == 200
    assert revoked.json()["revokedAt"] is not None
    created = await workspace.activity(action="POST /api/agent-tokens")
    assert [(e["actorName"], e["status"]) for e in created] == [("Ada", 201)]
    assert secret not in str(created)
    gone = await workspace.activity(action="DELETE /api/agent-tokens/{token_id}")
    assert [e["actorName"] for e in gone] == ["Ada"]


async def test_an_agent_connection_keeps_its_address_to_its_agent(workspace: Workspace) -> None:
    made = (await workspace.owner.client.post("/api/agent-tokens", json={"name": "e"})).json()
    edit = await workspace.owner.client.put(
        f"/api/connections/{made['connectionId']}", json={"host": "10.0.0.9"}
    )
    assert edit.status_code == 422
    assert edit.json()["fields"] == ["host"]
    assert "agent" in edit.json()["message"]
    renamed = await workspace.owner.client.put(
        f"/api/connections/{made['connectionId']}", json={"name": "edge-2"}
    )
    assert renamed.status_code == 200
    assert renamed.json()["name"] == "edge-2"
    direct = await workspace.owner.client.post(
        "/api/connections", json={"source": "agent", "name": "x", "host": "h", "port": 1}
    )
    assert direct.status_code == 422
    assert direct.json()["fields"] == ["source"]


async def test_deleting_an_agent_connection_refuses_its_token(workspace: Workspace) -> None:
    owner = workspace.owner.client
    made = (await owner.post("/api/agent-tokens", json={"name": "gone"})).json()
    service = workspace.app.state.registry.get(AgentLinkService)
    assert await service.authenticate(made["token"]) is not None
    assert (await owner.delete(f"/api/connections/{made['connectionId']}")).status_code == 204
    assert await service.authenticate(made["token"]) is None
