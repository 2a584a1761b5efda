# syntax=docker/dockerfile:1
# svc-monitor in a container: build the wheel in one stage, run it from a slim one with no
# compilers and no test or AI extras. docs/deploy.md says how to build and run it, and
# tests/deploy/test_entrypoint.py runs this file's ENTRYPOINT, CMD, USER, ENV and
# HEALTHCHECK from a checkout, as uid 1001.

FROM python:3.11-slim AS builder
WORKDIR /src
COPY pyproject.toml README.md ./
COPY src ./src
# The project's own wheel only: its dependencies come as published wheels in the next stage.
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /dist .

# The agent beside an instance svc-monitor cannot dial (docs/features/agent.md): the same
# wheel, run as `svc-monitor agent`; no data directory, no port, no health check (it
# listens on nothing). Build it with `docker build --target agent`.
FROM python:3.11-slim AS agent
RUN python -m venv /opt/venv
RUN --mount=type=bind,from=builder,source=/dist,target=/dist \
    /opt/venv/bin/pip install --no-cache-dir /dist/svc_monitor-*.whl
RUN groupadd --system --gid 1001 svc \
    && useradd --system --uid 1001 --gid 1001 --no-create-home svc
ENV PATH="/opt/venv/bin:${PATH}" \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1
USER 1001
ENTRYPOINT ["svc-monitor"]
CMD ["agent"]

# The service: the last stage, what `docker build` makes by default.
FROM python:3.11-slim AS runtime
LABEL org.opencontainers.image.title="svc-monitor" \
      org.opencontainers.image.description="Self-hosted monitoring for Valkey and Redis"

# A venv of its own, so the runtime dependencies are the only packages beside pip.
RUN python -m venv /opt/venv
# Bind-mounted rather than copied: the wheel leaves no layer behind once installed.
RUN --mount=type=bind,from=builder,source=/dist,target=/dist \
    /opt/venv/bin/pip install --no-cache-dir /dist/svc_monitor-*.whl

# uid 1001 owns only the data directory: everything else stays read-only to the service.
RUN groupadd --system --gid 1001 svc \
    && useradd --system --uid 1001 --gid 1001 --home-dir /app --no-create-home svc \
    && mkdir -p /app/data \
    && chown 1001:1001 /app/data \
    && chmod 0770 /app/data
WORKDIR /app

# Persistent SQLite by default: mount a volume at /app/data (or set STORAGE_TYPE=postgres
# and STORAGE_URL). PYTHONUNBUFFERED so each log line reaches `docker logs` at once.
ENV PATH="/opt/venv/bin:${PATH}" \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PORT=3001 \
    BIND_HOST=0.0.0.0 \
    SVC_DATA_DIR=/app/data \
    STORAGE_TYPE=sqlite \
    STORAGE_SQLITE_FILEPATH=/app/data/audit.db

USER 1001
VOLUME ["/app/data"]
EXPOSE 3001

# Readiness (/api/health): 503 while starting or when storage does not answer, 200 even when
# a watched server is down, so a dead Valkey never marks the container unhealthy. urllib,
# because the slim image has no curl; it raises (exit 1) on any non-2xx answer.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:' + os.environ.get('PORT', '3001') + '/api/health', timeout=4)"]

ENTRYPOINT ["svc-monitor"]
CMD ["serve"]
