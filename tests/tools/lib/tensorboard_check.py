"""Reads nn-train's TensorBoard event directory with TensorBoard's own reader (EventAccumulator,
PyPI package tensorboard) and checks it against the run's JSON-lines epoch log: every epoch's
scalars at step = epoch with the log's numbers (as 32-bit floats, TensorBoard's scalar type),
each step once, the minibatch scalars at the expected updates, and the hparams plugin's records
(hyper-parameters and end status). Exit status 1 with the differences.

Usage: tensorboard_check.py DIR EPOCHS_JSONL [--minibatch-steps 2,4,...] [--hparams k=v,...]
                            [--status success|failure|none] [--files 1]
"""
import argparse
import json
import os
import struct
import sys

from tensorboard.backend.event_processing import event_accumulator
from tensorboard.plugins.hparams import plugin_data_pb2

# JSON-lines key -> TensorBoard tag (validation metrics: validation/<name>).
EPOCH_TAGS = {
    "loss": "train/loss",
    "data_loss": "train/data_loss",
    "reg_loss": "train/reg_loss",
    "alpha": "train/learning_rate",
    "examples_per_second": "train/examples_per_second",
    "seconds": "train/epoch_seconds",
}
MINIBATCH_TAGS = ["minibatch/loss", "minibatch/learning_rate", "minibatch/examples_per_second"]


def as_float32(v):
    return struct.unpack("<f", struct.pack("<f", v))[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("epochs_jsonl")
    ap.add_argument("--minibatch-steps", default="")
    ap.add_argument("--hparams", default="")
    ap.add_argument("--status", default="success")
    ap.add_argument("--files", type=int, default=1)
    a = ap.parse_args()
    problems = []

    files = sorted(f for f in os.listdir(a.dir) if "tfevents" in f)
    if len(files) != a.files:
        problems.append(f"{len(files)} event files in {a.dir}: {files}")

    acc = event_accumulator.EventAccumulator(a.dir, size_guidance={
        event_accumulator.SCALARS: 0, event_accumulator.TENSORS: 0})
    acc.Reload()
    tags = set(acc.Tags()["scalars"])
    rows = [json.loads(line) for line in open(a.epochs_jsonl)]
    epochs = [r["epoch"] for r in rows]
    if epochs != list(range(1, len(rows) + 1)):
        problems.append(f"the JSON-lines log's epochs are {epochs}")

    expected = {}  # tag -> [(step, value)]
    for r in rows:
        for key, tag in EPOCH_TAGS.items():
            expected.setdefault(tag, []).append((r["epoch"], r[key]))
        for name, value in r.get("validation", {}).items():
            expected.setdefault("validation/" + name, []).append((r["epoch"], value))
    compared = 0
    for tag, want in expected.items():
        if tag not in tags:
            problems.append(f"no scalar {tag} (tags: {sorted(tags)})")
            continue
        got = [(e.step, e.value) for e in acc.Scalars(tag)]
        if [s for s, _ in got] != [s for s, _ in want]:
            problems.append(f"{tag}: steps {[s for s, _ in got]}, the log has {[s for s, _ in want]}")
            continue
        for (step, value), (_, logged) in zip(got, want):
            # The log prints the rate with a float's 7 digits; every other number in full.
            if logged is None or value != as_float32(logged):
                problems.append(f"{tag} at step {step}: {value!r}, the log has {logged!r}")
            compared += 1

    steps = [int(s) for s in a.minibatch_steps.split(",") if s]
    for tag in MINIBATCH_TAGS:
        got = [e.step for e in acc.Scalars(tag)] if tag in tags else []
        if got != steps:
            problems.append(f"{tag}: steps {got}, expected {steps}")
    if steps and "minibatch/loss" in tags:
        losses = [e.value for e in acc.Scalars("minibatch/loss")]
        if not all(0 < v < 100 for v in losses):
            problems.append(f"minibatch/loss values {losses}")
    extra = tags - set(expected) - (set(MINIBATCH_TAGS) if steps else set())
    if extra:
        problems.append(f"unexpected scalars {sorted(extra)}")

    content = acc.PluginTagToContent("hparams")
    start = content.get("_hparams_/session_start_info")
    if start is None:
        problems.append(f"no hparams session start record (hparams tags: {sorted(content)})")
    else:
        info = plugin_data_pb2.HParamsPluginData.FromString(start).session_start_info
        for item in filter(None, a.hparams.split(",")):
            name, want = item.split("=", 1)
            if name not in info.hparams:
                problems.append(f"hparam {name} missing (have {sorted(info.hparams)})")
                continue
            v = info.hparams[name]
            kind = v.WhichOneof("kind")
            got = {"number_value": v.number_value, "string_value": v.string_value,
                   "bool_value": v.bool_value}.get(kind)
            if str(got) != want and not (kind == "number_value" and float(want) == got):
                problems.append(f"hparam {name} = {got!r}, expected {want}")
    end = content.get("_hparams_/session_end_info")
    status = {None: "none", 1: "success", 2: "failure"}.get(
        plugin_data_pb2.HParamsPluginData.FromString(end).session_end_info.status
        if end is not None else None)
    if status != a.status:
        problems.append(f"end status {status}, expected {a.status}")

    if problems:
        print("\n".join(problems))
        return 1
    print(f"tensorboard_check: {compared} epoch scalars equal the log's, "
          f"{len(steps)} minibatch steps, hparams and status {status}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
