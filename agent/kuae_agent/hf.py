"""Hugging Face `transformers`: a `TrainerCallback` that reports every optimizer step and
every checkpoint to KUAE Ops with no other code (docs/agent.md). Imports transformers, so
import this module only where it is installed:

    from kuae_agent.hf import KuaeCallback
    trainer = Trainer(..., callbacks=[KuaeCallback()])

Step time is the wall time between optimizer steps; tokens per second come from the
Trainer's `num_input_tokens_seen` (`TrainingArguments(include_num_input_tokens_seen=True)`)
or `tokens_per_step`, else 0; loss and grad norm from the Trainer's logs, on the steps it
logs. A checkpoint is reported when the Trainer has saved it: `saved_at` when the save
began (the end of that step's logging and evaluation), `blocking_s` the time since, and the
size of the checkpoint folder. Each evaluation during training is the phase `eval`
(docs/agent.md, Phases): from the end of the step's logging to `on_evaluate`. A resumed
run's checkpoint load has no event of its own in the Trainer (it loads the weights before
any callback is told): its time is inside the `startup` phase the Reporter records.

The Trainer calls its callbacks on every process, so every rank makes its Reporter, told
its rank, local rank and world size by the Trainer (`args.process_index`,
`local_process_index`, `world_size`: right even where RANK is not in the environment):
rank 0 sends the job-wide samples, the first rank of each node the node's, and every rank
registers and runs its watchdog (docs/agent.md).
"""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from kuae_agent.report import Reporter


def folder_size(path: Path) -> int | None:
    """Bytes under `path` (None when it is not there)."""
    if not path.is_dir():
        return None
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def ranks(args: Any) -> dict[str, Any]:
    """The process's rank, local rank and world size as the TrainingArguments know them
    (empty where they cannot tell: the Reporter reads the environment)."""
    try:
        return {
            "rank": int(args.process_index),
            "local_rank": int(args.local_process_index),
            "world_size": int(args.world_size),
        }
    except Exception:
        return {}


class KuaeCallback(TrainerCallback):
    """Reports steps and checkpoints through `reporter` (default: a Reporter configured
    from the environment, made when training begins and closed when it ends)."""

    def __init__(
        self, reporter: Reporter | None = None, *, tokens_per_step: float | None = None
    ) -> None:
        self.reporter = reporter
        self._own = reporter is None
        self.tokens_per_step = tokens_per_step
        self._last: float | None = None  # perf_counter at the previous step's end
        self._tokens_seen = 0
        self._held: dict[str, Any] | None = None  # this step's sample, waiting for its loss
        self._mark = time.perf_counter()
        self._mark_wall = time.time()
        self._evaluating = False  # a prediction step seen since the last evaluation

    def _rep(self, args: Any = None) -> Reporter:
        if self.reporter is None:
            self.reporter = Reporter(**ranks(args))
        return self.reporter

    def _emit(self) -> None:
        held, self._held = self._held, None
        if held is not None:
            self._rep().step(**held)

    def _marked(self) -> None:
        self._mark, self._mark_wall = time.perf_counter(), time.time()

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """Start the clock (and the Reporter: on every rank)."""
        self._rep(args)
        self._last = time.perf_counter()
        self._tokens_seen = int(getattr(state, "num_input_tokens_seen", 0) or 0)

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """Send the previous step if no log line came for it."""
        self._emit()

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """Hold this step's timing until the Trainer has logged (or not) its loss."""
        now = time.perf_counter()
        step_time = now - (self._last if self._last is not None else now)
        self._last = now
        seen = int(getattr(state, "num_input_tokens_seen", 0) or 0)
        tokens: float = seen - self._tokens_seen if seen > self._tokens_seen else 0.0
        self._tokens_seen = seen
        if not tokens and self.tokens_per_step:
            tokens = self.tokens_per_step
        self._held = {
            "step": int(state.global_step),
            "step_time_s": step_time,
            "tokens_per_s": tokens / step_time if step_time > 0 else 0.0,
        }
        self._marked()

    def on_log(
        self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kw: Any
    ) -> None:
        """Attach the logged loss and grad norm to the step they belong to."""
        if self._held is not None and logs:
            if "loss" in logs:
                self._held["loss"] = logs["loss"]
            if "grad_norm" in logs:
                self._held["grad_norm"] = logs["grad_norm"]
            self._emit()
        if not self._evaluating:  # an evaluation logs its metrics before `on_evaluate`
            self._marked()

    def on_prediction_step(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """An evaluation is under way (it began at the last mark)."""
        self._evaluating = True

    def on_evaluate(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """An evaluation during training is the phase `eval`, from the last mark to now; it
        is neither part of a checkpoint's pause nor of the next step's time."""
        self._evaluating = False
        if self._last is not None and self.reporter is not None:  # training, not evaluate()
            self.reporter.phase_start("eval", at=self._mark_wall)
            self.reporter.phase_end("eval", step=int(state.global_step))
            self._last = time.perf_counter()
        self._marked()

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """The Trainer has saved `checkpoint-{step}`: report it."""
        self._emit()
        blocking = time.perf_counter() - self._mark
        folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
        self._rep().checkpoint(
            int(state.global_step),
            saved_at=dt.datetime.fromtimestamp(self._mark_wall, tz=dt.UTC),
            blocking_s=blocking,
            size_bytes=folder_size(folder),
        )
        self._last = time.perf_counter()  # the save is not the next step's time

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """Send what is held; close the Reporter this callback made (it flushes)."""
        self._emit()
        if self._own and self.reporter is not None:
            self.reporter.close()
            self.reporter = None
