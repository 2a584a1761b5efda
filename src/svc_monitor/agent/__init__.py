"""`svc-monitor agent`: the small process beside an instance nobody can dial, which dials
the service instead (docs/features/agent.md)."""
