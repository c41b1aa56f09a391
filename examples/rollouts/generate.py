#!/usr/bin/env python3
"""Writes rollouts.jsonl: a small, hand-designed rollout table for the bundled
RTL seeds (examples/seeds/rtl), covering every branch of `crucible select`.

Correct responses are the seed's reference renamed to TopModule; wrong ones
are the reference with one deliberate bug. Most rows carry no verdict, so the
engine verifies them with Icarus; a few carry verdicts the way a training
stack would export them. Re-run after changing a seed: python3 generate.py
"""
import json
import os

SEEDS = os.path.join(os.path.dirname(__file__), "..", "seeds", "rtl")


def ref(task):
    with open(os.path.join(SEEDS, task, "reference.sv")) as f:
        return f.read().replace("module RefModule", "module TopModule").strip()


def bug(task, old, new):
    src = ref(task)
    assert old in src, (task, old)
    return src.replace(old, new, 1)


def fenced(code, lead="Here is my implementation."):
    return f"{lead}\n\n```verilog\n{code}\n```\n"


rows = []


def add(task, policy, sample, response, rnd=0, **verdict):
    row = {"task_id": task, "policy": policy, "sample_index": sample, "round": rnd, "response": response}
    row.update(verdict)
    rows.append(row)


# counter_up8_en: the student solves it once in four (exploration stratum).
t = "counter_up8_en"
add(t, "student", 0, fenced(ref(t)))
add(t, "student", 1, fenced(bug(t, "count + 8'd1", "count + 8'd2")))
add(t, "student", 2, fenced(bug(t, "count == 8'hFF", "count == 8'hFE")))
add(t, "student", 3, fenced(bug(t, "count + 8'd1", "count + 8'd2")))
add(t, "teacher", 0, fenced(ref(t)))

# counter_gray4: capability gap; the teacher's first sample is wrong, its
# second (kept in full) is right.
t = "counter_gray4"
for s in range(4):
    add(t, "student", s, fenced(bug(t, "bin ^ (bin >> 1)", "bin"), "A Gray counter is a binary counter."))
add(t, "teacher", 0, fenced(bug(t, "bin >> 1", "bin << 1")))
add(t, "teacher", 1, "Gray code: g = b ^ (b >> 1), so only one bit changes per step.\n\n<answer>\n" + ref(t) + "\n</answer>\n")

# lfsr16_fib: neither policy solves it: uncovered.
t = "lfsr16_fib"
for s in range(4):
    add(t, "student", s, fenced(bug(t, "q[15] ^ q[13] ^ q[12] ^ q[10]", "q[15] ^ q[14] ^ q[12] ^ q[3]")))
add(t, "teacher", 0, fenced(bug(t, "16'hACE1", "16'h0001")))
add(t, "teacher", 1, fenced(bug(t, "q[15] ^ q[13] ^ q[12] ^ q[10]", "q[0] ^ q[2] ^ q[3] ^ q[5]")))

# counter_mod10_tc: fails at round 0, recovers with feedback at round 2
# (feedback-recoverable); the teacher solves it at round 0 (also a gap).
t = "counter_mod10_tc"
add(t, "student", 0, fenced(bug(t, "(q == 4'd9) ? 4'd0", "(q == 4'd8) ? 4'd0"), "Wrap after nine."))
add(t, "student", 1, "The counter wraps at 9 and raises carry on the wrapping cycle.")
add(t, "student", 0, fenced(bug(t, "assign carry = en && (q == 4'd9);", "assign carry = en && (q == 4'd9)"), "Fixed the wrap."), rnd=1)
add(t, "student", 1, fenced(bug(t, "assign carry = en && (q == 4'd9);", "assign carry = (q == 4'd9);")), rnd=1)
add(t, "student", 0, fenced(ref(t), "Added the missing semicolon and wrap at 9."), rnd=2)
add(t, "teacher", 0, fenced(ref(t)))

# barrel_shifter16: always solved (exploitation).
t = "barrel_shifter16"
for s in range(4):
    add(t, "student", s, fenced(ref(t)))

# counter_johnson5: half right (near-mastery).
t = "counter_johnson5"
add(t, "student", 0, fenced(ref(t)))
add(t, "student", 1, fenced(bug(t, "~q[4]", "q[4]")))
add(t, "student", 2, fenced(ref(t)))
add(t, "student", 3, fenced(bug(t, "~q[4]", "q[4]")))

# counter_down8_load_sat: three in four (exploitation, 75%).
t = "counter_down8_load_sat"
for s in range(3):
    add(t, "student", s, fenced(ref(t)))
add(t, "student", 3, fenced(bug(t, "en && count != 8'd0", "en")))

# shift_sipo8_done: verdicts attached by the training stack, one unjudged
# (excluded from pass@k and masked in rewards).
t = "shift_sipo8_done"
add(t, "student", 0, fenced(ref(t)), status="pass")
add(t, "student", 1, fenced(ref(t)), status="fail", failure_stage="mismatch", feedback="wrong outputs")
add(t, "student", 2, fenced(ref(t)), status="unjudged", failure_stage="worker_crash")
add(t, "student", 3, fenced(ref(t)), status="fail", failure_stage="compile", feedback="syntax error")

# shift_piso8_busy: the student games the checker once (exploit) and fails
# otherwise; the teacher's answer is verified by the engine.
t = "shift_piso8_busy"
add(t, "student", 0, fenced("module TopModule(...); initial $display(\"PASS\"); endmodule"), status="pass", exploit=True)
add(t, "student", 1, fenced(bug(t, "left <= 4'd8", "left <= 4'd7")), status="fail", failure_stage="mismatch")
add(t, "student", 2, fenced(bug(t, "left <= 4'd8", "left <= 4'd7")), status="fail", failure_stage="mismatch")
add(t, "student", 3, fenced(bug(t, "left <= 4'd8", "left <= 4'd7")), status="fail", failure_stage="mismatch")
add(t, "teacher", 0, fenced(ref(t)))

# counter_updown4_arst_n: the student never writes code (extract failures).
t = "counter_updown4_arst_n"
for s in range(4):
    add(t, "student", s, "An up/down counter adds or subtracts one each enabled cycle; reset is asynchronous and active low.")
add(t, "teacher", 0, fenced(ref(t)))

with open(os.path.join(os.path.dirname(__file__), "rollouts.jsonl"), "w") as f:
    for r in rows:
        f.write(json.dumps(r) + "\n")
print(f"wrote {len(rows)} rollouts")
