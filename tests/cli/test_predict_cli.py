"""`hnow predict` through a subprocess: Table 2, JSON shape, and every bad input exits 2 with one line."""

from __future__ import annotations

import json

import pytest

from hnowmodel.params import paper_profile


def test_ptp_reproduces_table2(hnow):
    proc = hnow("predict", "--op", "ptp", "--sizes", "0", "--json")
    assert proc.returncode == 0, proc.stderr
    got = {r["tree"]: r["time_us"] for r in json.loads(proc.stdout)["predictions"]}
    assert got == {"fast->fast": 170.0, "fast->slow": 200.0, "slow->fast": 200.0, "slow->slow": 230.0}


def test_one_pair_and_table_output(hnow):
    proc = hnow("predict", "--op", "ptp", "--from", "slow", "--to", "slow", "--sizes", "0,1K")
    assert proc.returncode == 0 and "slow->slow" in proc.stdout and "230.00" in proc.stdout


def test_bcast_json_rows(hnow):
    proc = hnow("predict", "--layout", "FFSS", "--tree", "binomial,sequential", "--sizes", "0,1000", "--json")
    rows = json.loads(proc.stdout)["predictions"]
    assert [set(r) for r in rows] == [{"op", "tree", "size", "time_us"}] * 4
    got = {(r["tree"], r["size"]): r["time_us"] for r in rows}
    assert got[("binomial", 1000)] == pytest.approx(980.0)  # eq. 7 worked by hand in tests/hnowmodel


def test_profile_file_and_gather(hnow, tmp_path):
    p = paper_profile().save(tmp_path / "p.json")
    args = (
        "--profile",
        str(p),
        "--op",
        "gather",
        "--layout",
        "fast,fast,slow,slow",
        "--tree",
        "sequential",
        "--sizes",
        "1000",
        "--json",
    )
    # eq. 12 as printed: the i-th arrival is S_(i) + i*X -> 206, 462, 558; receives of 124 µs -> 330, 586, 710
    paper = hnow("predict", *args, "--variant", "paper")
    assert json.loads(paper.stdout)["predictions"][0]["time_us"] == pytest.approx(710.0)
    # the registry's default (link): one message at a time on the root's link -> 206, 366, 462; done 330, 490, 614
    link = hnow("predict", *args)
    assert json.loads(link.stdout)["predictions"][0]["time_us"] == pytest.approx(614.0)


def _bad_profile(tmp_path, text):
    f = tmp_path / "bad.json"
    f.write_text(text)
    return str(f)


def _profile_with(tmp_path, mutate):
    d = paper_profile().to_dict()
    mutate(d)
    return _bad_profile(tmp_path, json.dumps(d))


@pytest.mark.parametrize(
    "make_args, needle",
    [
        (lambda tmp: ["--profile", str(tmp / "missing.json")], "no such file"),
        (lambda tmp: ["--profile", _bad_profile(tmp, "{not json")], "not valid JSON"),
        (lambda tmp: ["--profile", _bad_profile(tmp, '{"schema": "other/1"}')], "schema"),
        (
            lambda tmp: ["--profile", _profile_with(tmp, lambda d: d["types"]["fast"]["regimes"][0].pop("Rc_us"))],
            "Rc_us",
        ),
        (lambda tmp: ["--profile", _profile_with(tmp, lambda d: d["network"]["regimes"][0].update(Xc_us=-1))], "Xc_us"),
        (lambda tmp: ["--layout", "FFMS"], "'M'"),
        (lambda tmp: ["--layout", "fast,medium"], "medium"),
        (lambda tmp: ["--tree", "nosuchtree"], "nosuchtree"),
        (lambda tmp: ["--op", "allreduce"], "allreduce"),
        (lambda tmp: ["--sizes", "-4"], "-4"),
        (lambda tmp: ["--sizes", "4K..1K"], "4K..1K"),
        (lambda tmp: ["--root", "9"], "root 9"),
        (lambda tmp: ["--op", "ptp", "--from", "medium"], "medium"),
        (lambda tmp: ["--op", "gather", "--variant", "fifo"], "fifo"),
    ],
)
def test_bad_input_exit_2_one_line(hnow, tmp_path, make_args, needle):
    args = ["predict", "--layout", "FFSS", *make_args(tmp_path)]
    proc = hnow(*args)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""


def test_layout_length_vs_tree_file(hnow, tmp_path):
    from hnowmodel.trees import binomial

    f = tmp_path / "tree.json"
    f.write_text(json.dumps(binomial(8).to_dict()))
    proc = hnow("predict", "--layout", "FFSS", "--tree", f"@{f}")
    assert proc.returncode == 2 and "8 ranks, expected 4" in proc.stderr
    proc = hnow("predict", "--layout", "FFFFSSSS", "--tree", f"@{f}", "--sizes", "0", "--json")
    assert json.loads(proc.stdout)["predictions"][0]["time_us"] == pytest.approx(660.0)


def test_order_best_never_slower_than_rank_order(hnow):
    def times(*extra):
        proc = hnow(
            "predict",
            "--op",
            "scatter",
            "--layout",
            "FFSSFS",
            "--tree",
            "sequential",
            "--sizes",
            "0,4K",
            "--json",
            *extra,
        )
        return [r["time_us"] for r in json.loads(proc.stdout)["predictions"]]

    plain, best = times(), times("--order", "best")
    assert all(b <= p for b, p in zip(best, plain, strict=True)) and best[0] < plain[0]


@pytest.mark.parametrize("profile", ["paper", "cluster"])
def test_predict_an_allreduce_by_its_ring_on_paper_and_network_profiles(hnow, profile):
    import hnowmodel as hm
    from tests.golden_corpus import DATA

    path = "paper" if profile == "paper" else str(DATA / "cluster_profile.json")
    layout = ["--layout", "FSFS"] if profile == "paper" else []
    argv = ["predict", "--op", "allreduce", "--tree", "ring", "--sizes", "16K,64K", "--profile", path, *layout]
    proc = hnow(*argv, "--reduce-us-per-byte", "0.0004", "--json")
    assert proc.returncode == 0, proc.stderr
    got = [r["time_us"] for r in json.loads(proc.stdout)["predictions"]]
    want = hm.predict("allreduce", path, "FSFS" if layout else None, "ring", [16384, 65536], reduce_us_per_byte=4e-4)
    assert got == pytest.approx(want.tolist(), rel=1e-12)
    refused = hnow(*argv)  # no γ stated, none in the profile: one line, exit 2
    assert refused.returncode == 2 and "allreduce combines buffers" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
