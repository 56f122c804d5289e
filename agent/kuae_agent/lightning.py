"""PyTorch Lightning: a `Callback` that reports every optimizer step and every checkpoint
to KUAE Ops with no other code (docs/agent.md). Imports Lightning (`lightning`, else
`pytorch_lightning`), so import this module only where it is installed:

    from kuae_agent.lightning import KuaeCallback
    trainer = L.Trainer(..., callbacks=[KuaeCallback()])

Step time is the wall time between optimizer steps (`trainer.global_step` moving on);
tokens per second from `tokens_per_step`, else the batch's `input_ids` (a dict batch), else
0; loss from the training step's output (read on the Reporter's thread, never `.item()` on
the training thread). A checkpoint: `saved_at` when Lightning began saving it,
`blocking_s` until training resumed (the next batch, or the end), and the size of the file
its ModelCheckpoint wrote. Phases (docs/agent.md, Phases): each validation during training
(`on_validation_start` to `on_validation_end`, not the sanity check) is `eval`; a run
resumed from a checkpoint (`ckpt_path=`; Lightning calls `on_load_checkpoint`) reports
`checkpoint_restore` from the callback's `setup` to training start, at the restored step —
Lightning reads the file before any callback hook, so the span begins just before that
read and includes the strategy's setup.

Lightning calls its callbacks on every process, so every rank makes its Reporter, told its
rank, local rank and world size by the Trainer (`global_rank`, `local_rank`, `world_size`:
Lightning's own launcher puts no RANK in the environment): rank 0 sends the job-wide
samples, the first rank of each node the node's, and every rank registers and runs its
watchdog (docs/agent.md).
"""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path
from typing import Any

try:
    from lightning.pytorch import Callback
except ImportError:  # the older package name
    from pytorch_lightning import Callback  # type: ignore[assignment]

from kuae_agent.report import Reporter


def _tokens(batch: Any) -> float:
    ids = batch.get("input_ids") if isinstance(batch, dict) else None
    numel = getattr(ids, "numel", None)
    return float(numel()) if callable(numel) else 0.0


def _written_size(trainer: Any, since: float) -> int | None:
    """The size of the checkpoint file the trainer's ModelCheckpoint callbacks wrote last
    (at or after `since`), if one did."""
    paths: set[str] = set()
    for callback in getattr(trainer, "checkpoint_callbacks", None) or []:
        paths.update(getattr(callback, "best_k_models", {}) or {})
        paths.update(
            {getattr(callback, "last_model_path", ""), getattr(callback, "best_model_path", "")}
        )
    newest: tuple[float, int] | None = None
    for path in filter(None, paths):
        try:
            stat = Path(path).stat()
        except OSError:
            continue
        if stat.st_mtime >= since - 1 and (newest is None or stat.st_mtime > newest[0]):
            newest = (stat.st_mtime, stat.st_size)
    return newest[1] if newest else None


def ranks(trainer: Any) -> dict[str, Any]:
    """The process's rank, local rank and world size as the Trainer knows them (empty where
    it cannot tell: the Reporter reads the environment)."""
    try:
        return {
            "rank": int(trainer.global_rank),
            "local_rank": int(trainer.local_rank),
            "world_size": int(trainer.world_size),
        }
    except Exception:
        return {}


class KuaeCallback(Callback):
    """Reports steps and checkpoints through `reporter` (default: a Reporter configured
    from the environment, made when training starts and closed when it ends)."""

    def __init__(
        self, reporter: Reporter | None = None, *, tokens_per_step: float | None = None
    ) -> None:
        super().__init__()
        self.reporter = reporter
        self._own = reporter is None
        self.tokens_per_step = tokens_per_step
        self._last: float | None = None
        self._step = -1
        self._saving: tuple[int, float, float] | None = None  # step, wall, perf at save start
        self._setup_wall: float | None = None  # when `setup` ran: a restore follows it
        self._restored: int | None = None  # the step of the checkpoint Lightning restored
        self._validating: float | None = None  # wall time a validation began

    def _rep(self, trainer: Any = None) -> Reporter:
        if self.reporter is None:
            self.reporter = Reporter(**ranks(trainer))
        return self.reporter

    def _saved(self, trainer: Any) -> None:
        if self._saving is None:
            return
        step, wall, began = self._saving
        self._saving = None
        size = _written_size(trainer, wall)
        self._rep().checkpoint(
            step,
            saved_at=dt.datetime.fromtimestamp(wall, tz=dt.UTC),
            blocking_s=time.perf_counter() - began,
            size_bytes=size,
        )
        self._last = time.perf_counter()  # the save is not the next step's time

    def setup(self, trainer: Any, pl_module: Any, stage: str) -> None:
        """Note the time: Lightning restores a checkpoint next, when it was given one."""
        self._setup_wall = time.time()

    def on_load_checkpoint(self, trainer: Any, pl_module: Any, checkpoint: dict[str, Any]) -> None:
        """Lightning is restoring a checkpoint: note its step."""
        try:
            self._restored = int(checkpoint.get("global_step", trainer.global_step))
        except Exception:
            self._restored = None

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        """Start the clock (and the Reporter: on every rank); report a restore."""
        rep = self._rep(trainer)
        if self._restored is not None and self._setup_wall is not None:
            rep.phase_start("checkpoint_restore", at=self._setup_wall)
            rep.phase_end("checkpoint_restore", step=self._restored)
            self._restored = None
        self._last = time.perf_counter()
        self._step = int(trainer.global_step)

    def on_validation_start(self, trainer: Any, pl_module: Any) -> None:
        """A validation during training begins: the phase `eval`."""
        if not getattr(trainer, "sanity_checking", False) and self.reporter is not None:
            self._validating = time.time()

    def on_validation_end(self, trainer: Any, pl_module: Any) -> None:
        """It ends: report it; it is not the next step's time."""
        began, self._validating = self._validating, None
        if began is not None and self.reporter is not None:
            self.reporter.phase_start("eval", at=began)
            self.reporter.phase_end("eval", step=int(trainer.global_step))
            self._last = time.perf_counter()

    def on_train_batch_start(self, trainer: Any, pl_module: Any, batch: Any, idx: int) -> None:
        """A checkpoint saved after the previous batch has finished blocking."""
        self._saved(trainer)

    def on_train_batch_end(
        self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, idx: int
    ) -> None:
        """Report the step when the optimizer has stepped."""
        step = int(trainer.global_step)
        if step == self._step:
            return  # accumulating gradients: not a step yet
        self._step = step
        now = time.perf_counter()
        step_time = now - (self._last if self._last is not None else now)
        self._last = now
        tokens = self.tokens_per_step or _tokens(batch) * max(1, int(trainer.world_size))
        loss = outputs.get("loss") if isinstance(outputs, dict) else outputs
        detach = getattr(loss, "detach", None)
        self._rep().step(
            step,
            step_time_s=step_time,
            tokens_per_s=tokens / step_time if step_time > 0 else 0.0,
            loss=detach() if callable(detach) else loss,
        )

    def on_save_checkpoint(self, trainer: Any, pl_module: Any, checkpoint: dict[str, Any]) -> None:
        """Lightning begins saving: note when (the file is written next)."""
        self._saved(trainer)
        self._saving = (int(trainer.global_step), time.time(), time.perf_counter())

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        """Report a last checkpoint; close the Reporter this callback made (it flushes)."""
        self._saved(trainer)
        if self._own and self.reporter is not None:
            self.reporter.close()
            self.reporter = None
