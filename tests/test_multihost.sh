#!/bin/sh
# test_multihost.sh -- 2 x 2 ranks on two "hosts" that share no memory path: two network
# namespaces joined by a veth pair, each with its own hostname (a UTS namespace), Open MPI
# over TCP between them (btl tcp between the nodes; vader only inside a node). mpirun runs
# in namespace A and starts node B's daemon through a launcher script that does
# `ip netns exec B unshare --uts` instead of ssh (plm_rsh_agent).
#
# Proves: node-local rank detection (every rank sees 2 ranks on its node, on its own
# host; the one-node run sees 4), the cross-node exact path (the MPI_Alltoallv combine:
# ZERO_CPU_SHOW_NODES=1 makes the backend say which path it took) and bit-identical
# weights against the one-node run, in stages 0-3, with the communication thread on;
# hpZ and MiCS (one hop and two) keep those bits.
#
# Skips (77) unless run as root with `ip` (iproute2) and `unshare`, and where the
# kernel or the container does not allow network namespaces.
. "${ZERO_TEST_SRCDIR:-$(dirname "$0")}/lib.sh"

train="$top_builddir/examples/train_mlp"
require_built "$train"

skip() {
    echo "$test_name: skipped: $*"
    exit 77
}
[ "$(id -u)" -eq 0 ] || skip "not root (network namespaces need root)"
command -v ip >/dev/null 2>&1 || skip "no ip (iproute2)"
command -v unshare >/dev/null 2>&1 || skip "no unshare (util-linux)"

ns_a="zt_a_$$"
ns_b="zt_b_$$"
ip_a=10.231.77.1
ip_b=10.231.77.2
cleanup() {
    ip netns del "$ns_a" 2>/dev/null
    ip netns del "$ns_b" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
ip netns add "$ns_a" 2>/dev/null || skip "ip netns add is not allowed here"
ip netns add "$ns_b" 2>/dev/null || skip "ip netns add is not allowed here"
ip link add "veth_$$" netns "$ns_a" type veth peer name "vethb_$$" netns "$ns_b" 2>/dev/null ||
    skip "no veth pair between namespaces"
ip -n "$ns_a" addr add "$ip_a/24" dev "veth_$$" &&
    ip -n "$ns_b" addr add "$ip_b/24" dev "vethb_$$" &&
    ip -n "$ns_a" link set "veth_$$" up && ip -n "$ns_b" link set "vethb_$$" up &&
    ip -n "$ns_a" link set lo up && ip -n "$ns_b" link set lo up ||
    skip "cannot configure the veth pair"
unshare --uts true 2>/dev/null || skip "unshare --uts is not allowed here"

# the launcher Open MPI calls instead of ssh: AGENT HOST COMMAND...
agent="$tmp/netns-agent"
cat >"$agent" <<AGENT
#!/bin/sh
host=\$1
shift
case \$host in
$ip_b) exec ip netns exec $ns_b unshare --uts sh -c "hostname zt-node-b; \$*" ;;
*) exec ip netns exec $ns_a unshare --uts sh -c "hostname zt-node-a; \$*" ;;
esac
AGENT
chmod +x "$agent"

net="--mca btl tcp,vader,self --mca btl_tcp_if_include $ip_a/24 --mca oob_tcp_if_include $ip_a/24"
net="$net --mca plm_rsh_agent $agent --host $ip_a:2,$ip_b:2"
two_nodes() { # NAME ARGS...: 2 x 2 ranks, mpirun in namespace A as host zt-node-a
    name=$1
    shift
    # shellcheck disable=SC2086 # $net is a list of words
    ZERO_CPU_SHOW_NODES=1 ip netns exec "$ns_a" unshare --uts sh -c \
        'hostname zt-node-a; exec "$@"' sh "$mpirun_cmd" --allow-run-as-root --oversubscribe \
        --bind-to none -x ZERO_CPU_SHOW_NODES -x OPENBLAS_NUM_THREADS $net -np 4 "$@" \
        >"$tmp/$name.out" 2>"$tmp/$name.err"
    rc=$?
}

args="--hidden 32 --layers 2 --batch 16 --steps 2 --bucket 3000 --overlap 1 --quiet"
for stage in 0 1 2 3; do
    # shellcheck disable=SC2086 # $args is a list of words
    two_nodes "two_s$stage" "$train" --stage "$stage" $args \
        --save-weights "$tmp/two_s$stage.safetensors"
    if [ "$stage" -eq 0 ] && [ "$rc" -ne 0 ] && grep -q "ORTE\|orted\|daemon" "$tmp/two_s0.err"; then
        show two_s0
        skip "Open MPI cannot start a daemon in the second namespace here"
    fi
    expect_ok "two_s$stage" || continue
    # shellcheck disable=SC2086
    ZERO_CPU_SHOW_NODES=1 run "one_s$stage" 4 "$train" --stage "$stage" $args \
        --save-weights "$tmp/one_s$stage.safetensors"
    expect_ok "one_s$stage" || continue
    cmp -s "$tmp/one_s$stage.safetensors" "$tmp/two_s$stage.safetensors" ||
        fail "stage $stage: 2 x 2 ranks over TCP differ from 4 ranks on one node"
done

# hpZ with the node as the group (zero_hpz_partition_size 2): the backward's gathers stay
# inside a namespace, the weights are the one-node flat stage 3's, and the report finds
# the groups to be the nodes
printf '{"zero_optimization": {"stage": 3, "zero_hpz_partition_size": 2}}\n' >"$tmp/hpz.json"
hpz_args="--hidden 32 --layers 2 --batch 16 --steps 2 --persistence 0 --reuse-distance 0"
# shellcheck disable=SC2086
two_nodes two_hpz "$train" --config "$tmp/hpz.json" $hpz_args \
    --save-weights "$tmp/two_hpz.safetensors"
if expect_ok two_hpz; then
    # shellcheck disable=SC2086
    run one_flat 4 "$train" --stage 3 $hpz_args --quiet --save-weights "$tmp/one_flat.safetensors"
    expect_ok one_flat && { cmp -s "$tmp/one_flat.safetensors" "$tmp/two_hpz.safetensors" ||
        fail "hpZ on 2 x 2 ranks differs from flat stage 3 on one node"; }
    grep -q "hpZ groups of 2 ranks (the nodes): sent inside the group" "$tmp/two_hpz.out" ||
        { fail "two_hpz: the report does not find the hpZ groups to be the nodes"; show two_hpz; }
    grep -q MISMATCH "$tmp/two_hpz.out" && { fail "two_hpz: a count differs"; show two_hpz; }
fi

# MiCS with the node as the shard group (mics_shard_size 2: HSDP, the states replicated
# across the nodes), stages 1-3, and with the shard group spanning both nodes
# (mics_shard_size 4) gathering in two hops (mics_hierarchical_params_gather): the
# weights are the one-node stage 0's, the counts equal their formulas
mics_args="--hidden 32 --layers 2 --batch 16 --steps 2 --persistence 0 --reuse-distance 0"
# shellcheck disable=SC2086
run one_s0_mics 4 "$train" --stage 0 $mics_args --quiet --save-weights "$tmp/one_s0_mics.st"
expect_ok one_s0_mics
for c in 1:2:false 3:2:false 3:4:true; do
    stage=${c%%:*} rest=${c#*:}
    m=${rest%%:*} hier=${rest#*:}
    name="two_mics_s${stage}_m${m}"
    printf '{"zero_optimization": {"stage": %s, "mics_shard_size": %s, "mics_hierarchical_params_gather": %s}}\n' \
        "$stage" "$m" "$hier" >"$tmp/$name.json"
    # shellcheck disable=SC2086
    two_nodes "$name" "$train" --config "$tmp/$name.json" $mics_args --save-weights "$tmp/$name.st"
    expect_ok "$name" || continue
    cmp -s "$tmp/one_s0_mics.st" "$tmp/$name.st" ||
        fail "$name: MiCS on 2 x 2 ranks differs from stage 0 on one node"
    nodes="nodes hold 2 ranks each"
    [ "$m" -eq 2 ] && nodes="the nodes"
    grep -q "MiCS shard groups of $m ranks, $((4 / m)) replicas ($nodes)" \
        "$tmp/$name.out" || { fail "$name: no MiCS report line"; show "$name"; }
    grep -q MISMATCH "$tmp/$name.out" && { fail "$name: a count differs"; show "$name"; }
    if [ "$hier" = true ]; then
        grep -q "MiCS hierarchical gathers: inside the node (2 ranks), then across the 2 nodes" \
            "$tmp/$name.out" || { fail "$name: the gathers did not take two hops"; show "$name"; }
    fi
done

# qgZ with the nodes as its groups (no hpZ): two hops, inside the node then across it;
# the same bytes twice, the bytes across the nodes equal to their formula, and the bits
# of one node with the groups forced to 2 ranks (zero_hpz_partition_size 2: the same
# two hops, the same sums)
printf '{"zero_optimization": {"stage": 3, "zero_quantized_gradients": true}}\n' >"$tmp/qgz.json"
printf '{"zero_optimization": {"stage": 3, "zero_quantized_gradients": true, "zero_hpz_partition_size": 2}}\n' >"$tmp/qgz_hpz.json"
for i in 1 2; do
    # shellcheck disable=SC2086
    two_nodes "two_qgz$i" "$train" --config "$tmp/qgz.json" $hpz_args \
        --save-weights "$tmp/two_qgz$i.st"
done
if expect_ok two_qgz1 && expect_ok two_qgz2; then
    cmp -s "$tmp/two_qgz1.st" "$tmp/two_qgz2.st" ||
        fail "two_qgz: two qgZ runs on 2 x 2 ranks gave different weights"
    grep -q '^qgZ int4 all-to-all sent bytes per rank, groups of 2 ranks (the nodes), 2 groups: .* ok$' \
        "$tmp/two_qgz1.out" || { fail "two_qgz: no qgZ line over the nodes equal to its formula"; show two_qgz1; }
    grep -q MISMATCH "$tmp/two_qgz1.out" && { fail "two_qgz: a count differs"; show two_qgz1; }
    # shellcheck disable=SC2086
    run one_qgz 4 "$train" --config "$tmp/qgz_hpz.json" $hpz_args --quiet \
        --save-weights "$tmp/one_qgz.st"
    expect_ok one_qgz && { cmp -s "$tmp/one_qgz.st" "$tmp/two_qgz1.st" ||
        fail "two_qgz: qgZ over two nodes differs from one node in forced groups of 2"; }
fi

# node-local rank detection and the path, from the stage-0 runs
if [ -s "$tmp/two_s0.err" ]; then
    lines=$(grep -c "node rank [01] of 2 on zt-node-[ab]: MPI_Alltoallv path, communication thread" \
        "$tmp/two_s0.err")
    [ "$lines" -eq 4 ] || {
        fail "two nodes: expected 4 ranks reporting 2 ranks per node and the MPI_Alltoallv path"
        cat "$tmp/two_s0.err"
    }
    for host in zt-node-a zt-node-b; do
        n=$(grep -c "on $host:" "$tmp/two_s0.err")
        [ "$n" -eq 2 ] || fail "two nodes: $n ranks on $host, expected 2"
    done
    lines=$(grep -c "node rank [0-3] of 4 on .*: shared-memory path" "$tmp/one_s0.err")
    [ "$lines" -eq 4 ] || fail "one node: expected 4 ranks on one node on the shared-memory path"
fi
finish "2 x 2 ranks across two network namespaces (TCP, MPI_Alltoallv) match one node, stages 0-3, hpZ with the node as the group, MiCS with the node as the shard group (stages 1-3) and across both nodes in two hops, qgZ's two hops over the nodes deterministic and equal to forced groups"
