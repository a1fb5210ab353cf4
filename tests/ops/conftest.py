"""The k8s/ tree as a deploy pipeline has it, rendered once per test session."""

import shutil
from pathlib import Path

import pytest

from .kustomize_build import build

K8S = Path(__file__).resolve().parents[2] / "k8s"
TARGETS = ["base", "overlays/dev", "overlays/prod"]


@pytest.fixture(scope="session")
def k8s_tree(tmp_path_factory):
    """A copy of k8s/ whose prod secrets.env is its template: never a developer's real one."""
    tree = tmp_path_factory.mktemp("deploy") / "k8s"
    shutil.copytree(K8S, tree, ignore=shutil.ignore_patterns("secrets.env"))
    prod = tree / "overlays" / "prod"
    shutil.copy(prod / "secrets.env.example", prod / "secrets.env")
    return tree


@pytest.fixture(scope="session")
def rendered(k8s_tree):
    return {target: build(k8s_tree / target) for target in TARGETS}


@pytest.fixture(params=TARGETS)
def target(request):
    return request.param
