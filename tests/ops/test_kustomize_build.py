"""The Python renderer used by test_k8s renders what kustomize renders."""

import base64
import shutil
import subprocess

import pytest
import yaml

from .kustomize_build import build, image_name, retagged, strategic_merge


def comparable(objects):
    """Objects by identity, Secret data decoded (kustomize folds long base64 lines)."""
    found = {}
    for obj in objects:
        if obj["kind"] == "Secret" and "data" in obj:
            data = {k: base64.b64decode(v) for k, v in obj["data"].items()}
            obj = obj | {"data": data}
        meta = obj["metadata"]
        found[(obj["apiVersion"], obj["kind"], meta.get("namespace"), meta["name"])] = obj
    return found


def test_renders_exactly_what_kubectl_kustomize_renders(k8s_tree, rendered, target):
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.fail(
            "kubectl not on PATH (Debian package `kubectl`, which .ci/run installs): "
            "it is the reference the Python renderer is checked against"
        )
    out = subprocess.run(
        [kubectl, "kustomize", str(k8s_tree / target)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    assert comparable(rendered[target]) == comparable(d for d in yaml.safe_load_all(out) if d)


def test_keyed_lists_merge_item_by_item_and_other_lists_are_replaced():
    pod = {
        "spec": {
            "containers": [
                {
                    "name": "api",
                    "image": "a",
                    "args": ["serve", "--x"],
                    "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                },
                {"name": "sidecar", "image": "s"},
            ],
        }
    }
    patch = {
        "spec": {
            "containers": [
                {"name": "api", "args": ["serve"], "env": [{"name": "B", "value": "3"}]},
                {"name": "new", "image": "n"},
            ]
        }
    }
    merged = strategic_merge(pod, patch)
    api, sidecar, new = merged["spec"]["containers"]
    assert api == {
        "name": "api",
        "image": "a",
        "args": ["serve"],
        "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "3"}],
    }
    assert sidecar == {"name": "sidecar", "image": "s"}
    assert new == {"name": "new", "image": "n"}
    assert pod["spec"]["containers"][0]["args"] == ["serve", "--x"], "original left untouched"


def test_null_in_a_patch_deletes_the_field():
    assert strategic_merge({"a": 1, "b": {"c": 2, "d": 3}}, {"b": {"c": None}}) == {
        "a": 1,
        "b": {"d": 3},
    }


def test_patch_directives_it_does_not_implement_are_refused():
    with pytest.raises(NotImplementedError):
        strategic_merge({"spec": {"a": 1}}, {"spec": {"$patch": "replace", "a": 2}})


def test_kustomization_fields_it_does_not_implement_are_refused(tmp_path):
    (tmp_path / "kustomization.yaml").write_text("resources: []\ncommonLabels:\n  team: games\n")
    with pytest.raises(NotImplementedError, match="commonLabels"):
        build(tmp_path)


def test_a_patch_must_name_exactly_one_object(tmp_path):
    (tmp_path / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n")
    (tmp_path / "patch.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\ndata:\n  k: v\n"
    )
    (tmp_path / "kustomization.yaml").write_text(
        "resources: [cm.yaml]\npatches:\n  - path: patch.yaml\n"
    )
    with pytest.raises(LookupError):
        build(tmp_path)


def test_files_outside_the_kustomization_directory_are_refused(tmp_path):
    (tmp_path / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n")
    (tmp_path / "overlay").mkdir()
    (tmp_path / "overlay" / "kustomization.yaml").write_text("resources: [../cm.yaml]\n")
    with pytest.raises(PermissionError):
        build(tmp_path / "overlay")


@pytest.mark.parametrize(
    ("image", "name"),
    [
        ("bura", "bura"),
        ("bura:dev", "bura"),
        ("registry:5000/team/bura", "registry:5000/team/bura"),
        ("registry:5000/team/bura:1.2@sha256:ab", "registry:5000/team/bura"),
    ],
)
def test_image_name_drops_tag_and_digest_only(image, name):
    assert image_name(image) == name


def test_secret_generator_replaces_the_values_and_keeps_the_metadata(tmp_path):
    (tmp_path / "s.yaml").write_text(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n  labels: {a: b}\n"
        "stringData:\n  OLD: x\n"
    )
    (tmp_path / "s.env").write_text("# comment\n\nURL=postgresql://u:p@h/db?x=1\n")
    (tmp_path / "kustomization.yaml").write_text(
        "resources: [s.yaml]\nsecretGenerator:\n  - name: s\n    behavior: replace\n"
        "    envs: [s.env]\n    literals: [KEY=v=w]\n"
        "    options: {disableNameSuffixHash: true}\n"
    )
    (secret,) = build(tmp_path)
    assert secret["metadata"] == {"name": "s", "labels": {"a": "b"}}
    assert "stringData" not in secret and secret["type"] == "Opaque"
    decoded = {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}
    assert decoded == {"KEY": "v=w", "URL": "postgresql://u:p@h/db?x=1"}


def test_images_rule_renames_and_retags_only_its_image():
    rule = {"name": "bura", "newName": "registry.example.com/bura", "newTag": "1.0"}
    assert retagged("bura:dev", rule) == "registry.example.com/bura:1.0"
    assert retagged("postgres:15", rule) == "postgres:15"
    assert retagged("bura:dev", {"name": "bura", "digest": "sha256:ab"}) == "bura@sha256:ab"
