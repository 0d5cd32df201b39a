"""Hand-drawn SVG for the report (no matplotlib needed): the Chrome trace's timeline, memory over time."""
import math
from html import escape

_PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f",
            "#bab0ac")
_FIXED = {"user_annotation": "#9467bd", "kernel": "#2ca02c", "gpu_user_annotation": "#98df8a"}


def _color(name, cat, cache):
    if cat in _FIXED:
        return _FIXED[cat]
    if name.startswith("autograd::engine"):
        return "#d62728"
    if name.startswith("ProfilerStep") or name.startswith("Optimizer."):
        return "#9467bd"
    if name not in cache:
        cache[name] = _PALETTE[len(cache) % len(_PALETTE)]
    return cache[name]


def _nice_ticks(lo, hi, n=6):
    """About n round tick values between lo and hi."""
    span = hi - lo
    if span <= 0:
        return [lo]
    raw = span / n
    mag = 10.0 ** math.floor(math.log10(raw))
    step = mag
    for m in (1, 2, 5, 10):
        if mag * m >= raw:
            step = mag * m
            break
    first = (lo // step) * step
    if first < lo:
        first += step
    out = []
    v = first
    while v <= hi + 1e-12 and len(out) < 4 * n:
        out.append(v)
        v += step
    return out


def _fmt_us(v):
    if v >= 1e6:
        return f"{v / 1e6:.3g} s"
    if v >= 1e3:
        return f"{v / 1e3:.3g} ms"
    return f"{v:.3g} µs"


def _fmt_bytes(v):
    a = abs(v)
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if a >= scale:
            return f"{v / scale:.3g} {unit}"
    return f"{v:.0f} B"


def _lanes(events):
    """Spans (ph "X") grouped by (pid, tid) lane, each with its nesting depth."""
    lanes = {}
    for e in events:
        if e.get("ph") == "X" and "dur" in e:
            lanes.setdefault((str(e.get("pid")), str(e.get("tid"))), []).append(e)
    out = []
    for key, evs in lanes.items():
        evs.sort(key=lambda e: (e["ts"], -e["dur"]))
        open_ends = []
        placed = []
        for e in evs:
            end = e["ts"] + e["dur"]
            while open_ends and open_ends[-1] <= e["ts"]:
                open_ends.pop()
            placed.append((len(open_ends), e))
            open_ends.append(end)
        out.append((key, placed))
    # CPU threads first (numeric tids), then device streams
    out.sort(key=lambda kv: (not kv[0][1].isdigit(), kv[0]))
    return out


def timeline_svg(trace, width=1100, max_depth=6, max_rects=6000, lane_names=None):
    """The Chrome trace as a picture: one band per thread or device stream, spans stacked by depth,
    flow arrows (launch -> kernel) as thin lines. Spans narrower than a pixel are left out when the
    trace is big (the downloadable JSON has them all)."""
    events = trace.get("traceEvents", []) if isinstance(trace, dict) else trace
    lanes = _lanes(events)
    names = dict(lane_names or {})
    procs = {}
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            names.setdefault((str(e.get("pid")), str(e.get("tid"))), e.get("args", {}).get("name", ""))
        if e.get("ph") == "M" and e.get("name") == "process_name":
            procs.setdefault(str(e.get("pid")), e.get("args", {}).get("name", ""))
    spans = [e for _, placed in lanes for _, e in placed]
    if not spans:
        return ('<svg xmlns="http://www.w3.org/2000/svg" id="timeline" class="chart" width="400" height="40" '
                'viewBox="0 0 400 40"><text x="10" y="25" font-size="13">no spans in the trace</text></svg>')
    t0 = min(e["ts"] for e in spans)
    t1 = max(e["ts"] + e["dur"] for e in spans)
    left, right, top, row_h, gap = 170, 15, 28, 13, 10
    plot_w = width - left - right
    scale = plot_w / max(t1 - t0, 1e-9)
    parts = []
    y = top
    cache = {}
    lane_y = {}
    budget = max_rects
    for key, placed in lanes:
        depth = min(max((d for d, _ in placed), default=0) + 1, max_depth)
        h = depth * row_h
        lane_y[key] = y
        if key[1].startswith("stream"):  # a device's stream: "GPU 0, stream 7", "adev 0, stream 1"
            label = f"{procs.get(key[0]) or 'device ' + key[0]}, {key[1]}"
        elif key[1].isdigit():
            label = f"CPU thread …{key[1][-5:]}"
        else:
            label = names.get(key) or key[1]
        parts.append(f'<rect x="0" y="{y}" width="{width}" height="{h}" fill="#f7f7f7"/>')
        parts.append(f'<text x="4" y="{y + 11}" font-size="11" fill="#333">{escape(label[:26])}</text>')
        # widest first, so a small budget keeps what shows
        chosen = [(d, e) for d, e in placed if d < max_depth]
        if len(chosen) > budget:
            chosen.sort(key=lambda de: (de[0], -de[1]["dur"]))
            chosen = [de for de in chosen if de[1]["dur"] * scale >= 0.5][:budget]
        budget = max(budget - len(chosen), 200)
        for d, e in chosen:
            x = left + (e["ts"] - t0) * scale
            w = max(e["dur"] * scale, 0.6)
            name = str(e.get("name", ""))
            c = _color(name, e.get("cat", ""), cache)
            parts.append(f'<rect class="span" x="{x:.2f}" y="{y + d * row_h + 1}" width="{w:.2f}" '
                         f'height="{row_h - 2}" fill="{c}"><title>{escape(name)} '
                         f'({_fmt_us(e["dur"])})</title></rect>')
            if w > 7 * len(name) * 0.55 and w > 30:
                parts.append(f'<text x="{x + 2:.2f}" y="{y + d * row_h + row_h - 3}" font-size="9" fill="#fff" '
                             f'pointer-events="none">{escape(name[:int(w / 5.5)])}</text>')
        y += h + gap
    # flows: "s" on the launching thread, "f" on the kernel's stream
    starts = {}
    for e in events:
        if e.get("ph") == "s":
            starts[e.get("id")] = e
    nflow = 0
    for e in events:
        if e.get("ph") == "f" and e.get("id") in starts and nflow < 2000:
            s = starts[e["id"]]
            ks, kf = (str(s.get("pid")), str(s.get("tid"))), (str(e.get("pid")), str(e.get("tid")))
            if ks in lane_y and kf in lane_y:
                x1, x2 = left + (s["ts"] - t0) * scale, left + (e["ts"] - t0) * scale
                parts.append(f'<line class="flow" x1="{x1:.2f}" y1="{lane_y[ks] + row_h / 2}" x2="{x2:.2f}" '
                             f'y2="{lane_y[kf] + row_h / 2}" stroke="#555" stroke-width="0.7" '
                             f'marker-end="url(#flow-arrow)"/>')
                nflow += 1
    height = y + 22
    axis = [f'<line x1="{left}" y1="{top - 6}" x2="{width - right}" y2="{top - 6}" stroke="#999"/>']
    for v in _nice_ticks(0.0, t1 - t0):
        x = left + v * scale
        axis.append(f'<line x1="{x:.2f}" y1="{top - 9}" x2="{x:.2f}" y2="{height - 20}" stroke="#ddd" '
                    f'stroke-width="0.5"/>')
        axis.append(f'<text x="{x:.2f}" y="{top - 12}" font-size="10" text-anchor="middle" '
                    f'fill="#555">{_fmt_us(v)}</text>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" id="timeline" class="chart" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" font-family="sans-serif">'
            '<defs><marker id="flow-arrow" viewBox="0 0 6 6" refX="6" refY="3" markerWidth="5" markerHeight="5" '
            'orient="auto"><path d="M0,0 L6,3 L0,6 z" fill="#555"/></marker></defs>'
            + "".join(axis) + "".join(parts) + "</svg>")


def memory_points(trace):
    """(µs since the first span or memory event, bytes allocated) from the trace's [memory] events."""
    events = trace.get("traceEvents", []) if isinstance(trace, dict) else trace
    mem = sorted((e for e in events if e.get("name") == "[memory]"), key=lambda e: e["ts"])
    spans = [e["ts"] for e in events if e.get("ph") == "X"]
    t0 = min(spans + [e["ts"] for e in mem], default=0.0)
    return [(e["ts"] - t0, e.get("args", {}).get("Total Allocated", 0)) for e in mem]


def memory_svg(points, width=1100, height=260):
    """Bytes allocated over time as a step line (the profiler's [memory] events)."""
    if not points:
        return ('<svg xmlns="http://www.w3.org/2000/svg" id="memory-chart" class="chart" width="500" height="40" '
                'viewBox="0 0 500 40"><text x="10" y="25" font-size="13">no [memory] events '
                '(profile_memory was off, or nothing was allocated)</text></svg>')
    left, right, top, bottom = 80, 20, 15, 35
    pw, ph = width - left - right, height - top - bottom
    tmax = max(p[0] for p in points) or 1.0
    lo = min(0, min(p[1] for p in points))
    hi = max(p[1] for p in points) or 1
    sx = pw / tmax
    sy = ph / max(hi - lo, 1)

    def X(t):
        return left + t * sx

    def Y(v):
        return top + ph - (v - lo) * sy

    # one point per pixel column at most: keep each column's last value and its peak
    cols = {}
    for t, v in points:
        c = int(X(t))
        if c not in cols:
            cols[c] = [v, v, v]
        else:
            cols[c][1] = max(cols[c][1], v)
            cols[c][2] = v
    d = [f"M{left},{Y(0 if lo <= 0 else lo):.1f}"]
    for c in sorted(cols):
        first, peak, last = cols[c]
        d.append(f"H{c}V{Y(first):.1f}V{Y(peak):.1f}V{Y(last):.1f}")
    d.append(f"H{left + pw}")
    path = "".join(d)
    axis = [f'<line x1="{left}" y1="{top + ph}" x2="{left + pw}" y2="{top + ph}" stroke="#777"/>',
            f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + ph}" stroke="#777"/>']
    for v in _nice_ticks(lo, hi, 5):
        axis.append(f'<line x1="{left}" y1="{Y(v):.1f}" x2="{left + pw}" y2="{Y(v):.1f}" stroke="#eee"/>')
        axis.append(f'<text x="{left - 5}" y="{Y(v) + 4:.1f}" font-size="10" text-anchor="end" '
                    f'fill="#555">{_fmt_bytes(v)}</text>')
    for v in _nice_ticks(0.0, tmax):
        axis.append(f'<text x="{X(v):.1f}" y="{top + ph + 15}" font-size="10" text-anchor="middle" '
                    f'fill="#555">{_fmt_us(v)}</text>')
    peak = max(points, key=lambda p: p[1])
    axis.append(f'<text x="{left + pw}" y="{top + ph + 30}" font-size="11" text-anchor="end" fill="#333">'
                f'{len(points)} [memory] events, peak {_fmt_bytes(peak[1])} at {_fmt_us(peak[0])}</text>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" id="memory-chart" class="chart" width="{width}" '
            f'height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif">' + "".join(axis)
            + f'<path class="mem-line" d="{path}" fill="none" stroke="#e15759" stroke-width="1.4"/></svg>')
