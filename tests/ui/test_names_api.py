"""The dashboard's boxes read names as the CLI does: on runs shaped as the Transformers callback
records them (``args.*``, ``peft_config.default.*``, ``loss``, ``eval_loss``), ``lr``, ``lora.r`` and
``eval/loss`` find them; a name no run has is a 422 whose one line names the closest (the pages show
it), never an empty table; parallel coordinates leave out each run's own folder and name."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from tunetrack import Tracker
from tunetrack.ui.app import create_app

LRS, RANKS, SEEDS = (3e-3, 3e-2), (4, 16), (0, 1)


@pytest.fixture
def trainer_runs(root):
    for lr in LRS:
        for r in RANKS:
            for seed in SEEDS:
                name = f"sft-lr{lr}-r{r}-s{seed}"
                config = {
                    "args": {
                        "learning_rate": lr,
                        "seed": seed,
                        "output_dir": f"out/{name}",
                        "run_name": name,
                    },
                    "peft_config": {"default": {"r": r, "lora_alpha": 2 * r}},
                }
                with Tracker(project="sft-sweep", name=name, dir=root, system=False, config=config) as t:
                    for step in range(1, 9):
                        t.log({"loss": 5.0 - lr * step - r / 100 - seed / 1000}, step=step)
                    t.log({"eval_loss": 5.0 - lr * 10 - r / 100 - seed / 1000}, step=8)
    return root


def test_short_names_and_spellings_in_the_boxes(trainer_runs):
    with TestClient(create_app(trainer_runs), base_url="http://test") as c:
        ids = c.get("/api/select", params={"where": "config.lr = 3e-2 and config.lora.r >= 16"}).json()["ids"]
        assert len(ids) == 2
        picked = c.get("/api/select", params={"where": "eval/loss:min < 4.7"}).json()["ids"]
        assert len(picked) == 4  # lr 3e-2: eval_loss 4.54..4.69; lr 3e-3: 4.81..4.93
        table = c.get("/api/groups", params={"by": "lr,lora.r", "key": ["eval/loss:min"]}).json()
        assert (
            table["keys"] == ["lr", "lora.r"]
            and [g["stats"]["eval/loss:min"]["n"] for g in table["groups"]] == [2] * 4
        )
        folded = c.get("/api/groups", params={"by": "all-but-seed", "key": ["eval_loss:min"]}).json()
        assert len(folded["groups"]) == 4
        assert folded["keys"] == [
            "args.learning_rate",
            "peft_config.default.r",
            "peft_config.default.lora_alpha",
        ]
        assert all(" · " in g["label"] and "output_dir" not in g["label"] for g in folded["groups"])
        axes = [a["name"] for a in c.get("/api/params", params={"metric": "eval/loss:min"}).json()["axes"]]
        assert axes == [
            "args.learning_rate",
            "args.seed",
            "peft_config.default.r",
            "peft_config.default.lora_alpha",
            "eval/loss:min",
        ]


@pytest.mark.parametrize(
    "path, params, message",
    [
        ("/api/select", {"where": "lr < 1e-4"}, "no run has metric 'lr'; did you mean config.lr"),
        ("/api/select", {"where": "state = failed"}, 'did you mean "failed"'),
        ("/api/select", {"where": "eval_lossx:min < 5"}, "did you mean eval_loss:min"),
        ("/api/groups", {"by": "lora.rank", "key": ["eval_loss:min"]}, "did you mean config.lora.r"),
        ("/api/groups", {"by": "lr", "key": ["eval_lossx:min"]}, "no run has metric 'eval_lossx:min'"),
    ],
)
def test_a_name_no_run_has_is_a_422_with_the_closest(trainer_runs, path, params, message):
    with TestClient(create_app(trainer_runs), base_url="http://test") as c:
        answer = c.get(path, params=params)
    assert answer.status_code == 422 and message in answer.json()["detail"], answer.text
