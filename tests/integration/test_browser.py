"""What a person sees, rendered by a real headless browser (Debian's chromium; `.ci/run`
installs it): the gateway's status page and the HTML bench report. Each test takes a
screenshot and checks its pixels: the page is not blank, and the colours that only the
rendered content has (the state colours, the plots' bars) are on it.

The screenshots are kept under the pytest tmp dir (``browser-*.png``) for a person to look at.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from tests.conftest import HashingEmbedder
from tests.integration.test_status_page import serving_gateway
from toolroute import cli

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        shutil.which("chromium") is None,
        reason="chromium not installed (bash .ci/run installs Debian's chromium)",
    ),
]


def screenshot(url: str, png: Path, size: str = "1280,1000") -> np.ndarray:
    """Render ``url`` in headless chromium, write ``png``, return its RGB pixels."""
    import matplotlib.image

    profile = png.parent / f"{png.stem}-profile"
    subprocess.run(
        [
            "chromium",
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--hide-scrollbars",
            f"--user-data-dir={profile}",
            f"--window-size={size}",
            f"--screenshot={png}",
            url,
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    pixels = np.asarray(matplotlib.image.imread(png))[..., :3]
    return (pixels * 255).round().astype(np.int16)


def _has_colour(pixels: np.ndarray, rgb: tuple[int, int, int], tol: int = 12) -> int:
    return int((np.abs(pixels - np.array(rgb)).max(axis=-1) <= tol).sum())


def test_status_page_renders_in_a_browser(tmp_path: Path) -> None:
    with serving_gateway(tmp_path) as served:
        pixels = screenshot(f"{served.base}/status", tmp_path / "browser-status.png")
    assert pixels.std() > 10  # not a blank page
    assert _has_colour(pixels, (0x12, 0x6B, 0x12)) > 20  # the "up" state, in green
    assert _has_colour(pixels, (0xB0, 0x00, 0x20)) > 20  # the "down" state, in red


def test_bench_html_report_renders_tables_and_plots(
    tmp_path: Path, catalog_file: Path, queries_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import toolroute.embed.onnx

    monkeypatch.setattr(toolroute.embed.onnx, "OnnxEmbedder", lambda: HashingEmbedder())
    out = tmp_path / "out"
    args = ["bench", "--catalog", str(catalog_file), "--queries", str(queries_file)]
    args += ["--store", str(tmp_path / "store"), "-s", "bm25", "-s", "dense", "--out", str(out)]
    res = CliRunner().invoke(cli.main, args)
    assert res.exit_code == 0, res.output
    page = out / "bench.html"
    assert "<table>" in page.read_text() and "data:image/png;base64," in page.read_text()
    pixels = screenshot(page.as_uri(), tmp_path / "browser-bench.png", size="1800,1000")
    assert pixels.std() > 10
    assert _has_colour(pixels, (0x1F, 0x77, 0xB4), tol=20) > 200  # matplotlib's blue bars
    assert _has_colour(pixels, (0xFF, 0x7F, 0x0E), tol=20) > 200  # and its orange ones
    assert _has_colour(pixels, (0xE8, 0xF4, 0xE8), tol=4) > 100  # best cells, highlighted
