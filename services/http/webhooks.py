"""/webhooks: the operator's endpoints and the delivery log (services/app/webhooks.py)."""

from __future__ import annotations

from typing import Annotated

from litestar import Controller, Response, delete, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath, JSONBody, Parameter, QueryParameter

from infra.ports.events import LAST_VERSION
from infra.ports.webhooks import DeliveryState
from services.app.callers import Caller
from services.app.webhooks import (
    DeliveryDetail,
    DeliveryPage,
    DeliveryRecord,
    RegisterWebhook,
    WebhookEndpoint,
    Webhooks,
)
from services.http.created import created
from services.http.problems import JSON_BODY, responses
from services.http.schemas import invalid
from services.wording import NO_NUL


class WebhooksController(Controller):
    path = "/webhooks"
    tags = ("webhooks",)
    security = [{"bearer": []}]  # noqa: RUF012 (Litestar reads it per controller)

    @post(
        "/",
        operation_id="registerWebhook",
        responses=responses(400, 401, 403, 413, 429, 503, only={400: JSON_BODY}),
        status_code=201,
        summary="Register a webhook endpoint (operator)",
    )
    async def register(
        self,
        operator: NamedDependency[Caller],
        webhooks: NamedDependency[Webhooks],
        data: JSONBody[RegisterWebhook],
    ) -> Response[WebhookEndpoint]:
        """The endpoint hears of the events of the types it names (all four if it names
        none; each once) recorded from now on. The answer shows the signing secret, once:
        keep it (a secret is generated when none is given)."""
        if len(set(data.events)) != len(data.events):
            raise invalid("events", "each event type once", "body")
        endpoint = await webhooks.register(data)
        return created(endpoint, f"/webhooks/{endpoint.id}")

    @get(
        "/",
        operation_id="listWebhooks",
        responses=responses(400, 401, 403, 429, 503),
        summary="The webhook endpoints (operator)",
    )
    async def endpoints(
        self, operator: NamedDependency[Caller], webhooks: NamedDependency[Webhooks]
    ) -> list[WebhookEndpoint]:
        """Every endpoint, registered here or set by BURA_WEBHOOK_URL (`source`), with the
        event types it hears of; never a secret (it is shown once, at registration)."""
        return await webhooks.endpoints()

    @get(
        "/deliveries",
        operation_id="listDeliveries",
        responses=responses(400, 401, 403, 429, 503),
        summary="The delivery log, newest first (operator)",
    )
    async def deliveries(
        self,
        operator: NamedDependency[Caller],
        webhooks: NamedDependency[Webhooks],
        endpoint: Annotated[
            str | None,
            Parameter(
                max_length=64,
                pattern=NO_NUL,
                description="Only the deliveries to this endpoint (its id; any character but NUL)",
            ),
        ] = None,
        kind: Annotated[
            DeliveryState | None,
            QueryParameter(name="state", description="Only the deliveries in this state"),
        ] = None,
        game_id: Annotated[
            str | None,
            Parameter(
                max_length=64,
                pattern=NO_NUL,
                description="Only the deliveries of this game's events (any character but NUL)",
            ),
        ] = None,
        before: Annotated[
            int | None,
            Parameter(ge=1, le=LAST_VERSION, description="The `next` of the page before"),
        ] = None,
        limit: Annotated[
            int, Parameter(ge=1, le=500, description="Deliveries on one page at most")
        ] = 50,
    ) -> DeliveryPage:
        """Each delivery's state (pending, delivered, failed, cancelled), attempts and last
        answer; filter by endpoint, state or game, page on with `before`."""
        return await webhooks.log(
            endpoint_id=endpoint, state=kind, game_id=game_id, before=before, limit=limit
        )

    @get(
        "/deliveries/{delivery_id:str}",
        operation_id="getDelivery",
        responses=responses(400, 401, 403, 429, 503, only={404: ("delivery_not_found",)}),
        summary="One delivery: its body and every attempt (operator)",
    )
    async def delivery(
        self,
        delivery_id: FromPath[str],
        operator: NamedDependency[Caller],
        webhooks: NamedDependency[Webhooks],
    ) -> DeliveryDetail:
        """The delivery's state, the JSON body every attempt sends (the same bytes each
        time, signed afresh), and each attempt: when, the receiver's status or the error,
        and how long it took."""
        return await webhooks.delivery(delivery_id)

    @post(
        "/deliveries/{delivery_id:str}/retry",
        operation_id="retryDelivery",
        responses=responses(
            400,
            401,
            403,
            413,
            429,
            503,
            only={
                404: ("delivery_not_found", "webhook_not_found"),
                409: ("delivery_not_failed",),
            },
        ),
        status_code=200,
        summary="Send a failed delivery again (operator)",
    )
    async def retry(
        self,
        delivery_id: FromPath[str],
        operator: NamedDependency[Caller],
        webhooks: NamedDependency[Webhooks],
    ) -> DeliveryRecord:
        """Queues it again at once, under the same id and body, for one more attempt (its
        attempts count on); 409 `delivery_not_failed` for one that is pending, delivered or
        cancelled, 404 `webhook_not_found` when its endpoint has been removed."""
        return await webhooks.retry(delivery_id)

    @get(
        "/{endpoint_id:str}",
        operation_id="getWebhook",
        responses=responses(400, 401, 403, 429, 503, only={404: ("webhook_not_found",)}),
        summary="One webhook endpoint (operator)",
    )
    async def endpoint(
        self,
        endpoint_id: FromPath[str],
        operator: NamedDependency[Caller],
        webhooks: NamedDependency[Webhooks],
    ) -> WebhookEndpoint:
        """The endpoint's URL, the event types it hears of and where it came from; its
        secret is not shown again."""
        return await webhooks.endpoint(endpoint_id)

    @delete(
        "/{endpoint_id:str}",
        operation_id="deleteWebhook",
        responses=responses(
            400,
            401,
            403,
            429,
            503,
            only={404: ("webhook_not_found",), 409: ("webhook_configured",)},
        ),
        status_code=204,
        summary="Remove an endpoint",
    )
    async def remove(
        self,
        endpoint_id: FromPath[str],
        operator: NamedDependency[Caller],
        webhooks: NamedDependency[Webhooks],
    ) -> None:
        """Its pending deliveries are cancelled; the log keeps them. The endpoint of
        BURA_WEBHOOK_URL is removed by unsetting it (409 `webhook_configured`)."""
        await webhooks.remove(endpoint_id)
