#!/usr/bin/env python3
"""Draw a libzero Chrome trace (train_mlp --trace) as an SVG timeline.

    python3 trace_to_svg.py trace.json trace.svg

A stand-in for a trace viewer where none can be opened (the docs' screenshot was made
from this drawing: Perfetto's UI and chrome://tracing could not be loaded offline).
One band per rank (pid), two lanes in each: compute (tid 1) and communication (tid 2),
as Perfetto lays them out; every slice is coloured by what it is and labelled when wide
enough. Only the standard library is used.
"""
import json
import sys
from html import escape

COLORS = {
    "forward": "#4e79a7", "backward": "#f28e2b", "recompute": "#9c755f",
    "optimizer": "#59a14f", "gather": "#b07aa1", "prefetch": "#d4a6c8",
    "gather_wait": "#bab0ac", "release": "#e0e0e0", "reduce_scatter": "#e15759",
    "all_reduce": "#e15759", "param_gather": "#76b7b2", "norm": "#edc948",
}
LANE_H, GAP, HEAD, LEFT, WIDTH = 26, 10, 18, 150, 1200
BAND = HEAD + 2 * LANE_H + GAP


def kind(name):
    return name.split(" ")[0]


def main(src, dst):
    with open(src) as f:
        events = json.load(f)["traceEvents"]
    names, threads = {}, {}
    slices = [e for e in events if e.get("ph") == "X"]
    for e in events:
        if e.get("ph") == "M" and e["name"] == "process_name":
            names[e["pid"]] = e["args"]["name"]
        if e.get("ph") == "M" and e["name"] == "thread_name":
            threads[(e["pid"], e["tid"])] = e["args"]["name"]
    if not slices:
        sys.exit("trace_to_svg: no slices in " + src)
    t0 = min(e["ts"] for e in slices)
    t1 = max(e["ts"] + e["dur"] for e in slices)
    scale = (WIDTH - LEFT - 20) / max(t1 - t0, 1e-9)
    pids = sorted(names or {e["pid"] for e in slices})
    steps = sorted({e["args"].get("step") for e in slices})
    height = 70 + len(pids) * BAND + 60
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'font-family="Helvetica, Arial, sans-serif">' % (WIDTH, height),
           '<rect width="100%" height="100%" fill="#fff"/>',
           '<text x="12" y="24" font-size="16" font-weight="bold">%s</text>' % escape(
               "libzero trace: %s, steps %s, %d ranks" % (src.split("/")[-1],
                                                          ", ".join(map(str, steps)), len(pids))),
           '<text x="12" y="44" font-size="12" fill="#555">one band per rank (pid); lanes: '
           'compute (tid 1), communication (tid 2); time in ms from the first slice</text>']
    # time axis
    axis_y = 60 + len(pids) * BAND
    span_ms = (t1 - t0) / 1000.0
    step = [s for s in (0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)
            if span_ms / s <= 12][0]
    t = 0.0
    while t <= span_ms + 1e-9:
        x = LEFT + t * 1000.0 * scale
        out.append('<line x1="%.1f" y1="56" x2="%.1f" y2="%d" stroke="#eee"/>' % (x, x, axis_y))
        out.append('<text x="%.1f" y="%d" font-size="11" text-anchor="middle" fill="#555">'
                   '%g ms</text>' % (x, axis_y + 14, t))
        t += step
    for i, pid in enumerate(pids):
        y = 60 + i * BAND
        out.append('<text x="10" y="%d" font-size="13" font-weight="bold">%s</text>'
                   % (y + 13, escape(names.get(pid, "pid %d" % pid))))
        for lane, tid in enumerate((1, 2)):
            ly = y + HEAD + lane * LANE_H
            out.append('<text x="24" y="%d" font-size="11" fill="#555">%s</text>'
                       % (ly + 17, escape(threads.get((pid, tid), str(tid)))))
            out.append('<rect x="%d" y="%d" width="%d" height="%d" fill="#fafafa" '
                       'stroke="#eee"/>' % (LEFT, ly + 2, WIDTH - LEFT - 20, LANE_H - 4))
            for e in (s for s in slices if s["pid"] == pid and s["tid"] == tid):
                x = LEFT + (e["ts"] - t0) * scale
                w = max(e["dur"] * scale, 0.8)
                color = COLORS.get(kind(e["name"]), "#999")
                out.append('<rect x="%.2f" y="%d" width="%.2f" height="%d" fill="%s" '
                           'stroke="#fff" stroke-width="0.3"><title>%s</title></rect>'
                           % (x, ly + 3, w, LANE_H - 6, color, escape(
                               "%s %s" % (e["name"], json.dumps(e["args"])))))
                label = e["name"]
                if w > 7 * len(label):
                    out.append('<text x="%.1f" y="%d" font-size="10" fill="#111">%s</text>'
                               % (x + 2, ly + LANE_H - 9, escape(label)))
                elif w > 7 * len(kind(label)):
                    out.append('<text x="%.1f" y="%d" font-size="10" fill="#111">%s</text>'
                               % (x + 2, ly + LANE_H - 9, escape(kind(label))))
    # key: what each colour is, written out
    x = LEFT
    for name, color in COLORS.items():
        out.append('<rect x="%d" y="%d" width="10" height="10" fill="%s"/>'
                   % (x, axis_y + 28, color))
        out.append('<text x="%d" y="%d" font-size="11">%s</text>' % (x + 13, axis_y + 37, name))
        x += 20 + 7 * len(name)
    out.append("</svg>")
    with open(dst, "w") as f:
        f.write("\n".join(out) + "\n")
    print("wrote %s: %d slices of %d ranks" % (dst, len(slices), len(pids)))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
