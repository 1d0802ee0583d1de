#!/bin/sh
# test_call_circles.sh -- no circle of calls between the library's files (docs/design.md,
# "Floors"): a file calls only files on its floor's way down, never one that calls it back.
# The graph comes from the objects the build already made (nm, about a second): each
# libtool object of src/ and backends/ (backends/cuda's too in a CUDA build) is a node,
# each undefined symbol that another object defines is an edge to that object. A strongly
# connected component of more than one file is a circle; it is printed with its files and
# one symbol per edge. known_circles may allow one while it is being removed (the test
# says when it is gone). Skips (77) when the objects are not built.
# CIRCLES_BUILDDIR=DIR checks another build (how the test was shown to fail on a planted
# circle).
# shellcheck source=SCRIPTDIR/lib.sh
. "${ZERO_TEST_SRCDIR:-$(dirname "$0")}/lib.sh"
build=${CIRCLES_BUILDDIR:-$top_builddir}
cd "$build" || exit 99

# the circles still being removed, one line each: its files, sorted, space-separated
known_circles=""

find src backends -name '*.lo' 2>/dev/null | LC_ALL=C sort >"$tmp/lo"
[ -s "$tmp/lo" ] || {
    echo "$test_name: no library objects under $build (build libzero.la first)"
    exit 77
}
command -v nm >/dev/null 2>&1 || {
    echo "$test_name: no nm"
    exit 77
}
# objects: one per libtool object, the PIC one where both exist; the node is the
# source's name (libzero_la-x.lo is x.c or x.cu)
while read -r lo; do
    dir=${lo%/*}
    base=${lo##*/}
    base=${base%.lo}
    # an object whose source is gone (a stale file of an older tree) is no node
    src=$top_srcdir/$dir/${base#libzero_la-}
    [ -f "$src.c" ] || [ -f "$src.cu" ] || continue
    obj=$dir/.libs/$base.o
    [ -f "$obj" ] || obj=$dir/$base.o
    [ -f "$obj" ] || {
        echo "$test_name: $lo has no object"
        exit 77
    }
    echo "$obj"
done <"$tmp/lo" >"$tmp/objs" || exit 77
# one nm for all (nm -A: "object: symbol type ...")
# shellcheck disable=SC2046 # object paths have no spaces
nm -P -A $(cat "$tmp/objs") | awk '{
    node = $1; sub(/:$/, "", node); sub(/\/\.libs\//, "/", node)
    sub(/\/libzero_la-/, "/", node); sub(/\.o$/, "", node)
    print node, $2, $3
}' >"$tmp/syms" || exit 99

# circles: "file file ..." lines, then "  a -> b (symbol)" for each edge inside
awk '
    # defined: the first strong global definition; a name defined twice names no file
    $3 == "U" { use[$1, $2] = 1; uses[$1] = uses[$1] " " $2; next }
    $3 ~ /^[A-TX-Z]$/ {
        if ($2 in def && def[$2] != $1) twice[$2] = 1
        def[$2] = $1
    }
    { nodes[$1] = 1 }
    END {
        for (f in uses) {
            nodes[f] = 1
            n = split(uses[f], s, " ")
            for (i = 1; i <= n; i++) {
                g = def[s[i]]
                if (g == "" || g == f || (s[i] in twice)) continue
                if (!((f, g) in edge)) {
                    edge[f, g] = s[i]
                    out[f] = out[f] " " g
                }
            }
        }
        # reach[a, b]: b is reached from a (a walk from each file; a few hundred files)
        for (a in nodes) {
            top = 0; stack[++top] = a; seen[a, a] = 1
            while (top > 0) {
                f = stack[top--]
                n = split(out[f], t, " ")
                for (i = 1; i <= n; i++)
                    if (!((a, t[i]) in seen)) { seen[a, t[i]] = 1; stack[++top] = t[i] }
            }
        }
        for (a in nodes) {
            if (a in done) continue
            members = ""
            for (b in nodes)
                if (b != a && ((a, b) in seen) && ((b, a) in seen)) { members = members " " b; done[b] = 1 }
            if (members == "") continue
            members = a members
            n = split(members, m, " ")
            # sort the members (insertion sort: a circle is a handful of files)
            for (i = 2; i <= n; i++) {
                v = m[i]
                for (j = i - 1; j >= 1 && m[j] > v; j--) m[j + 1] = m[j]
                m[j + 1] = v
            }
            line = m[1]
            for (i = 2; i <= n; i++) line = line " " m[i]
            print line
            for (i = 1; i <= n; i++)
                for (j = 1; j <= n; j++)
                    if (i != j && ((m[i], m[j]) in edge))
                        print "  " m[i] " -> " m[j] " (" edge[m[i], m[j]] ")"
        }
    }' "$tmp/syms" >"$tmp/circles"

grep -v '^ ' "$tmp/circles" | LC_ALL=C sort >"$tmp/found"
printf '%s\n' "$known_circles" | sed '/^$/d' | LC_ALL=C sort >"$tmp/known"

# a circle not known fails, with its edges
LC_ALL=C comm -23 "$tmp/found" "$tmp/known" | while read -r circle; do
    echo "FAIL: a circle of calls between files: $circle"
    awk -v c="$circle" '!/^ / { on = ($0 == c) } /^ / && on' "$tmp/circles"
done >"$tmp/new"
# a known circle that is gone (or changed) is taken off the list; one whose files
# this build does not make (backends/cuda without CUDA) is not judged here
awk '{ print $1 }' "$tmp/syms" | sort -u >"$tmp/nodes"
LC_ALL=C comm -13 "$tmp/found" "$tmp/known" | while read -r circle; do
    # shellcheck disable=SC2086 # $circle is a list of files
    missing=$(printf '%s\n' $circle | grep -vxFf "$tmp/nodes")
    [ -n "$missing" ] || echo "FAIL: known circle gone or changed, take it off known_circles: $circle"
done >"$tmp/gone"
cat "$tmp/new" "$tmp/gone"
if [ -s "$tmp/new" ] || [ -s "$tmp/gone" ]; then
    exit 1
fi
echo "$test_name: $(wc -l <"$tmp/nodes") files, $(wc -l <"$tmp/known") known circles, no other"
exit 0
