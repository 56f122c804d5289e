"""The telemetry intake's hand-written field validators against two libraries (issue 44):
msgspec (the body's bytes decoded straight into Structs with constraints) and pydantic v2 (a
TypeAdapter over the same shape, `validate_json` on the bytes), each also from orjson's dict
as the endpoint has it, each producing the same TelemetrySample list as
`parse_telemetry_batch`. Three batches of 1,024 GPUs × 12 DCGM values, built as
tests/bench/intake.py builds a sweep: a good one, the same with one bad value, the same
stamped an hour ahead (every sample refused); then the intake's rules, body by body, each
library version read against the intake. Times are CPU-time ratios against the intake as it
runs (orjson.loads, then `parse_telemetry_batch`), measured in the same rounds. No
database; the verdict is in docs/operations.md, Why the intake's validators are
hand-written.

Neither library is a runtime dependency of KUAE (pydantic is in the dev lock, through
typer): install them apart to measure, e.g.

    .venv/bin/pip install --target /tmp/valpkgs msgspec pydantic
    python -m tests.bench.validators            # 21 rounds, 1,024 GPUs
    python -m tests.bench.validators 9 10240    # a request of 10,240 GPUs

(`VALIDATOR_PACKAGES` names another folder); a library that is not installed is skipped.
The candidates below are the smallest faithful versions this bench could write; what each
cannot do as the intake does is said beside it.
"""

# No `from __future__ import annotations`: the libraries read the annotations of classes
# made inside functions, which must be evaluated where the classes are made.

import datetime as dt
import json
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from typing import Annotated, Any, Literal, NotRequired

PACKAGES = os.environ.get("VALIDATOR_PACKAGES", "/tmp/valpkgs")
GPUS = 1024  # 128 nodes: the bench sweep's request (tests/bench/intake.py)
BAD_SAMPLE = 517  # the one bad value of the error batch: samples[517].metrics.temp_c


def _django() -> None:
    """The intake's modules import Django models: settings, no database."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kuaeweb.settings_test")
    import django

    django.setup()


def _bodies(now: dt.datetime, gpus: int) -> tuple[bytes, bytes, bytes]:
    """(the good batch, the same with `samples[BAD_SAMPLE].metrics.temp_c` a string, the
    same stamped an hour ahead: a relay whose clock is wrong, every sample refused)."""
    from tests.bench.intake import _sweep_bodies

    hosts = [f"gpu{n:05d}" for n in range(gpus // 8)]
    (good,) = _sweep_bodies(hosts, now, len(hosts), random.Random(7))
    payload = json.loads(good)
    payload["samples"][BAD_SAMPLE]["metrics"]["temp_c"] = "hot"
    (ahead,) = _sweep_bodies(hosts, now + dt.timedelta(hours=1), len(hosts), random.Random(7))
    return good.encode(), json.dumps(payload).encode(), ahead.encode()


# ---- msgspec: the Structs replace the fast path (`_plain_sample`) only. It stops at the
# first problem and names a metric only as `metrics[...]`, so a refused body goes to the
# hand-written careful path (`_parse_each`), which lists every problem as today.


def msgspec_parser(from_dict: bool = False) -> Callable[[bytes, dt.datetime], list]:
    """`parse(body, now)` with msgspec, from the bytes or (`from_dict`) from orjson's dict
    as the endpoint has it; ImportError when msgspec is not installed."""
    import msgspec
    import orjson
    from msgspec import Meta, Struct

    from apps.common.hostnames import hostname_key
    from apps.common.limits import METRIC_NAMES_PER_GPU
    from apps.common.timeutil import FUTURE_SLACK, UTC
    from apps.fleet.vendors import model_name
    from apps.telemetry.intake import (
        MAX_NAME,
        MAX_SAMPLES,
        TelemetrySample,
        _wide_as_float,
        parse_telemetry_batch,
    )
    from apps.telemetry.pcibus import pci_bus_normal

    Name = Annotated[str, Meta(max_length=MAX_NAME)]

    class Sample(Struct):
        node: Annotated[str, Meta(min_length=1, max_length=253)]
        gpu: Annotated[int, Meta(ge=0)]
        ts: Annotated[dt.datetime, Meta(tz=True)]
        metrics: Annotated[
            dict[Annotated[str, Meta(max_length=64)], int | float],
            Meta(min_length=1, max_length=METRIC_NAMES_PER_GPU),
        ]
        pci_bus: str | None = None
        vendor: Literal["nvidia", "amd", "intel", "mthreads"] | None = None
        model: Name | None = None
        uuid: Name | None = None

    class Batch(Struct):
        samples: Annotated[list[Sample], Meta(min_length=1, max_length=MAX_SAMPLES)]

    decoder = msgspec.json.Decoder(Batch)

    def batch(body: bytes) -> Batch:
        return msgspec.convert(orjson.loads(body), Batch) if from_dict else decoder.decode(body)

    def sample(s: Sample, latest: dt.datetime) -> TelemetrySample:
        ts = s.ts if s.ts.tzinfo is UTC else s.ts.astimezone(UTC)
        metrics: dict[str, float] | None = s.metrics
        values = s.metrics.values()
        if not -(2**63) <= min(values) <= max(values) < 2**63:
            metrics = _wide_as_float(s.metrics)  # a 64-bit counter past 2**63: a float
        if ts > latest or metrics is None or s.node.strip() != s.node:
            raise ValueError  # the careful path names it
        node = hostname_key(s.node)
        if s.pci_bus is None and s.vendor is None and s.model is None and s.uuid is None:
            return TelemetrySample(node, s.gpu, ts, metrics)  # the common sample
        return TelemetrySample(
            node,
            s.gpu,
            ts,
            metrics,
            uuid=(s.uuid or "").strip(),
            model=model_name(s.vendor or "", (s.model or "").strip()),
            pci_bus="" if s.pci_bus is None else pci_bus_normal(s.pci_bus),
            vendor=s.vendor or "",
        )

    def parse(body: bytes, now: dt.datetime) -> list[TelemetrySample]:
        latest = now + FUTURE_SLACK
        try:
            return [sample(s, latest) for s in batch(body).samples]
        except (msgspec.ValidationError, ValueError):
            return parse_telemetry_batch(orjson.loads(body), now=now)

    return parse


# ---- pydantic: one TypeAdapter replaces both paths (`_plain_sample`, `_parse_each` and
# `_metrics`); every problem comes back, each translated to the message the API documents
# (docs/api.md, Conventions). Faithful only by handing most fields to the hand-written
# readers (apps.common.parse, parse_ts, pci_bus_normal): pydantic's own int takes "3" and
# refuses 3.0, its datetime words its errors otherwise, and a null is not "required".


def pydantic_parser(from_dict: bool = False) -> Callable[[bytes, dt.datetime], list]:
    """`parse(body, now)` with pydantic v2, from the bytes or (`from_dict`) from orjson's
    dict as the endpoint has it; ImportError when pydantic is not installed."""
    import orjson
    from pydantic import Field, PlainValidator, StrictInt, TypeAdapter, ValidationError
    from typing_extensions import TypedDict  # pydantic's, on Python < 3.12

    from apps.common.errors import BatchError
    from apps.common.limits import METRIC_NAMES_PER_GPU
    from apps.common.parse import integer, node_name
    from apps.common.timeutil import not_future, parse_ts
    from apps.fleet.vendors import model_name
    from apps.telemetry.intake import MAX_SAMPLES, TelemetrySample, _name, _vendor
    from apps.telemetry.pcibus import pci_bus_normal

    def optional(read: Callable[[Any], Any]) -> Any:
        return PlainValidator(lambda v: None if v is None else read(v))

    Int64 = Annotated[StrictInt, Field(ge=-(2**63), lt=2**63)]
    Float = Annotated[float, Field(strict=True, allow_inf_nan=False)]  # wider ints: floats

    class Sample(TypedDict):
        node: Annotated[str, PlainValidator(node_name)]
        gpu: Annotated[int, PlainValidator(lambda v: integer(v, minimum=0))]
        ts: Annotated[dt.datetime, PlainValidator(lambda v, i: not_future(parse_ts(v), i.context))]
        metrics: Annotated[
            dict[Annotated[str, Field(max_length=64)], Int64 | Float],
            Field(min_length=1, max_length=METRIC_NAMES_PER_GPU),
        ]
        pci_bus: NotRequired[Annotated[str, optional(pci_bus_normal)]]
        vendor: NotRequired[Annotated[str, optional(_vendor)]]
        model: NotRequired[Annotated[str, optional(_name)]]
        uuid: NotRequired[Annotated[str, optional(_name)]]

    class Batch(TypedDict):
        samples: Annotated[list[Sample], Field(min_length=1, max_length=MAX_SAMPLES)]

    adapter = TypeAdapter(Batch)

    def problem(loc: tuple[Any, ...], kind: str, ctx: dict[str, Any], value: Any) -> tuple:
        """(the field's path, the API's message) of one of pydantic's errors."""
        if len(loc) < 2:  # the body, or its `samples`
            if not loc:
                return "non_field_errors", "body must be a JSON object"
            if kind == "too_long":
                return "samples", f"at most {MAX_SAMPLES} items per batch"
            return "samples", "must be a non-empty list"
        where = f"samples[{loc[1]}]"
        if len(loc) == 2:
            return where, "must be an object"
        field = f"{where}.{loc[2]}"
        if loc[2] != "metrics":
            if value is None or kind == "missing":
                return field, "this field is required"
            return field, str(ctx.get("error", kind))
        if len(loc) == 3:  # the object itself
            if kind == "too_long":
                return field, f"at most {METRIC_NAMES_PER_GPU} metric names (the bound per GPU)"
            return field, "must be a non-empty object of name: number"
        if "[key]" in loc:
            return field, "metric names are at most 64 characters"
        # A value's problem comes once per member of the union: the first is kept.
        return (
            f"{field}.{loc[3]}",
            "must be finite" if kind == "finite_number" else "must be a number",
        )

    def parse(body: bytes, now: dt.datetime) -> list[TelemetrySample]:
        try:
            if from_dict:
                batch = adapter.validate_python(orjson.loads(body), context=now)
            else:
                batch = adapter.validate_json(body, context=now)
        except ValidationError as exc:
            errors: dict[str, list[str]] = {}
            for e in exc.errors(include_url=False):
                where, text = problem(e["loc"], e["type"], e.get("ctx", {}), e["input"])
                errors.setdefault(where, [text])
                if len(errors) >= 100:
                    errors["samples"] = ["too many errors; first 100 shown"]
                    break
            raise BatchError(errors) from None
        return [
            TelemetrySample(s["node"], s["gpu"], s["ts"], s["metrics"])
            if len(s) == 4  # the common sample: no identity, no PCI address
            else TelemetrySample(
                s["node"],
                s["gpu"],
                s["ts"],
                s["metrics"],
                uuid=s.get("uuid") or "",
                model=model_name(s.get("vendor") or "", s.get("model") or ""),
                pci_bus=s.get("pci_bus") or "",
                vendor=s.get("vendor") or "",
            )
            for s in batch["samples"]
        ]

    return parse


def interleaved_cpu_ms(calls: dict[Any, Callable[[], object]], rounds: int) -> dict[Any, float]:
    """Median CPU time of each call in milliseconds over `rounds` rounds, after one warm-up
    round; each round makes every call once, so a neighbour's burst of load falls on all of
    them alike. CPU time, not wall time: the parsers run on one thread, and on a machine
    loaded by others wall time measures the neighbours."""
    times: dict[Any, list[float]] = {key: [] for key in calls}
    for round_ in range(rounds + 1):
        for key, fn in calls.items():
            start = time.process_time()
            fn()
            if round_:
                times[key].append((time.process_time() - start) * 1000)
    return {key: statistics.median(values) for key, values in times.items()}


def _outcome(parse: Callable[[bytes, dt.datetime], list], body: bytes, now: dt.datetime) -> Any:
    """The samples, or the BatchError's errors."""
    from apps.common.errors import BatchError

    try:
        return parse(body, now)
    except BatchError as exc:
        return exc.errors


def _edge_cases(now: dt.datetime) -> dict[str, bytes]:
    """Bodies the intake's tests and docs hold it to (tests/telemetry, docs/api.md)."""
    stamp = now.isoformat()

    def body(**fields: Any) -> bytes:
        sample = {"node": "gpu0001", "gpu": 0, "ts": stamp, "metrics": {"temp_c": 50}}
        sample.update(fields)
        return json.dumps({"samples": [sample, {**sample, "gpu": 1}]}).encode()

    return {
        "a hostname in capitals is lowered": body(node="GPU0001"),
        "a counter past 2**63 is a float": body(metrics={"nvlink_bw_total": 2**70}),
        "a counter below it stays exact": body(metrics={"ecc_sbe_total": 2**62 + 1}),
        "an AMD PCI id names its model": body(vendor="amd", model="0x74a1"),
        "pci_bus in its normal form": body(pci_bus="00000000:18:00.0"),
        "gpu 3.0 is gpu 3": body(gpu=3.0),
        "epoch seconds as ts": body(ts=now.timestamp() - 60),
        "gpu as text refused": body(gpu="3"),
        "a future ts refused, in words": body(ts=(now + dt.timedelta(hours=1)).isoformat()),
        "a ts without a zone refused": body(ts=now.replace(tzinfo=None).isoformat()),
        "a null node is required": body(node=None),
        "a bool metric refused": body(metrics={"xid": True}),
        "every problem named (tests/telemetry/test_pure.py)": json.dumps(
            {
                "samples": [
                    {"node": "a", "gpu": -1, "ts": stamp, "metrics": {"temp_c": "hot"}},
                    {"gpu": 0, "ts": "nope", "metrics": {}},
                ]
            }
        ).encode(),
    }


def bench_validators(rounds: int = 21, gpus: int = GPUS) -> None:
    """Print each parser's time on the three batches, as a ratio to the intake's own, and
    which of the intake's rules each library version reads otherwise."""
    import orjson

    from apps.telemetry.intake import parse_telemetry_batch

    if os.path.isdir(PACKAGES) and PACKAGES not in sys.path:
        sys.path.append(PACKAGES)
    now = dt.datetime.now(dt.UTC)
    kinds = ("good batch", "one bad value", "every ts ahead")
    bodies = dict(zip(kinds, _bodies(now, gpus), strict=True))
    parsers: dict[str, Callable[[bytes, dt.datetime], Any]] = {
        "hand-written, orjson (the intake)": lambda b, n: parse_telemetry_batch(
            orjson.loads(b), now=n
        ),
        "hand-written, json.loads": lambda b, n: parse_telemetry_batch(json.loads(b), now=n),
    }
    for name, make in (("msgspec", msgspec_parser), ("pydantic", pydantic_parser)):
        try:
            module = __import__(name)
        except ImportError:
            print(f"  {name}: not installed, skipped (see this module's docstring)")
            continue
        parsers[f"{name} {module.__version__}"] = make()
        parsers[f"{name}, from orjson's dict"] = make(from_dict=True)
    hand = parsers["hand-written, orjson (the intake)"]
    expected = {kind: _outcome(hand, body, now) for kind, body in bodies.items()}
    ms = interleaved_cpu_ms(
        {
            (label, kind): lambda p=parse, b=body: _outcome(p, b, now)
            for label, parse in parsers.items()
            for kind, body in bodies.items()
        },
        rounds,
    )
    print(
        f"\nField validators: one batch of {gpus:,} GPUs × 12 values "
        f"({len(bodies['good batch']):,} bytes), from the body's bytes; median CPU time of "
        f"{rounds} interleaved rounds, and its ratio to the intake's own (orjson + hand-written)"
    )
    print(f"  {'':<36}" + "".join(f"{kind:>20}" for kind in bodies) + "   same result")
    for label, parse in parsers.items():
        cells = "".join(
            f"{ms[label, kind]:8.2f} ms {ms[label, kind] / ms[next(iter(parsers)), kind]:5.2f}×"
            for kind in bodies
        )
        same = all(_outcome(parse, b, now) == expected[k] for k, b in bodies.items())
        print(f"  {label:<36}{cells}   {'yes' if same else 'NO'}")
    print(f"  (one bad value: {expected['one bad value']})")
    cases = _edge_cases(now)
    print(f"  the intake's rules: {len(cases)} bodies; those a library reads otherwise —")
    for label, parse in list(parsers.items())[2:]:
        differ = [k for k, b in cases.items() if _outcome(parse, b, now) != _outcome(hand, b, now)]
        print(f"  {label:<36}{len(differ)}: {'; '.join(differ) or 'none'}")


if __name__ == "__main__":
    sys.path.insert(0, os.getcwd())
    _django()
    args = [int(arg) for arg in sys.argv[1:3]]  # [ROUNDS [GPUS]]
    bench_validators(*args)
