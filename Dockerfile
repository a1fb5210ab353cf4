# One image for the API (`bura serve`, the default) and for migrations (`bura migrate`).
ARG PYTHON_IMAGE=python:3.11.13-slim-bookworm

FROM ${PYTHON_IMAGE} AS builder
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
# Compilers are only for dependencies without a wheel on this platform; they stay in this stage.
# Versions are not pinned: bookworm security updates replace exact versions, and the base
# image tag already fixes the distribution release.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/* \
    && python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH
WORKDIR /src

# Dependencies first, from the lock alone (exact versions, every file's hash checked), so a
# source change keeps this layer cached: the image runs what `make run` and the tests run.
COPY requirements/runtime.lock ./requirements/runtime.lock
RUN pip install --no-cache-dir --require-hashes -r requirements/runtime.lock

# The server, and the Python client that `bura play` and `bura demo` drive (clients/python),
# each without dependencies: the lock has installed them.
COPY pyproject.toml ./
COPY domain ./domain
COPY infra ./infra
COPY services ./services
COPY clients/python ./clients/python
RUN pip install --no-cache-dir --no-deps . ./clients/python \
    && bura --help > /dev/null \
    && python -I -c "import bura_client, services.cli.play"


FROM ${PYTHON_IMAGE}
LABEL org.opencontainers.image.title="bura" \
      org.opencontainers.image.description="Event-sourced game server for the card game Bura"
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    BURA_HOST=0.0.0.0 \
    BURA_PORT=8000 \
    BURA_SQLITE_PATH=/var/lib/bura/bura.sqlite3
# Fixed UID/GID so Kubernetes runAsUser and volume ownership can rely on them.
RUN groupadd --system --gid 10001 bura \
    && useradd --system --uid 10001 --gid bura --no-create-home \
       --home-dir /var/lib/bura --shell /usr/sbin/nologin bura \
    && mkdir -p /var/lib/bura \
    && chown bura:bura /var/lib/bura
COPY --from=builder /opt/venv /opt/venv
WORKDIR /var/lib/bura
USER 10001:10001
EXPOSE 8000
# No curl in the slim image: python's urllib raises (exit 1) on a refused connection or an HTTP error.
HEALTHCHECK --interval=15s --timeout=3s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/health/live' % os.environ.get('BURA_PORT', '8000'), timeout=2)"]
ENTRYPOINT ["bura"]
CMD ["serve"]
