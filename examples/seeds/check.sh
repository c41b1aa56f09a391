#!/usr/bin/env bash
# Validates every bundled RTL seed task under examples/seeds/rtl/<item_id>/ with real Icarus and Yosys:
#   1. task.json is well formed (item_id = directory name, domain rtl, top TopModule, differential verifier on tb)
#      and instruction.md does not leak the reference (no module/endmodule text).
#   2. The reference, renamed RefModule -> TopModule, passes its own testbench:
#      "Mismatches: 0 in N samples" with N >= 200.
#   3. Yosys parses and elaborates the reference and its ports match task.json exactly.
#   4. The testbench is strong: every mutant must be caught (Mismatches > 0). Mutants are, for each output and
#      each data/control input (not clock or reset), the LSB and the MSB stuck at 0 and at 1 — an input mutant
#      survives when the stimulus never makes that bit matter; and for tasks with a reset, the same design with
#      the reset kind flipped (async <-> sync), which shows the testbench exercises reset timing.
# Needs iverilog/vvp (Icarus 11), yosys (0.23) and jq. Takes no arguments; exits non-zero on any failure.
set -u

here=$(cd "$(dirname "$0")" && pwd)
rtl="$here/rtl"
for tool in iverilog vvp yosys jq; do
    command -v "$tool" >/dev/null || { echo "check.sh: $tool not found on PATH" >&2; exit 2; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

min_samples=200
failed=0
total=0

# compile_tb <dir> <top.sv>: compiles the testbench, the reference and top.sv into $work/sim; fails on a compile error.
compile_tb() {
    rm -f "$work/sim"
    iverilog -g2012 -o "$work/sim" "$1/testbench.sv" "$1/reference.sv" "$2" 2>"$work/iverilog.log"
}

# sim_tb [plusargs...]: runs $work/sim; prints "<mismatches> <samples>" or "ERR <reason>"
sim_tb() {
    local out line
    out=$(cd "$work" && timeout 120 vvp -n sim "$@" 2>&1)
    if grep -q '^TIMEOUT' <<<"$out"; then echo "ERR timeout"; return; fi
    line=$(grep -E '^Mismatches: [0-9]+ in [0-9]+ samples$' <<<"$out" | tail -n 1)
    if [ -z "$line" ]; then echo "ERR no-result"; return; fi
    awk '{print $2, $4}' <<<"$line"
}

# run_tb <dir> <top.sv>: compiles and runs; prints "<mismatches> <samples>" or "ERR <reason>"
run_tb() {
    if ! compile_tb "$1" "$2"; then echo "ERR compile"; return; fi
    sim_tb
}

# stuck_mutants <dir> <mutant>...: writes one TopModule wrapper around the renamed reference holding every
# stuck-at mutant ("<port> <bit> <0|1>": one bit of one port, an output it drives or an input it passes on,
# forced); the plusarg +mut=<k> selects mutant k (0-based) at time 0, and no plusarg is the plain reference.
# One compile per task instead of one per mutant: the mutants differ only in which one +mut selects.
stuck_mutants() {
    local dir=$1 f="$work/mut.sv" k name dirn width port bit val expr lit
    shift
    local muts=("$@")
    sed 's/\bRefModule\b/RefMut/g' "$dir/reference.sv" >"$f"
    # mutant_expr <port> <base expression> <width>: base wrapped in one select per mutant of the port.
    mutant_expr() {
        local p=$1 e=$2 w=$3
        for k in "${!muts[@]}"; do
            read -r port bit val <<<"${muts[$k]}"
            [ "$port" = "$p" ] || continue
            lit="(${w}'d1 << $bit)"
            if [ "$val" = 1 ]; then e="(crucible_mut == $k) ? ($2 | $lit) : $e"; else e="(crucible_mut == $k) ? ($2 & ~$lit) : $e"; fi
        done
        echo "$e"
    }
    {
        echo "module TopModule ("
        jq -r '.interface.ports | map((if .direction == "input" then "input " else "output " end)
               + (if .width > 1 then "[\(.width - 1):0] " else "" end) + .name) | join(",\n")' "$dir/task.json"
        echo ");"
        echo "integer crucible_mut = -1;"
        echo 'initial if (!$value$plusargs("mut=%d", crucible_mut)) crucible_mut = -1;'
        jq -r '.interface.ports[] | select(.direction == "output")
               | "wire " + (if .width > 1 then "[\(.width - 1):0] " else "" end) + .name + "_m;"' "$dir/task.json"
        echo "RefMut m ("
        local conns=()
        while read -r name dirn width; do
            if [ "$dirn" = input ]; then conns+=(".$name($(mutant_expr "$name" "$name" "$width"))"); else conns+=(".$name(${name}_m)"); fi
        done < <(jq -r '.interface.ports[] | "\(.name) \(.direction) \(.width)"' "$dir/task.json")
        (IFS=,; echo "${conns[*]}")
        echo ");"
        while read -r name width; do
            echo "assign $name = $(mutant_expr "$name" "${name}_m" "$width");"
        done < <(jq -r '.interface.ports[] | select(.direction == "output") | "\(.name) \(.width)"' "$dir/task.json")
        echo "endmodule"
    } >>"$f"
}

# reset_mutant <dir> <reset> <polarity> <kind>: the reference with its reset kind flipped; fails if nothing changed.
reset_mutant() {
    local dir=$1 rst=$2 pol=$3 kind=$4 f="$work/mut.sv" edge
    sed 's/\bRefModule\b/TopModule/g' "$dir/reference.sv" >"$f.orig"
    if [ "$kind" = async ]; then
        sed -E "s/[[:space:]]+or[[:space:]]+(pos|neg)edge[[:space:]]+$rst\b//g" "$f.orig" >"$f"
    else
        edge=posedge; [ "$pol" = low ] && edge=negedge
        sed -E "s/@\((pos|neg)edge clk\)/@(\1edge clk or $edge $rst)/g" "$f.orig" >"$f"
    fi
    ! cmp -s "$f" "$f.orig"
}

printf '%-26s %-15s %-26s %-8s %-6s %-8s %s\n' TASK FAMILY CLOCK/RESET SAMPLES YOSYS MUTANTS RESULT
for dir in "$rtl"/*/; do
    dir=${dir%/}
    id=$(basename "$dir")
    total=$((total + 1))
    problems=()
    for f in task.json instruction.md reference.sv testbench.sv; do
        [ -f "$dir/$f" ] || problems+=("missing $f")
    done
    if [ ${#problems[@]} -gt 0 ]; then
        printf '%-26s %s\n' "$id" "FAIL: ${problems[*]}"; failed=$((failed + 1)); continue
    fi
    if ! jq -e --arg id "$id" '.item_id == $id and .domain == "rtl" and .interface.top == "TopModule"
            and .verifier.kind == "differential" and .verifier.top == "tb" and (.family | length > 0)
            and (.interface.ports | length > 0) and (.difficulty >= 1 and .difficulty <= 5)' \
            "$dir/task.json" >/dev/null 2>&1; then
        problems+=("task.json fields")
    fi
    if grep -qE '\b(endmodule|RefModule)\b' "$dir/instruction.md"; then problems+=("instruction leaks code"); fi
    grep -q 'Mismatches: %1d in %1d samples' "$dir/testbench.sv" || problems+=("testbench result line")

    family=$(jq -r '.family' "$dir/task.json")
    clk=$(jq -r '.interface.clock // ""' "$dir/task.json")
    rst=$(jq -r '.interface.reset // ""' "$dir/task.json")
    pol=$(jq -r '.interface.reset_polarity // ""' "$dir/task.json")
    kind=$(jq -r '.interface.reset_kind // ""' "$dir/task.json")
    cr="comb"
    [ -n "$clk" ] && cr="$clk"
    [ -n "$rst" ] && cr="$cr/$rst/$kind-$pol"

    # 2. reference passes its own testbench
    sed 's/\bRefModule\b/TopModule/g' "$dir/reference.sv" >"$work/top.sv"
    read -r mm samples <<<"$(run_tb "$dir" "$work/top.sv")"
    if [ "$mm" != 0 ]; then
        problems+=("reference: $mm $samples")
    elif [ "$samples" -lt "$min_samples" ]; then
        problems+=("only $samples samples")
    fi

    # 3. yosys elaborates the reference; ports match task.json
    ys=ok
    if ! (cd "$work" && yosys -q -p "read_verilog -sv $dir/reference.sv; hierarchy -top RefModule; proc_clean;
            proc_rmdead; proc_prune; proc_init; proc_arst; proc_mux; proc_dff; proc_memwr; proc_clean;
            opt_clean; write_json out.json" >"$work/yosys.log" 2>&1); then
        ys=FAIL; problems+=("yosys")
    else
        got=$(jq -r '.modules.RefModule.ports | to_entries[] | "\(.key) \(.value.direction) \(.value.bits | length)"' \
            "$work/out.json" | sort)
        want=$(jq -r '.interface.ports[] | "\(.name) \(.direction) \(.width)"' "$dir/task.json" | sort)
        if [ "$got" != "$want" ]; then ys=ports; problems+=("ports differ from task.json"); fi
    fi

    # 4. mutants must be caught
    killed=0; nmut=0; survivors=(); muts=()
    while read -r port width; do
        bits=0; [ "$width" -gt 1 ] && bits="0 $((width - 1))"
        for b in $bits; do
            for v in 0 1; do muts+=("$port $b $v"); done
        done
    done < <(jq -r --arg c "$clk" --arg r "$rst" '.interface.ports[] | select(.name != $c and .name != $r)
                    | "\(.name) \(.width)"' "$dir/task.json")
    if [ ${#muts[@]} -gt 0 ]; then
        stuck_mutants "$dir" "${muts[@]}"
        if ! compile_tb "$dir" "$work/mut.sv"; then
            problems+=("stuck-at mutants do not compile: $(head -n 3 "$work/iverilog.log" | tr '\n' ' ')")
        else
            # The wrapper with no mutant selected must be the reference: else a "caught" mutant proves nothing.
            read -r mmm _ <<<"$(sim_tb)"
            [ "$mmm" = 0 ] || problems+=("mutant wrapper without a mutant: $mmm mismatches")
            for k in "${!muts[@]}"; do
                nmut=$((nmut + 1))
                read -r port b v <<<"${muts[$k]}"
                read -r mmm _ <<<"$(sim_tb "+mut=$k")"
                if [[ "$mmm" =~ ^[0-9]+$ ]] && [ "$mmm" -gt 0 ]; then killed=$((killed + 1)); else survivors+=("$port[$b]=$v:$mmm"); fi
            done
        fi
    fi
    if [ -n "$rst" ]; then
        nmut=$((nmut + 1))
        if reset_mutant "$dir" "$rst" "$pol" "$kind"; then
            read -r mmm _ <<<"$(run_tb "$dir" "$work/mut.sv")"
            if [[ "$mmm" =~ ^[0-9]+$ ]] && [ "$mmm" -gt 0 ]; then killed=$((killed + 1)); else survivors+=("reset-kind:$mmm"); fi
        else
            survivors+=("reset-kind:not-applicable")
        fi
    fi
    [ ${#survivors[@]} -gt 0 ] && problems+=("survivors: ${survivors[*]}")

    result=OK
    if [ ${#problems[@]} -gt 0 ]; then result="FAIL: ${problems[*]}"; failed=$((failed + 1)); fi
    printf '%-26s %-15s %-26s %-8s %-6s %-8s %s\n' "$id" "$family" "$cr" "$samples" "$ys" "$killed/$nmut" "$result"
done

echo "checked $total tasks, $failed failed"
[ "$total" -gt 0 ] && [ "$failed" -eq 0 ]
