"""ember.report in a real browser: Debian's chromium, headless, loads the page (its DOM after the
scripts ran, and a screenshot). No JS errors, the elements and the pictures are there, and the
screenshot is not blank. bin/_setup installs chromium for the test stage when it can (root, apt)."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from test_report import _Page

pytest.importorskip("matplotlib", reason="the report's pictures need matplotlib: pip install matplotlib "
                                         "(or pip install ember[viz])")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BROWSER = next((shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome", "chrome")
                if shutil.which(b)), None)
pytestmark = pytest.mark.skipif(BROWSER is None, reason="no headless browser: apt-get install chromium "
                                                        "(bin/_setup does it for the test stage as root)")

SCRIPT = """
import sys
import ember as torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
x, y = torch.randn(32, 32), torch.randint(0, 10, (32,))
for _ in range(int(sys.argv[1])):
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
print(f"loss {loss.item():.4f}")
"""


def _chromium(profile_dir, *args, timeout=90):
    # --virtual-time-budget lets the page's scripts (DOMContentLoaded) run before the dump/screenshot;
    # a profile directory of its own, so parallel runs do not share one
    cmd = [BROWSER, "--headless", "--disable-gpu", "--no-sandbox", "--hide-scrollbars", "--mute-audio",
           "--no-first-run", "--disable-extensions", f"--user-data-dir={profile_dir}", "--virtual-time-budget=5000",
           *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def test_report_in_chromium(tmp_path):
    report = _report(tmp_path)
    _check_dom(tmp_path, report)
    _check_screenshot(tmp_path, report)


def _report(d):
    script = d / "mlp.py"
    script.write_text(SCRIPT)
    out = d / "ember_report.html"
    r = subprocess.run([sys.executable, "-m", "ember.report", "--fast", "-o", str(out), str(script), "4"],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == str(out)
    return out


def _check_dom(d, report):
    r = _chromium(d / "profile-dom", "--dump-dom", report.as_uri())
    assert r.returncode == 0, r.stderr[-2000:]
    dom = r.stdout
    p = _Page()
    p.feed(dom)
    # the page's own script ran to its end, and nothing reported an error (window.onerror and
    # console.error write into #js-errors)
    body_ready = 'data-ready="1"' in dom[dom.find("<body"):dom.find(">", dom.find("<body")) + 1]
    assert body_ready, "the page's DOMContentLoaded script did not finish"
    tag, attrs = p.ids["js-errors"]
    at = dom.find('id="js-errors"')
    assert "hidden" in attrs, "JS errors: " + dom[at:at + 500]
    # the download link got its blob URL from the script; the trace parses
    assert p.ids["download-trace"][1]["href"].startswith("blob:")
    assert json.loads(p.scripts["trace-data"])["traceEvents"]
    # the table and the pictures: four widgets, each an SVG with drawing in it
    assert dom.count("<tr>") > 10
    for key in ("dispatcher", "autograd", "tax", "overhead"):
        assert f'id="w-{key}"' in dom
        seg = dom[dom.find(f'id="w-{key}"'):]
        seg = seg[:seg.find("</figure>")]
        assert "<svg" in seg and ("<path" in seg or "<rect" in seg) and "<text" in seg, key
    assert p.counts["timeline"]["rect"] > 10
    assert p.counts["memory-chart"]["path"] == 1


def _check_screenshot(d, report):
    import numpy as np
    from matplotlib.image import imread

    shot = d / "shot.png"
    r = _chromium(d / "profile-shot", f"--screenshot={shot}", "--window-size=1280,2000", report.as_uri())
    assert r.returncode == 0 and shot.exists(), r.stderr[-2000:]
    img = imread(str(shot))
    assert img.shape[0] >= 1000 and img.shape[1] >= 1000
    rgb = img[..., :3]
    assert float(rgb.var()) > 0
    # a real page, not a blank one with a few dots: a good share of pixels are not background
    not_white = (rgb < 0.95).any(axis=-1).mean()
    assert not_white > 0.05, not_white
    # each quarter of the page (header and table, pictures, ...) has something drawn in it
    for q in np.array_split(rgb, 4, axis=0):
        assert float(q.var()) > 0
