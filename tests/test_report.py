"""The HTML report: its structure and escaping, every booster, the CLI, and (marker ``browser``)
the page in headless Chromium: no console errors, working filter, a non-blank screenshot."""

import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from rebelboost import (
    AdaBoostMHClassifier,
    MCBoostClassifier,
    OneVsAllAdaBoostClassifier,
    RebelClassifier,
)
from rebelboost.datasets import make_spiral
from rebelboost.report import render_report, write_report
from rebelboost.report.model_view import learner_views

pytest.importorskip("matplotlib")  # the plot extra; the dev install has it

LABELS = np.array(["<b>&", "plain", "quote\"'"])
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr"}
SECTIONS = ("summary", "curves", "evaluation", "confusion", "per-class", "staged", "importances",
            "exit", "learners")


def _five_features(n, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    y = (X[:, 0] + X[:, 1] > 0).astype(int) + (X[:, 3] > 0.8)
    return X, y


@pytest.fixture(scope="module")
def spiral():
    """REBEL with 30 trees on 2-D spirals whose class labels need escaping."""
    X, y = make_spiral(240, 3, random_state=0)
    y = LABELS[y]
    model = RebelClassifier(30, random_state=0).fit(X[:160], y[:160])
    return model, X[160:], y[160:], X[:160], y[:160]


@pytest.fixture(scope="module")
def trees5():
    """Cost-sensitive REBEL with 60 depth-2 trees on 5 features (more than one page)."""
    X, y = _five_features(240)
    cost = [[0, 1, 4], [1, 0, 1], [2, 1, 0]]
    model = RebelClassifier(60, cost_matrix=cost, random_state=0).fit(X[:160], y[:160])
    return model, X[160:], y[160:]


class _Page(HTMLParser):
    """Collects the tags, ids, texts and nesting problems of an HTML page."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.open, self.problems, self.ids, self.tags = [], [], [], []
        self.text, self.doctype, self.srcs = [], None, []

    def handle_decl(self, decl):
        self.doctype = decl

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        attrs = dict(attrs)
        if "id" in attrs:
            self.ids.append(attrs["id"])
        self.srcs += [attrs[k] for k in ("src", "href") if k in attrs]
        if tag not in VOID:
            self.open.append(tag)

    def handle_endtag(self, tag):
        if not self.open or self.open[-1] != tag:
            self.problems.append(f"</{tag}> closes {self.open[-1:]}")
        else:
            self.open.pop()

    def handle_data(self, data):
        self.text.append(data)


def _parse(page: str) -> _Page:
    parser = _Page()
    parser.feed(page)
    parser.close()
    return parser


def test_page_is_well_formed_self_contained_and_escaped(spiral, tmp_path):
    model, X, y, X_train, y_train = spiral
    path = write_report(model, X, y, tmp_path / "r.html", title="<i>spirals</i>",
                        X_train=X_train, y_train=y_train)
    page = path.read_text(encoding="utf-8")
    parsed = _parse(page)
    assert parsed.doctype == "DOCTYPE html"
    assert not parsed.problems and not parsed.open
    assert len(parsed.ids) == len(set(parsed.ids))
    assert set(SECTIONS) | {"boundary", "learner-filter", "learner-table", "learner-more"} <= set(
        parsed.ids)
    # labels and the title are text, never markup
    assert "b" not in parsed.tags and "i" not in parsed.tags
    text = "".join(parsed.text)
    assert "<b>&" in text and "quote\"'" in text and "<i>spirals</i>" in text
    # nothing to fetch: figures are inline PNGs
    assert all(s.startswith(("data:", "#")) for s in parsed.srcs)
    # (six figures before the soft-cascade trade-off joined them)
    assert sum(s.startswith("data:image/png;base64,") for s in parsed.srcs) == 7
    assert page.count("<tr><td>") >= model.n_estimators_
    assert "training data" in text  # X_train adds a row to the results


def test_results_match_the_model(trees5):
    from rebelboost import mean_cost

    model, X, y = trees5
    page = render_report(model, X, y)
    error = f"{np.mean(model.predict(X) != y):.4g}"
    cost = f"{mean_cost(y, model.predict(X), model.cost_matrix_, model.classes_):.4g}"
    assert f"<td>{error}</td><td>{cost}</td>" in page
    assert "boundary" not in _parse(page).ids  # 5 features: no decision boundary
    assert page.count('<tr><td class="text">x') == 5  # importances table: the 5 features


def test_learners_needed_match_the_exact_exit(spiral):
    model, X, y, *_ = spiral
    page = render_report(model, X, y)
    _, used = model.model_.predict_codes(np.asarray(X, dtype=float), early_exit="exact")
    share = used / len(model.learners_)
    assert share.mean() < 1.0  # some rows stop early on this model
    assert f"<td>{share.mean():.4g}</td>" in page and 'id="exit-table"' in page


def test_exit_tradeoff_is_measured_on_rows_the_cascades_were_not_calibrated_on(spiral):
    from rebelboost.report.evaluation import CASCADE_KEEPS, exit_tradeoff

    model, X, y, *_ = spiral
    X = np.asarray(X, dtype=float)
    points = exit_tradeoff(model, X)
    assert [p.label for p in points][0] == "exact exit" and len(points) == 1 + len(CASCADE_KEEPS)
    assert points[0].agreement == 1.0  # the exact exit never changes a label
    held_out = np.ascontiguousarray(X[1::2])
    full = model.predict(held_out)
    n = len(model.learners_)
    for keep, point in zip(CASCADE_KEEPS, points[1:], strict=True):
        cascade = model.calibrate_cascade(X[::2], keep)
        codes, used = model.model_.predict_codes(held_out, early_exit=cascade)
        assert point.agreement == np.mean(model.classes_[codes] == full)
        assert point.share == used.mean() / n <= 1.0
    # less asked to be kept: no more work
    shares = [p.share for p in points[1:]]
    assert all(a >= b - 1e-12 for a, b in zip(shares, shares[1:], strict=False))
    page = render_report(model, X, y)
    assert 'id="tradeoff-table"' in page and 'alt="exit trade-off"' in page
    assert f"<td>{points[3].share:.4g}</td>" in page


def test_categorical_model_gets_the_exit_sections():
    """Trees that split by sets of categories: the report's exact exit and soft cascades run
    through those splits (its page once failed there)."""
    import pandas as pd

    rng = np.random.default_rng(0)
    n = 400
    X = pd.DataFrame({"colour": rng.choice(["red", "green", "blue", "grey"], n),
                      "x": rng.standard_normal(n)})
    y = np.where(X["colour"].isin(["red", "blue"]), "warm", "cold")
    y[X["x"].to_numpy() > 1.0] = "high"
    model = RebelClassifier(40, random_state=0).fit(X[:300], y[:300])
    page = render_report(model, X[300:], y[300:])
    parsed = _parse(page)
    assert not parsed.problems and set(SECTIONS) <= set(parsed.ids)
    assert 'id="tradeoff-table"' in page
    _, used = model.model_.predict_codes(model.encode(X[300:]), early_exit="exact")
    assert f"<td>{(used / len(model.learners_)).mean():.4g}</td>" in page
    assert "colour in {" in page or "colour = " in page


@pytest.mark.parametrize("make", [
    lambda: AdaBoostMHClassifier(6, weak_learner="tree"),
    lambda: AdaBoostMHClassifier(3, factorized=False),
    lambda: MCBoostClassifier(6, algorithm="gd", max_depth=2),
    lambda: MCBoostClassifier(6),
    lambda: OneVsAllAdaBoostClassifier(3),
    lambda: RebelClassifier(6, weak_learner="similarity"),
], ids=["mh-tree", "mh-unfactorized", "gd-mcboost", "cd-mcboost", "one-vs-all", "similarity"])
def test_every_booster_gets_a_report(make):
    X, y = _five_features(150, seed=1)
    model = make().fit(X[:100], y[:100])
    parsed = _parse(render_report(model, X[100:], y[100:]))
    assert not parsed.problems and set(SECTIONS) <= set(parsed.ids)
    n_learners = len(model.learners_) if hasattr(model, "learners_") else len(model.trees_)
    views = learner_views(model)
    assert len(views) == n_learners
    assert all(v.vectors.shape[1] == len(model.classes_) for v in views)


def test_learner_views_factor_leaf_scores():
    """AdaBoost.MH leaves add +-(one vector): a row of +-1 outputs and that vector. GD-MCBoost's
    codeword leaves keep one row of scores per leaf. A tree with equal leaves reads "always"."""
    X, y = _five_features(150, seed=2)
    model = AdaBoostMHClassifier(8).fit(X, y)
    for view, scores in zip(learner_views(model), model.leaf_scores_, strict=True):
        signs = {float(out) for _, out in view.branches}
        assert signs <= {1.0, -1.0} and view.vectors.shape[0] == 1
        for leaf in scores:
            assert np.allclose(leaf, view.vectors[0]) or np.allclose(leaf, -view.vectors[0])
    gd = MCBoostClassifier(4, algorithm="gd", max_depth=2).fit(X, y)
    assert any(v.vectors.shape[0] > 1 for v in learner_views(gd))  # codeword leaves, per leaf
    rebel = RebelClassifier(3).fit(X, y)
    rebel.model_.values[0] = rebel.model_.values[0, 0]  # equal leaves merge into one region
    assert learner_views(rebel)[0].branches == [("always", "+1")]


def test_unknown_labels_are_refused(spiral):
    model, X, y, *_ = spiral
    with pytest.raises(ValueError, match="not among the model's classes"):
        render_report(model, X, np.where(y == "plain", "other", y))


# ------------------------------------------------------------------ command line


def _rebelboost(*args):
    beside = Path(sys.executable).with_name("rebelboost")  # the venv running the tests
    exe = str(beside) if beside.exists() else shutil.which("rebelboost")
    if exe is None:
        pytest.fail("the rebelboost entry point is not installed")
    return subprocess.run([exe, *args], capture_output=True, text=True, timeout=300)


def test_cli_writes_the_report(trees5, tmp_path):
    pd = pytest.importorskip("pandas")
    model, X, y = trees5
    model.save(tmp_path / "model.json")
    frame = pd.DataFrame(X, columns=[f"c{j}" for j in range(X.shape[1])]).assign(label=y)
    frame.to_csv(tmp_path / "test.csv", index=False)
    out = tmp_path / "page.html"
    result = _rebelboost("report", str(tmp_path / "model.json"), str(tmp_path / "test.csv"),
                         "--target", "label", "--out", str(out), "--title", "cli")
    assert result.returncode == 0, result.stderr
    assert "report written to" in result.stdout
    parsed = _parse(out.read_text(encoding="utf-8"))
    assert set(SECTIONS) <= set(parsed.ids) and not parsed.problems


def test_cli_bad_input_is_one_line(trees5, tmp_path):
    from click.testing import CliRunner

    from rebelboost.cli.report_command import report

    model, X, y = trees5
    model.save(tmp_path / "model.json")
    np.savez(tmp_path / "test.npz", X=X, y=np.where(y == 2, 7, y))
    runner = CliRunner()
    data = str(tmp_path / "test.npz")
    for args, message in (([str(tmp_path / "missing.json"), data], "not found"),
                          ([str(tmp_path / "model.json"), data], "not among the model's classes")):
        result = runner.invoke(report, [*args, "--out", str(tmp_path / "page.html")])
        assert result.exit_code == 1 and isinstance(result.exception, SystemExit)
        assert message in result.output and "Traceback" not in result.output


# ------------------------------------------------------------------ browser

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """Headless Chromium through selenium; fails (not skips) when it is not installed."""
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not Path(p).exists()]
    if missing:
        pytest.fail(f"browser tests need {' and '.join(missing)}: install them with "
                    "'apt-get install -y chromium chromium-driver' (CI does)")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.fail("browser tests need selenium: pip install selenium (a dev extra)")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--window-size=1280,1600",
                 f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    yield driver
    driver.quit()


def _open(driver, path: Path):
    driver.get(path.resolve().as_uri())
    severe = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    assert not severe, severe


def _visible_rows(driver):
    return [r for r in driver.find_elements("css selector", "#learner-table tbody tr")
            if r.is_displayed()]


@pytest.mark.browser
def test_spiral_page_in_chromium(browser, spiral, tmp_path):
    from PIL import Image

    model, X, y, *_ = spiral
    path = write_report(model, X, y, tmp_path / "spiral.html")
    _open(browser, path)
    for ident in (*SECTIONS, "boundary"):
        assert browser.find_element("id", ident).is_displayed()
    images = browser.find_elements("css selector", "img")
    assert images and all(browser.execute_script(
        "return arguments[0].complete && arguments[0].naturalWidth > 0", img) for img in images)
    assert len(_visible_rows(browser)) == model.n_estimators_
    assert not browser.find_element("id", "learner-more").is_displayed()  # one page only
    shot = tmp_path / "spiral.png"
    assert browser.save_screenshot(str(shot))
    with Image.open(shot) as image:
        assert image.format == "PNG" and image.width >= 800
        assert len(image.convert("RGB").getcolors(maxcolors=1 << 20)) > 50


@pytest.mark.browser
def test_learner_filter_and_paging_in_chromium(browser, trees5, tmp_path):
    model, X, y = trees5
    _open(browser, write_report(model, X, y, tmp_path / "trees.html"))
    assert len(_visible_rows(browser)) == 50  # the first page
    browser.find_element("id", "learner-more").click()
    assert len(_visible_rows(browser)) == model.n_estimators_
    assert not browser.find_element("id", "learner-more").is_displayed()
    box = browser.find_element("id", "learner-filter")
    box.send_keys("x3 >")
    rows = _visible_rows(browser)
    assert 0 < len(rows) < model.n_estimators_
    assert all("x3 >" in r.find_element("css selector", ".search").text for r in rows)
    assert "matching learners" in browser.find_element("id", "learner-status").text
    box.clear()
    box.send_keys("no rule says this")
    assert _visible_rows(browser) == []
    severe = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert not severe, severe


def test_reliability_section_reports_the_expected_calibration_error():
    from rebelboost.costs import expected_calibration_error
    from rebelboost.report.evaluation import reliability

    X, y = _five_features(300, seed=4)
    model = RebelClassifier(20, random_state=0).fit(X[:200], y[:200])
    rel = reliability(model, X[200:], y[200:])
    codes = np.searchsorted(model.classes_, y[200:])
    proba = model.predict_proba(X[200:])
    assert rel.ece == pytest.approx(expected_calibration_error(proba, codes))
    # Direct computation: 15 equal-width bins [i/15, (i+1)/15) of the top probability.
    top, right = proba.max(axis=1), proba.argmax(axis=1) == codes
    edges = np.linspace(0, 1, 16)
    direct = sum(np.mean(sel) * abs(right[sel].mean() - top[sel].mean())
                 for lo, hi in zip(edges[:-1], edges[1:], strict=True)
                 if (sel := (top >= lo) & ((top < hi) | (hi == 1))).any())
    assert rel.ece == pytest.approx(direct)
    # The plotted bins carry the printed number.
    assert rel.ece == pytest.approx(np.sum(rel.counts * abs(rel.accuracy - rel.confidence)) / 100)
    assert rel.counts.sum() == 100 and np.all((rel.accuracy >= 0) & (rel.accuracy <= 1))
    page = render_report(model, X[200:], y[200:])
    assert 'id="reliability"' in page and f"Expected calibration error {rel.ece:.4g}" in page
