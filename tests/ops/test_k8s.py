"""The kustomize base and overlays render to valid objects with the properties ops relies on."""

import base64
import re
import subprocess
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from services.bootstrap import STALLED_CLOSE
from services.config import Settings

from .kustomize_build import pod_spec_of

ROOT = Path(__file__).resolve().parents[2]
KUBERNETES_VERSION = "1.30.0"


def one(objects, kind, name):
    (found,) = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    return found


def selects(selector, labels):
    assert set(selector) <= {"matchLabels"}, "only matchLabels selectors are checked here"
    return all(labels.get(k) == v for k, v in selector.get("matchLabels", {}).items())


def pod_labels(workload):
    return workload["spec"]["template"]["metadata"]["labels"]


def secret_values(secret):
    """A Secret's values, whether written as stringData or generated as base64 data."""
    decoded = {k: base64.b64decode(v).decode() for k, v in secret.get("data", {}).items()}
    return decoded | secret.get("stringData", {})


def api_container(objects):
    (container,) = pod_spec_of(one(objects, "Deployment", "bura-api"))["containers"]
    return container


def migrate_container(objects):
    (container,) = pod_spec_of(one(objects, "Job", "bura-migrate"))["containers"]
    return container


def test_every_rendered_object_is_valid_against_the_kubernetes_schema(target, rendered):
    errors = []
    for obj in rendered[target]:
        try:
            kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
        except kubernetes_validate.ValidationError as error:
            path = ".".join(str(p) for p in error.path)
            errors.append(f"{obj['kind']}/{obj['metadata']['name']}: {path}: {error.message}")
    assert errors == []


def test_validation_is_strict_about_unknown_fields(rendered):
    deployment = dict(one(rendered["base"], "Deployment", "bura-api"))
    deployment["spec"] = {**deployment["spec"], "replica": 3}
    with pytest.raises(kubernetes_validate.ValidationError, match="replica"):
        kubernetes_validate.validate(deployment, KUBERNETES_VERSION, strict=True)


def test_probes_point_at_the_health_endpoints_on_the_served_port(target, rendered):
    container = api_container(rendered[target])
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    expected = {
        "startupProbe": "/health/live",
        "livenessProbe": "/health/live",
        "readinessProbe": "/health/ready",
    }
    for probe, path in expected.items():
        http = container[probe]["httpGet"]
        assert http["path"] == path
        assert ports[http["port"]] == 8000


def test_shutdown_leaves_time_for_the_service_to_stop_routing_and_the_server_to_drain(
    target, rendered
):
    """The kubelet's SIGKILL comes after the preStop sleep, the server's drain
    (BURA_SHUTDOWN_GRACE_SECONDS) and, while the database is unhealthy, up to
    BURA_REQUEST_DEADLINE_SECONDS more for the work in flight and STALLED_CLOSE to let go
    of the database, with a margin."""
    deployment = one(rendered[target], "Deployment", "bura-api")
    grace = pod_spec_of(deployment)["terminationGracePeriodSeconds"]
    command = api_container(rendered[target])["lifecycle"]["preStop"]["exec"]["command"]
    assert command[0] == "sleep"
    config = one(rendered[target], "ConfigMap", "bura-config")["data"]
    drain = float(config.get("BURA_SHUTDOWN_GRACE_SECONDS", Settings().shutdown_grace_seconds))
    deadline = float(
        config.get("BURA_REQUEST_DEADLINE_SECONDS", Settings().request_deadline_seconds)
    )
    needed = int(command[1]) + drain + deadline + STALLED_CLOSE
    assert needed + 5 <= grace, f"preStop + drain + deadline + close ({needed} s) > {grace} s"
    assert deployment["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0


def test_the_ingress_forwarded_address_counts_for_the_per_address_rate_limits(
    target, rendered, monkeypatch
):
    """Behind the ingress every client would count as its one address: uvicorn, which
    reads FORWARDED_ALLOW_IPS from the environment the ConfigMap gives, believes the
    ingress. It was "*", under which uvicorn takes the header's first address, the one a
    client writes itself: a client that wrote another address each time was never limited.
    The client is the address the ingress appended, whatever the client wrote before it."""
    import asyncio

    import uvicorn
    from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

    config = one(rendered[target], "ConfigMap", "bura-config")["data"]
    assert config["FORWARDED_ALLOW_IPS"] != "*"
    monkeypatch.setenv("FORWARDED_ALLOW_IPS", config["FORWARDED_ALLOW_IPS"])
    read = uvicorn.Config(app=None)
    assert read.proxy_headers

    async def client_of(ingress: str, forwarded: str) -> str:
        seen: list[str] = []

        async def app(scope, receive, send):
            seen.append(scope["client"][0])

        middleware = ProxyHeadersMiddleware(app, trusted_hosts=read.forwarded_allow_ips)
        scope = {
            "type": "http",
            "client": (ingress, 40000),
            "headers": [(b"x-forwarded-for", forwarded.encode())],
        }
        await middleware(scope, None, None)
        return seen[0]

    for ingress in ("10.42.0.7", "172.20.1.9", "192.168.5.5", "100.64.3.3", "fd00::7"):
        assert asyncio.run(client_of(ingress, "203.0.113.7")) == "203.0.113.7"
        # a client's forged first address is passed over for the one the ingress appended
        assert asyncio.run(client_of(ingress, "6.6.6.6, 203.0.113.7")) == "203.0.113.7"
    # a public address sending the header itself is not believed
    assert asyncio.run(client_of("198.51.100.1", "6.6.6.6")) == "198.51.100.1"


def _cores(quantity):
    text = str(quantity)
    return int(text[:-1]) / 1000 if text.endswith("m") else float(text)


def test_the_autoscaler_can_reach_its_target_on_one_process(target, rendered):
    """`bura serve` is one process with one event loop: a pod never uses more than one
    core. The HPA's target is a share of the CPU request, so a request above one core at
    70 % could never be reached (prod requested 2 cores: at most 50 %, never scaled out)."""
    hpa = one(rendered[target], "HorizontalPodAutoscaler", "bura-api")
    [metric] = hpa["spec"]["metrics"]
    share = metric["resource"]["target"]["averageUtilization"] / 100
    requested = _cores(api_container(rendered[target])["resources"]["requests"]["cpu"])
    assert requested * share < 1.0, (requested, share)
    assert requested <= 1.0


def test_every_container_requests_and_limits_cpu_and_memory(target, rendered):
    for obj in rendered[target]:
        spec = pod_spec_of(obj)
        for container in [] if spec is None else spec["containers"]:
            resources = container["resources"]
            for bound in ("requests", "limits"):
                assert set(resources[bound]) >= {"cpu", "memory"}, (obj["kind"], bound)


def test_bura_pods_run_as_the_image_user_with_a_read_only_root(target, rendered):
    user = int(re.search(r"^USER (\d+)", (ROOT / "Dockerfile").read_text(), re.M)[1])
    for kind, name in [("Deployment", "bura-api"), ("Job", "bura-migrate")]:
        spec = pod_spec_of(one(rendered[target], kind, name))
        assert spec["securityContext"]["runAsNonRoot"] is True
        assert spec["securityContext"]["runAsUser"] == user
        assert spec["automountServiceAccountToken"] is False
        for container in spec["containers"]:
            context = container["securityContext"]
            assert context["readOnlyRootFilesystem"] is True
            assert context["allowPrivilegeEscalation"] is False
            assert context["capabilities"]["drop"] == ["ALL"]


def test_api_and_migration_read_settings_from_the_configmap_and_the_secret(target, rendered):
    objects = rendered[target]
    secret = one(objects, "Secret", "bura-secrets")
    config = one(objects, "ConfigMap", "bura-config")
    # prod also names the database's hot standbys for the record's reads
    standby = {"BURA_READ_DATABASE_URL"} if target == "overlays/prod" else set()
    assert set(secret_values(secret)) == {
        "BURA_OPERATOR_KEY",
        "BURA_DATABASE_URL",
        "BURA_REDIS_URL",
        *standby,
    }
    assert config["data"]["BURA_HOST"] == "0.0.0.0"
    assert config["data"]["BURA_PORT"] == "8000"
    for container in (api_container(objects), migrate_container(objects)):
        assert container["envFrom"] == [
            {"configMapRef": {"name": "bura-config"}},
            {"secretRef": {"name": "bura-secrets"}},
        ]


def test_the_migration_job_runs_migrate_with_the_deployment_image(target, rendered):
    objects = rendered[target]
    api, migrate = api_container(objects), migrate_container(objects)
    assert migrate["args"] == ["migrate"]
    assert api["args"] == ["serve"]
    assert "command" not in migrate and "command" not in api, "the image's entrypoint is bura"
    assert migrate["image"] == api["image"]
    job = one(objects, "Job", "bura-migrate")
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"
    deployment_wave = one(objects, "Deployment", "bura-api")["metadata"]["annotations"]
    job_annotations = job["metadata"]["annotations"]
    assert int(job_annotations["argocd.argoproj.io/sync-wave"]) < int(
        deployment_wave["argocd.argoproj.io/sync-wave"]
    )


def test_service_pdb_and_hpa_address_the_api_pods(target, rendered):
    objects = rendered[target]
    labels = pod_labels(one(objects, "Deployment", "bura-api"))
    service = one(objects, "Service", "bura-api")
    assert selects({"matchLabels": service["spec"]["selector"]}, labels)
    assert service["spec"]["ports"][0]["targetPort"] == "http"
    assert selects(one(objects, "PodDisruptionBudget", "bura-api")["spec"]["selector"], labels)
    hpa = one(objects, "HorizontalPodAutoscaler", "bura-api")
    assert hpa["apiVersion"] == "autoscaling/v2"
    assert hpa["spec"]["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": "bura-api",
    }


def policies_for(objects, labels, direction):
    return [
        o
        for o in objects
        if o["kind"] == "NetworkPolicy"
        and direction in o["spec"]["policyTypes"]
        and selects(o["spec"]["podSelector"], labels)
    ]


def ports_of(rule):
    return {(p["port"], p.get("protocol", "TCP")) for p in rule["ports"]}


def test_bura_pods_may_only_reach_dns_postgres_and_redis(target, rendered):
    objects = rendered[target]
    for kind, name in [("Deployment", "bura-api"), ("Job", "bura-migrate")]:
        policies = policies_for(objects, pod_labels(one(objects, kind, name)), "Egress")
        rules = [rule for policy in policies for rule in policy["spec"]["egress"]]
        assert policies
        assert all("ports" in rule for rule in rules), "a rule without ports allows every port"
        assert set().union(*map(ports_of, rules)) == {
            (53, "UDP"),
            (53, "TCP"),
            (5432, "TCP"),
            (6379, "TCP"),
        }


@pytest.mark.parametrize(
    ("server", "port", "admitted"),
    [("postgres", 5432, {"bura-api", "bura-migrate"}), ("redis", 6379, {"bura-api"})],
)
def test_dev_servers_admit_only_bura_pods_on_their_port(server, port, admitted, rendered):
    objects = rendered["overlays/dev"]
    workloads = {o["metadata"]["name"]: pod_labels(o) for o in objects if pod_spec_of(o)}
    policies = policies_for(objects, workloads[server], "Ingress")
    rules = [rule for policy in policies for rule in policy["spec"]["ingress"]]
    assert policies and rules
    peers = []
    for rule in rules:
        assert ports_of(rule) == {(port, "TCP")}
        assert rule["from"], "an empty `from` admits every pod"
        assert all(set(peer) == {"podSelector"} for peer in rule["from"]), "same namespace only"
        peers += [peer["podSelector"] for peer in rule["from"]]
    reaching = {name for name, pods in workloads.items() if any(selects(p, pods) for p in peers)}
    assert reaching == admitted
    assert not any(selects(p, {"app.kubernetes.io/name": "other"}) for p in peers)


def test_dev_runs_one_api_replica_beside_its_own_postgres_and_redis(rendered):
    objects = rendered["overlays/dev"]
    assert {o["metadata"]["namespace"] for o in objects} == {"bura-dev"}
    # the HPA owns the count here too (docs/deploy.md): an apply never undoes a scale-up
    assert "replicas" not in one(objects, "Deployment", "bura-api")["spec"]
    assert one(objects, "HorizontalPodAutoscaler", "bura-api")["spec"]["minReplicas"] == 1
    assert api_container(objects)["image"] == "bura:dev"
    postgres = one(objects, "StatefulSet", "postgres")
    redis = one(objects, "Deployment", "redis")
    assert pod_spec_of(postgres)["containers"][0]["image"] == "postgres:15"
    assert pod_spec_of(redis)["containers"][0]["image"] == "redis:7"
    urls = secret_values(one(objects, "Secret", "bura-secrets"))
    assert "@postgres:5432/" in urls["BURA_DATABASE_URL"]
    assert urls["BURA_REDIS_URL"].startswith("redis://redis:6379/")
    for service, port in [("postgres", 5432), ("redis", 6379)]:
        assert one(objects, "Service", service)["spec"]["ports"][0]["port"] == port
    assert "REPLACE_ME" not in str(urls)


def test_prod_runs_no_database_and_points_at_operator_managed_servers(rendered):
    objects = rendered["overlays/prod"]
    assert {o["metadata"]["namespace"] for o in objects} == {"bura"}
    workloads = {(o["kind"], o["metadata"]["name"]) for o in objects if pod_spec_of(o)}
    assert workloads == {("Deployment", "bura-api"), ("Job", "bura-migrate")}
    assert {o["metadata"]["name"] for o in objects if o["kind"] == "Service"} == {"bura-api"}
    assert "postgres:" not in str(objects) and "redis:7" not in str(objects)
    urls = secret_values(one(objects, "Secret", "bura-secrets"))
    for key, port in [("BURA_DATABASE_URL", 5432), ("BURA_REDIS_URL", 6379)]:
        host = re.fullmatch(r"\w+://[^@]*@([^:/]+):(\d+)/.*", urls[key])
        assert host and host[1].endswith(".svc.cluster.local") and int(host[2]) == port


def test_prod_migrates_in_its_job_only_and_its_replicas_refuse_a_schema_behind(rendered):
    """prod runs the migration Job ahead of each rollout (docs/deploy.md), so its API
    replicas never migrate (BURA_MIGRATE_ON_START=false); the base keeps the default."""
    prod = one(rendered["overlays/prod"], "ConfigMap", "bura-config")["data"]
    assert prod["BURA_MIGRATE_ON_START"] == "false"
    assert migrate_container(rendered["overlays/prod"])["args"] == ["migrate"]
    assert "BURA_MIGRATE_ON_START" not in one(rendered["base"], "ConfigMap", "bura-config")["data"]


def test_prod_takes_its_secret_from_a_git_ignored_file_not_from_the_base(rendered):
    prod = ROOT / "k8s" / "overlays" / "prod"
    (generator,) = yaml.safe_load((prod / "kustomization.yaml").read_text())["secretGenerator"]
    assert generator["name"] == "bura-secrets" and generator["behavior"] == "replace"
    assert generator["envs"] == ["secrets.env"]
    ignored = subprocess.run(["git", "check-ignore", "-q", str(prod / "secrets.env")], cwd=ROOT)
    assert ignored.returncode == 0, "secrets.env must be git-ignored"
    secret = one(rendered["overlays/prod"], "Secret", "bura-secrets")
    assert "stringData" not in secret, "no placeholder of the base survives"
    values = secret_values(secret)
    assert values["BURA_OPERATOR_KEY"] == "REPLACE_ME", "the template holds no credential"
    for key in ("BURA_DATABASE_URL", "BURA_READ_DATABASE_URL", "BURA_REDIS_URL"):
        assert re.match(r"\w+://[^:@]*:REPLACE_ME@", values[key]), key
    assert "bura-pg-rw." in values["BURA_DATABASE_URL"]
    assert "bura-pg-ro." in values["BURA_READ_DATABASE_URL"]


def test_prod_scales_from_three_replicas_with_larger_resources(rendered):
    objects = rendered["overlays/prod"]
    deployment = one(objects, "Deployment", "bura-api")
    assert "replicas" not in deployment["spec"], "the HPA owns the replica count"
    hpa = one(objects, "HorizontalPodAutoscaler", "bura-api")["spec"]
    assert hpa["minReplicas"] >= 3 and hpa["maxReplicas"] > hpa["minReplicas"]
    assert api_container(objects)["image"] == "registry.example.com/bura/bura:0.1.0"
    prod, base = api_container(objects)["resources"], api_container(rendered["base"])["resources"]
    assert prod != base
    assert quantity(prod["limits"]["memory"]) > quantity(base["limits"]["memory"])
    assert quantity(prod["requests"]["cpu"]) > quantity(base["requests"]["cpu"])


def quantity(text):
    """A Kubernetes quantity (`500m`, `2`, `256Mi`) as a float, for comparisons."""
    units = {"m": 1e-3, "": 1, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30}
    number, unit = re.fullmatch(r"([\d.]+)([A-Za-z]*)", str(text)).groups()
    return float(number) * units[unit]
