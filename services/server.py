"""Serving the API with uvicorn: adapters opened for the process, graceful SIGTERM."""

from __future__ import annotations

import logging

import uvicorn

from services.app import create_app
from services.config import Settings
from services.logs import configure


def serve(settings: Settings) -> int:
    configure(settings)
    log = logging.getLogger("bura")
    app = create_app(settings)
    where = "PostgreSQL" if settings.database_url else f"SQLite file {settings.sqlite_path}"
    where += " + Redis" if settings.redis_url else " + in-process bus"
    url = f"http://{settings.host}:{settings.port}"
    print(f"Bura server on {url}  ({where})", flush=True)
    print(f"OpenAPI: {url}/schema", flush=True)
    if settings.operator_key_generated:
        print(f"operator key (generated; set BURA_OPERATOR_KEY to fix it): "
              f"{settings.operator_key}", flush=True)
    else:
        print("operator key: from BURA_OPERATOR_KEY", flush=True)
    log.info("starting", extra={"url": url, "store": where})
    uvicorn.run(
        app, host=settings.host, port=settings.port, log_config=None,
        timeout_graceful_shutdown=int(settings.shutdown_grace_seconds), access_log=False,
    )
    return 0

