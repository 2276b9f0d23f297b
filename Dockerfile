# One kraft-broker node: `kraft serve` configured by /etc/kraft/server.properties and the
# KRAFT_* environment (KRAFT_NODE_ID=2 sets node.id). See README.md, "Containers".
#
#   docker build -t kraft-broker .
#   docker run -d --name kraft -p 9092:9092 -p 9292:9292 -v kraft-data:/var/lib/kraft/data kraft-broker

# Build stage: the project and its dependencies installed into a virtual environment, which the
# runtime stage copies whole (no compilers, pip caches or sources in the final image).
FROM python:3.11-slim-bookworm AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/kraft
WORKDIR /src
# .dockerignore admits only what the wheel is built from.
COPY . .
# pip also compiles the bytecode here: the runtime's root filesystem may be read-only
# (deploy/kubernetes), and compiling at every start would slow each start and healthcheck.
RUN /opt/kraft/bin/pip install --no-cache-dir .

FROM python:3.11-slim-bookworm
# A fixed uid/gid so volumes and Kubernetes' fsGroup can be prepared for it.
RUN groupadd --system --gid 10001 kraft \
 && useradd --system --uid 10001 --gid kraft --home-dir /var/lib/kraft --no-create-home \
      --shell /usr/sbin/nologin kraft \
 && mkdir -p /var/lib/kraft/data \
 && chown -R kraft:kraft /var/lib/kraft
COPY --from=build /opt/kraft /opt/kraft
COPY deploy/docker/server.properties /etc/kraft/server.properties
ENV PATH=/opt/kraft/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1
# Numeric, so Kubernetes' runAsNonRoot can verify it without reading /etc/passwd.
USER 10001:10001
WORKDIR /var/lib/kraft
# log.dirs of server.properties.
VOLUME ["/var/lib/kraft/data"]
# Kafka clients, the controller quorum, the admin HTTP API (server.properties).
EXPOSE 9092 9192 9292
# The node itself is PID 1 (exec form, no shell in between) and installs a SIGTERM handler: it
# stops cleanly (listeners closed, every log flushed, the clean-shutdown marker written) and
# exits 0. Give `docker stop` time for that: `docker stop -t 60`, compose's stop_grace_period.
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=5s --timeout=5s --start-period=60s --retries=3 \
  CMD ["python", "-m", "node.healthcheck", "--config", "/etc/kraft/server.properties"]
ENTRYPOINT ["kraft", "serve", "--config", "/etc/kraft/server.properties"]
