#!/usr/bin/env python3
"""The straggler experiment: one of two workers takes twice as long per step.

Runs `strata-run` on the Fashion-MNIST MLP with the same two CPU devices
under Mirrored (synchronous: every step waits for the straggler) and
ParameterServer with an unbounded staleness (k = inf) and with k = 2, each
with and without the straggler, and prints a table: training samples/s, time
to 0.85 test accuracy (the test set is evaluated every --eval-every steps;
evaluation time included, the same for all),
final test accuracy, and the staleness the servers saw. JSON lines with
--json. Only the standard library is needed.

    bench/straggler_experiment.py --strata build/app/strata-run
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(strata, project, epochs, eval_every, strategy, extra):
    # Short "epochs" of eval_every steps (each evaluates the test set) give
    # time-to-accuracy a finer grain than whole passes over the data.
    cmd = [strata, project, "--no-run-dir", "--events", "jsonl", "--epochs", str(epochs), "--max-steps", str(eval_every),
           "--devices", "cpu:0,cpu:1", "--threads", "2", "--strategy", strategy] + extra
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    events = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    epochs_ev = [e for e in events if e["type"] == "epoch"]
    steps = [e for e in events if e["type"] == "step"]
    fin = [e for e in events if e["type"] == "finished"][-1]
    if fin["status"] != "completed":
        raise RuntimeError(" ".join(cmd) + ": " + fin["message"])
    started = [e for e in events if e["type"] == "run_started"][0]
    per_epoch = started["global_batch"] * started["steps_per_epoch"]
    samples = per_epoch * len(epochs_ev)
    train_seconds = sum(per_epoch / e["samples_per_sec"] for e in epochs_ev)
    reach = next((e["time"] for e in epochs_ev if (e["val_accuracy"] or 0) >= 0.85), None)
    stale = [s["staleness"] for s in steps if s.get("staleness") is not None]
    return {
        "samples_per_sec": samples / train_seconds,
        "seconds_to_0.85": reach,
        "final_val_accuracy": epochs_ev[-1]["val_accuracy"],
        "staleness_mean": sum(stale) / len(stale) if stale else None,
        "staleness_max": max(stale) if stale else None,
        "worker_steps": steps[-1].get("worker_steps") if steps else None,
    }


def median_row(runs):
    """Per-field medians over repeated runs (None where a run never got there)."""
    def med(values):
        if any(v is None for v in values):
            return None
        v = sorted(values)
        return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2
    out = {k: med([r[k] for r in runs]) for k in ("samples_per_sec", "seconds_to_0.85", "final_val_accuracy",
                                                   "staleness_mean", "staleness_max")}
    out["worker_steps"] = runs[0]["worker_steps"]
    out["runs"] = len(runs)
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--strata", default=os.path.join(ROOT, "build", "app", "strata-run"))
    p.add_argument("--project", default=os.path.join(ROOT, "resources", "examples", "fashion-mlp.strata"))
    p.add_argument("--epochs", type=int, default=25, help="evaluation periods (default 25 x 94 steps = 5 passes)")
    p.add_argument("--eval-every", type=int, default=94, help="steps between test-set evaluations")
    p.add_argument("--slowdown", default="2")
    p.add_argument("--repeats", type=int, default=3, help="runs per configuration; the table shows medians")
    p.add_argument("--json", action="store_true")
    a = p.parse_args()
    configs = [
        ("mirrored", "mirrored", []),
        ("parameter_server k=inf", "parameter_server", ["--staleness", "inf"]),
        ("parameter_server k=2", "parameter_server", ["--staleness", "2"]),
    ]
    rows = []
    for straggler in (False, True):
        for name, strategy, extra in configs:
            args = extra + (["--straggler", "1:" + a.slowdown] if straggler else [])
            runs = [run(a.strata, a.project, a.epochs, a.eval_every, strategy, args) for _ in range(a.repeats)]
            r = median_row(runs)
            r.update({"strategy": name, "straggler": f"worker 1 x{a.slowdown}" if straggler else "none"})
            rows.append(r)
            if a.json:
                print(json.dumps(r), flush=True)
    if a.json:
        return
    print(f"{'straggler':<13} {'strategy':<24} {'samples/s':>10} {'s to 0.85':>10} {'final acc':>10} {'staleness mean/max':>19}  worker steps")
    for r in rows:
        reach = f"{r['seconds_to_0.85']:.2f}" if r["seconds_to_0.85"] is not None else "not reached"
        stale = "-" if r["staleness_mean"] is None else f"{r['staleness_mean']:.2f}/{r['staleness_max']}"
        print(f"{r['straggler']:<13} {r['strategy']:<24} {r['samples_per_sec']:>10.0f} {reach:>10} "
              f"{r['final_val_accuracy']:>10.4f} {stale:>19}  {r['worker_steps'] or ''}")


if __name__ == "__main__":
    sys.exit(main())
