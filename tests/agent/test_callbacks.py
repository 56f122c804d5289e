"""The Hugging Face TrainerCallback and the Lightning Callback, with the real libraries on a
tiny CPU model, posting to the live server: steps and checkpoints with no other code."""

from __future__ import annotations

import pytest

from apps.accounts.services import token_issue, user_create_or_update
from apps.fleet.services import agent_scope_set
from apps.jobs.models import Checkpoint, JobMetric, JobPhase, NodeStepMetric
from kuae_agent.report import Reporter
from tests.binaries import module_or_skip

DEV = "make install (the dev lock's training libraries, torch's CPU build)"

torch = module_or_skip("torch", install=DEV)

pytestmark = pytest.mark.django_db(transaction=True)

STEPS = 6


@pytest.fixture
def training_env(live_server, job, monkeypatch) -> None:  # noqa: ANN001
    """What a one-process training job's environment holds: KUAE_* (no RANK or LOCAL_RANK:
    set, they make the libraries start torch.distributed; unset, both are 0)."""
    user = user_create_or_update(username="trainer", role="agent")
    agent_scope_set(user=user, cluster="c1", hostlist="gpu000")
    for name, value in {
        "KUAE_SERVER": live_server.url,
        "KUAE_TOKEN": token_issue(user=user),
        "KUAE_JOB_ID": str(job.pk),
        "KUAE_NODE": "gpu000",
    }.items():
        monkeypatch.setenv(name, value)
    for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "SLURM_PROCID", "SLURM_LOCALID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("WANDB_DISABLED", "true")


class Tokens(torch.utils.data.Dataset):
    """Random 16-token sequences."""

    def __len__(self) -> int:
        return 64

    def __getitem__(self, i: int) -> dict:
        ids = torch.randint(0, 50, (16,), generator=torch.Generator().manual_seed(i))
        return {"input_ids": ids, "labels": ids.clone()}


class TinyLM(torch.nn.Module):
    """An embedding and a linear head: a language model of 3,000 parameters."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(50, 16)
        self.head = torch.nn.Linear(16, 50)

    def forward(self, input_ids, labels=None):  # noqa: ANN001, ANN201
        logits = self.head(self.embed(input_ids))
        loss = torch.nn.functional.cross_entropy(logits.view(-1, 50), labels.view(-1))
        return {"loss": loss, "logits": logits}


def assert_reported(job, checkpoints: list[int]) -> None:  # noqa: ANN001
    rows = list(JobMetric.objects.filter(job=job).order_by("ts"))
    assert [r.step for r in rows] == list(range(1, STEPS + 1))
    assert all(r.step_time_s > 0 for r in rows)
    assert NodeStepMetric.objects.filter(job=job, node__hostname="gpu000").count() == STEPS
    assert sorted(Checkpoint.objects.filter(job=job).values_list("step", flat=True)) == checkpoints
    for c in Checkpoint.objects.filter(job=job):
        assert c.blocking_s >= 0 and c.size_bytes and c.size_bytes > 1000


def test_hugging_face_trainer_reports_steps_and_checkpoints(training_env, job, tmp_path):
    transformers = module_or_skip("transformers", install=DEV)
    from kuae_agent.hf import KuaeCallback

    args = transformers.TrainingArguments(
        output_dir=str(tmp_path),
        max_steps=STEPS,
        per_device_train_batch_size=4,
        logging_steps=2,
        save_steps=3,
        save_strategy="steps",
        report_to=[],
        use_cpu=True,
        include_num_input_tokens_seen=True,
        disable_tqdm=True,
        dataloader_num_workers=0,
    )
    trainer = transformers.Trainer(
        model=TinyLM(), args=args, train_dataset=Tokens(), callbacks=[KuaeCallback()]
    )
    trainer.train()
    assert_reported(job, [3, 6])
    rows = {r.step: r for r in JobMetric.objects.filter(job=job)}
    assert [s for s, r in sorted(rows.items()) if r.loss is not None] == [2, 4, 6]  # logged
    assert all(r.tokens_per_s > 0 for r in rows.values())  # 4 × 16 tokens a step


def test_lightning_reports_steps_and_checkpoints(training_env, job, tmp_path):
    lightning = module_or_skip("lightning.pytorch", install=DEV)
    from kuae_agent.lightning import KuaeCallback

    class Module(lightning.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.model = TinyLM()

        def training_step(self, batch, batch_idx):  # noqa: ANN001, ANN201
            return self.model(**batch)["loss"]

        def configure_optimizers(self):  # noqa: ANN201
            return torch.optim.SGD(self.parameters(), lr=0.1)

    every_3 = lightning.callbacks.ModelCheckpoint(
        dirpath=tmp_path, every_n_train_steps=3, save_top_k=-1
    )
    trainer = lightning.Trainer(
        max_steps=STEPS,
        accelerator="cpu",
        devices=1,
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[every_3, KuaeCallback()],
        default_root_dir=tmp_path,
    )
    loader = torch.utils.data.DataLoader(Tokens(), batch_size=4)
    trainer.fit(Module(), loader)
    assert_reported(job, [3, 6])
    rows = JobMetric.objects.filter(job=job)
    assert all(r.loss is not None and r.tokens_per_s > 0 for r in rows)  # 64 tokens a batch


def test_a_given_reporter_is_used_and_left_open(training_env, job, tmp_path):
    lightning = module_or_skip("lightning.pytorch", install=DEV)
    from kuae_agent.lightning import KuaeCallback

    rep = Reporter(per_node=False, flush_every_s=0.2)
    callback = KuaeCallback(rep, tokens_per_step=1000.0)
    assert callback.reporter is rep
    rep.step(0, step_time_s=1.0, tokens_per_s=1.0)
    assert rep.flush(10.0)
    rep.close()
    assert lightning is not None and JobMetric.objects.filter(job=job).count() == 1


def phases(job) -> list[tuple[str, int | None]]:  # noqa: ANN001
    """The job's phases other than `startup`, as (name, step), oldest first."""
    rows = JobPhase.objects.filter(job=job).exclude(name="startup").order_by("start")
    return [(p.name, p.step) for p in rows]


def test_hugging_face_marks_its_evaluations(training_env, job, tmp_path):
    transformers = module_or_skip("transformers", install=DEV)
    from kuae_agent.hf import KuaeCallback

    args = transformers.TrainingArguments(
        output_dir=str(tmp_path),
        max_steps=STEPS,
        per_device_train_batch_size=4,
        per_device_eval_batch_size=8,
        eval_strategy="steps",
        eval_steps=3,
        logging_steps=2,
        save_strategy="no",
        report_to=[],
        use_cpu=True,
        disable_tqdm=True,
        dataloader_num_workers=0,
    )
    trainer = transformers.Trainer(
        model=TinyLM(),
        args=args,
        train_dataset=Tokens(),
        eval_dataset=Tokens(),
        callbacks=[KuaeCallback()],
    )
    trainer.train()
    assert phases(job) == [("eval", 3), ("eval", 6)]
    assert all(p.duration_s > 0 for p in JobPhase.objects.filter(job=job, name="eval"))
    startup = JobPhase.objects.get(job=job, name="startup")  # the Reporter's, with no call
    assert startup.end <= JobMetric.objects.filter(job=job).order_by("ts").first().ts


def test_lightning_marks_validation_and_a_restore(training_env, job, tmp_path):
    lightning = module_or_skip("lightning.pytorch", install=DEV)
    from kuae_agent.lightning import KuaeCallback

    class Module(lightning.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.model = TinyLM()

        def training_step(self, batch, batch_idx):  # noqa: ANN001, ANN201
            return self.model(**batch)["loss"]

        def validation_step(self, batch, batch_idx):  # noqa: ANN001, ANN201
            return self.model(**batch)["loss"]

        def configure_optimizers(self):  # noqa: ANN201
            return torch.optim.SGD(self.parameters(), lr=0.1)

    def fit(max_steps: int, ckpt_path: str | None = None) -> None:
        trainer = lightning.Trainer(
            max_steps=max_steps,
            accelerator="cpu",
            devices=1,
            logger=False,
            enable_progress_bar=False,
            enable_model_summary=False,
            callbacks=[KuaeCallback()],
            default_root_dir=tmp_path,
            val_check_interval=3,
            limit_val_batches=2,
            num_sanity_val_steps=1,  # the sanity check is no evaluation of the run
            enable_checkpointing=False,
        )
        loader = torch.utils.data.DataLoader(Tokens(), batch_size=4)
        trainer.fit(Module(), loader, loader, ckpt_path=ckpt_path)
        if ckpt_path is None:
            trainer.save_checkpoint(tmp_path / "at3.ckpt")

    fit(3)
    assert phases(job) == [("eval", 3)]
    fit(STEPS, ckpt_path=str(tmp_path / "at3.ckpt"))  # resumed: a restore, then eval at 6
    assert phases(job) == [("eval", 3), ("checkpoint_restore", 3), ("eval", 6)]
    restore = JobPhase.objects.get(job=job, name="checkpoint_restore")
    first_step_after = JobMetric.objects.filter(job=job, step=4).get()
    assert restore.duration_s > 0 and restore.end <= first_step_after.ts
