"""`kustomize build` for the manifests in k8s/, offline and in Python.

Only what those kustomizations use: `resources` (files and directories), `secretGenerator`
(create or replace, from env files or literals, without a name hash), `patches` given as
files of strategic-merge patches, `namespace` and `images`, applied in kustomize's order.
Any other field, or an option it does not know, raises NotImplementedError instead of
rendering something else than kustomize would. The tests compare its output with
`kubectl kustomize` where that exists.
"""

import base64
import re
from copy import deepcopy
from pathlib import Path
from typing import Any

import yaml

Object = dict[str, Any]

SUPPORTED_FIELDS = {
    "apiVersion",
    "kind",
    "resources",
    "secretGenerator",
    "patches",
    "namespace",
    "images",
}
CLUSTER_SCOPED_KINDS = {
    "Namespace",
    "ClusterRole",
    "ClusterRoleBinding",
    "PersistentVolume",
    "StorageClass",
    "CustomResourceDefinition",
    "PriorityClass",
}

# Lists that strategic merge patches merge item by item, keyed by the named field, found by
# (parent field, list field) as in the Kubernetes API's patchMergeKey markers. Every other
# list is replaced whole, which is what the API does for atomic lists.
MERGE_KEYS = {
    ("spec", "containers"): "name",
    ("spec", "initContainers"): "name",
    ("spec", "volumes"): "name",
    ("spec", "imagePullSecrets"): "name",
    ("containers", "env"): "name",
    ("containers", "ports"): "containerPort",
    ("containers", "volumeMounts"): "mountPath",
    ("initContainers", "env"): "name",
    ("initContainers", "ports"): "containerPort",
    ("initContainers", "volumeMounts"): "mountPath",
}


def build(directory: Path) -> list[Object]:
    """Render the kustomization in `directory` like `kustomize build directory`."""
    kustomization = load_one(directory / "kustomization.yaml")
    unsupported = set(kustomization) - SUPPORTED_FIELDS
    if unsupported:
        raise NotImplementedError(f"{directory}: kustomization fields {sorted(unsupported)}")

    objects: list[Object] = []
    for entry in kustomization.get("resources", []):
        path = directory / entry
        objects += build(path) if path.is_dir() else load_all(inside(directory, path))
    for generator in kustomization.get("secretGenerator", []):
        generate_secret(directory, generator, objects)
    for patch in kustomization.get("patches", []):
        if set(patch) != {"path"}:
            raise NotImplementedError(f"{directory}: patch {patch} (only `path` is supported)")
        for document in load_all(inside(directory, directory / patch["path"])):
            index = target_of(objects, document)
            objects[index] = strategic_merge(objects[index], document)
    if "namespace" in kustomization:
        for obj in objects:
            if obj["kind"] in CLUSTER_SCOPED_KINDS:
                raise NotImplementedError(f"namespace on cluster-scoped {obj['kind']}")
            obj["metadata"]["namespace"] = kustomization["namespace"]
    for image in kustomization.get("images", []):
        for obj in objects:
            for container in containers_of(obj):
                container["image"] = retagged(container["image"], image)
    return objects


def inside(directory: Path, path: Path) -> Path:
    """kustomize loads files only from within the kustomization's own directory tree."""
    if not path.resolve().is_relative_to(directory.resolve()):
        raise PermissionError(f"{path} is outside {directory}")
    return path


def generate_secret(directory: Path, generator: Object, objects: list[Object]) -> None:
    unknown = set(generator) - {"name", "behavior", "envs", "literals", "type", "options"}
    if unknown or generator.get("options") != {"disableNameSuffixHash": True}:
        raise NotImplementedError(f"secretGenerator {generator} (needs disableNameSuffixHash)")
    pairs = [line.partition("=") for line in generator.get("literals", [])]
    for env in generator.get("envs", []):
        pairs += env_file(inside(directory, directory / env))
    data = {key: base64.b64encode(value.encode()).decode() for key, _, value in pairs}
    secret_type = generator.get("type", "Opaque")
    match generator.get("behavior", "create"):
        case "create":
            meta = {"name": generator["name"]}
            objects.append(
                {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": meta,
                    "type": secret_type,
                    "data": data,
                }
            )
        case "replace":
            index = target_of(
                objects,
                {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": generator["name"]}},
            )
            kept = {k: v for k, v in objects[index].items() if k not in ("data", "stringData")}
            objects[index] = kept | {"type": secret_type, "data": data}
        case behavior:
            raise NotImplementedError(f"secretGenerator behavior {behavior}")


def env_file(path: Path) -> list[tuple[str, str, str]]:
    """KEY=VALUE lines; blank lines and # comments skipped; values verbatim, as kustomize."""
    pairs = []
    for line in path.read_text().splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, equals, value = line.partition("=")
        if not equals or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.-]*", key):
            raise NotImplementedError(f"{path}: line {line!r} (only KEY=VALUE)")
        pairs.append((key, equals, value))
    return pairs


def load_one(path: Path) -> Object:
    (document,) = load_all(path)
    return document


def load_all(path: Path) -> list[Object]:
    with path.open() as stream:
        return [document for document in yaml.safe_load_all(stream) if document]


def group_of(api_version: str) -> str:
    return api_version.rpartition("/")[0]


def target_of(objects: list[Object], patch: Object) -> int:
    """Index of the one object a patch names, by API group, kind, name (and namespace)."""
    meta = patch["metadata"]
    matches = [
        index
        for index, obj in enumerate(objects)
        if group_of(obj["apiVersion"]) == group_of(patch["apiVersion"])
        and obj["kind"] == patch["kind"]
        and obj["metadata"]["name"] == meta["name"]
        and meta.get("namespace", obj["metadata"].get("namespace"))
        == obj["metadata"].get("namespace")
    ]
    if len(matches) != 1:
        raise LookupError(f"patch {patch['kind']}/{meta['name']} matches {len(matches)} objects")
    return matches[0]


def strategic_merge(original: Any, patch: Any, parent: str = "", field: str = "") -> Any:
    """Apply a strategic merge patch: maps merge, null deletes, keyed lists merge by key.

    `field` names the field that holds `original` (for a list item, the list's field) and
    `parent` the one above it: together they pick the list merge key.
    """
    if isinstance(patch, dict) and isinstance(original, dict):
        directives = [key for key in patch if key.startswith("$")]
        if directives:
            raise NotImplementedError(f"patch directives {directives}")
        merged = deepcopy(original)
        for key, value in patch.items():
            if value is None:
                merged.pop(key, None)
            elif key in merged:
                merged[key] = strategic_merge(merged[key], value, field, key)
            else:
                merged[key] = deepcopy(value)
        return merged
    key = MERGE_KEYS.get((parent, field))
    if isinstance(patch, list) and isinstance(original, list) and key:
        merged_list = deepcopy(original)
        for item in patch:
            position = next(
                (i for i, old in enumerate(merged_list) if old.get(key) == item[key]), None
            )
            if position is None:
                merged_list.append(deepcopy(item))
            else:
                merged_list[position] = strategic_merge(merged_list[position], item, parent, field)
        return merged_list
    return deepcopy(patch)


def pod_spec_of(obj: Object) -> Object | None:
    match obj["kind"]:
        case "Pod":
            return obj["spec"]
        case "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet" | "Job":
            return obj["spec"]["template"]["spec"]
        case "CronJob":
            return obj["spec"]["jobTemplate"]["spec"]["template"]["spec"]
        case _:
            return None


def containers_of(obj: Object) -> list[Object]:
    spec = pod_spec_of(obj)
    if spec is None:
        return []
    return [*spec.get("initContainers", []), *spec["containers"]]


def image_name(image: str) -> str:
    """`registry:5000/team/app:tag@sha256:...` -> `registry:5000/team/app`."""
    name = image.partition("@")[0]
    repository, colon, tag = name.rpartition(":")
    return repository if colon and "/" not in tag else name


def retagged(image: str, rule: Object) -> str:
    if image_name(image) != rule["name"]:
        return image
    unknown = set(rule) - {"name", "newName", "newTag", "digest"}
    if unknown:
        raise NotImplementedError(f"image fields {sorted(unknown)}")
    name = rule.get("newName", image_name(image))
    if "digest" in rule:
        return f"{name}@{rule['digest']}"
    if "newTag" in rule:
        return f"{name}:{rule['newTag']}"
    rest = image[len(image_name(image)) :]
    return name + rest
