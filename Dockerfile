# openenv-mcp: any bundled environment served over Streamable HTTP, as a container.
#
#   docker build -t openenv-mcp .
#   docker run -p 8765:8765 -e OPENENV_MCP_AUTH_TOKEN=change-me openenv-mcp               # Pong
#   docker run -p 8765:8765 -e OPENENV_MCP_AUTH_TOKEN=change-me openenv-mcp atari --game breakout --http --web
#   docker run -p 8765:8765 -e OPENENV_MCP_AUTH_TOKEN=change-me openenv-mcp gymnasium --id CartPole-v1 --http
#
# It listens on 0.0.0.0, so it refuses to start without a bearer token; clients send
# "Authorization: Bearer <token>". GET /healthz answers without one (for probes).
#
# The coding environment runs submitted code in bubblewrap, as this image's unprivileged
# user (user namespaces, no root). Docker's default seccomp and AppArmor profiles forbid
# user namespaces and a fresh /proc, so that container needs (else it refuses to start,
# saying so; see docs/security-sandbox.md):
#   docker run -p 8765:8765 -e OPENENV_MCP_AUTH_TOKEN=change-me \
#     --security-opt seccomp=unconfined --security-opt apparmor=unconfined \
#     --security-opt systempaths=unconfined openenv-mcp coding --http
FROM python:3.11-slim
LABEL org.opencontainers.image.title="openenv-mcp" \
      org.opencontainers.image.description="Every RL environment as a standard MCP server." \
      org.opencontainers.image.licenses="BSD-3-Clause"
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    OPENENV_MCP_HOST=0.0.0.0 \
    OPENENV_MCP_PORT=8765
# bubblewrap isolates the coding environment's runs; util-linux (unshare, nsenter) and mount
# hold each episode's bounded work dir. Debian's current packages, whatever their version.
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends bubblewrap util-linux mount \
 && rm -rf /var/lib/apt/lists/*
RUN groupadd --gid 10001 openenv \
 && useradd --create-home --uid 10001 --gid 10001 openenv
WORKDIR /app
COPY pyproject.toml README.md ./
COPY openenv_mcp ./openenv_mcp
COPY envs ./envs
RUN pip install --no-cache-dir "/app[gymnasium]"
USER 10001:10001
EXPOSE 8765
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8765/healthz', timeout=4)"]
# Arguments after the image name replace CMD: an environment and its options, then --http.
ENTRYPOINT ["openenv-mcp", "serve"]
CMD ["atari", "--game", "pong", "--http"]
